"""The crossing-rate estimate fitted to all trials of a search (srperf/search/estimate.py)."""

from __future__ import annotations

import math
import random

import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.search.estimate import MIN_TRIALS, crossing_estimate


def trial(rate: float, bad: bool, duration: float = 1.0, usable: bool = True) -> TrialResult:
    """A trial that lost 2 % (bad for 0.5 %) or 0.1 % (good) of its packets."""
    intended = round(rate * duration)
    lost = round(intended * (0.02 if bad else 0.001))
    return TrialResult(rate_pps=rate, duration_s=duration, intended=intended, sent=intended,
                       refused=0, received=intended - lost, elapsed_s=duration,
                       generator_limited=not usable)


def logistic_trials(crossing: float, spread: float, n: int, seed: int) -> list[TrialResult]:
    """Trials at rates around ``crossing``, bad with probability logistic in ln(rate)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rate = crossing * math.exp(rng.uniform(-0.2, 0.2))
        p_bad = 1.0 / (1.0 + math.exp(-math.log(rate / crossing) / spread))
        out.append(trial(rate, rng.random() < p_bad))
    return out


def test_noisy_trials_recover_the_crossing_with_an_interval_around_it() -> None:
    est = crossing_estimate(logistic_trials(500_000.0, 0.03, 400, seed=1), 0.5)
    assert est is not None
    assert est.rate_pps == pytest.approx(500_000.0, rel=0.02)
    assert est.ci_low_pps is not None and est.ci_high_pps is not None
    assert est.ci_low_pps < est.rate_pps < est.ci_high_pps
    assert est.ci_low_pps < 500_000.0 < est.ci_high_pps
    assert est.ci_high_pps / est.ci_low_pps < 1.05
    assert est.n_trials == 400 and est.slope > 0
    # fewer trials, wider interval
    few = crossing_estimate(logistic_trials(500_000.0, 0.03, 40, seed=1), 0.5)
    assert few is not None and few.ci_low_pps is not None and few.ci_high_pps is not None
    assert few.ci_high_pps / few.ci_low_pps > est.ci_high_pps / est.ci_low_pps


def test_the_exceed_ratio_moves_the_crossing() -> None:
    trials = logistic_trials(500_000.0, 0.05, 600, seed=2)
    low = crossing_estimate(trials, 0.5, exceed_ratio=0.2)
    mid = crossing_estimate(trials, 0.5, exceed_ratio=0.5)
    assert low is not None and mid is not None
    # P(bad) = 0.2 at ln(r / c) = 0.05 * logit(0.2)
    assert low.rate_pps == pytest.approx(500_000.0 * math.exp(0.05 * math.log(0.25)), rel=0.02)
    assert low.rate_pps < mid.rate_pps


def test_separated_trials_put_the_crossing_and_interval_in_the_gap() -> None:
    rates = [400_000, 500_000, 590_000, 610_000, 700_000, 800_000]
    trials = [trial(r, r > 600_000) for r in rates for _ in range(3)]
    est = crossing_estimate(trials, 0.5)
    assert est is not None and 590_000 < est.rate_pps < 610_000
    assert est.ci_low_pps is not None and est.ci_high_pps is not None
    # the likelihood cannot tell apart crossings inside the gap: the interval covers it
    assert est.ci_low_pps <= 590_000 * 1.002 and est.ci_high_pps >= 610_000 / 1.002
    assert est.ci_low_pps > 500_000 and est.ci_high_pps < 700_000


def test_an_interval_end_the_trials_do_not_bound_is_open() -> None:
    """Good and bad trials mixed across the range say little: both ends are open."""
    trials = [trial(r, bad) for r, bad in ((400_000, False), (500_000, False), (600_000, True),
                                           (700_000, True), (450_000, True), (650_000, False))]
    est = crossing_estimate(trials, 0.5)
    assert est is not None and 400_000 < est.rate_pps < 700_000
    assert est.ci_low_pps is None and est.ci_high_pps is None
    # four clean trials bound it, widely
    clean = crossing_estimate(trials[:4], 0.5)
    assert clean is not None and clean.ci_low_pps is not None and clean.ci_high_pps is not None
    assert clean.ci_low_pps < 500_000 and clean.ci_high_pps > 600_000


def test_short_trials_weigh_less() -> None:
    long_good = ([trial(450_000, False)] * 3 + [trial(550_000, False)] * 3
                 + [trial(650_000, True)] * 3)
    short_bad = [trial(550_000, True, duration=0.1) for _ in range(3)]
    with_short = crossing_estimate(long_good + short_bad, 0.5)
    as_long = crossing_estimate(long_good + [trial(550_000, True)] * 3, 0.5)
    assert with_short is not None and as_long is not None
    assert with_short.rate_pps > as_long.rate_pps


@pytest.mark.parametrize("trials, why", [
    ([trial(r, False) for r in (1e5, 2e5, 3e5, 4e5, 5e5)], "no bad trial"),
    ([trial(r, True) for r in (1e5, 2e5, 3e5, 4e5, 5e5)], "no good trial"),
    ([trial(1e5, False), trial(2e5, True)] * ((MIN_TRIALS - 1) // 2), "too few trials"),
    ([trial(r, r < 3e5) for r in (1e5, 2e5, 3e5, 4e5, 5e5)], "loss falls with rate"),
    ([trial(r, r > 3e5, usable=r != 2e5) for r in (1e5, 2e5, 4e5, 5e5)], "unusable excluded"),
])
def test_no_estimate_when_the_trials_cannot_support_one(trials: list[TrialResult],
                                                        why: str) -> None:
    assert crossing_estimate(trials, 0.5) is None, why


def test_exceed_ratio_must_be_a_share() -> None:
    with pytest.raises(ValueError, match="exceed_ratio 1.0"):
        crossing_estimate([], 0.5, exceed_ratio=1.0)


@pytest.mark.parametrize("jitter", [0.0, 0.01])
def test_mlr_trials_on_the_model_give_an_estimate_near_the_true_pdr(jitter: float) -> None:
    """On the model SUT the median capacity is the nominal one, so the crossing
    where half the trial time is bad is the noiseless PDR; using every trial, the
    estimate is closer to it than the lower bound is."""
    est_errors, bound_errors = [], []
    for seed in range(30):
        gen = SimulatedGenerator(SimulatedModel(1_000_000.0, capacity_jitter=jitter), seed=seed)
        settings = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=1e5, max_rate_pps=1.5e6,
                                  relative_width=0.005)
        goal = create("mlr", settings).run(gen.trial).goals[0]
        assert goal.estimate_pps is not None and goal.lower_bound_pps is not None
        true = gen.true_pdr(0.5)
        est_errors.append(abs(goal.estimate_pps / true - 1.0))
        bound_errors.append(abs(goal.lower_bound_pps / true - 1.0))
        if jitter == 0.0:  # a hard knee: the estimate lies between the bounds
            assert goal.lower_bound_pps <= goal.estimate_pps <= goal.upper_bound_pps
    median = sorted(est_errors)[len(est_errors) // 2]
    assert median < 0.005 and median < sorted(bound_errors)[len(bound_errors) // 2]
    assert max(est_errors) < 0.005 + 2 * jitter
