"""lossfit: the loss-ratio model (srperf/search/lossmodel.py) and the search placing
trials by it (srperf/search/lossfit.py), on the MODEL SUT and on scripted SUTs."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.search.common import exceeds
from srperf.search.lossmodel import (AT_LEAST, AT_MOST, EXACT, fit_crossing, implied_crossing,
                                     lr_cut)
from srperf.search.mlr import LOWER, LoadRecord, build_phases

SETTINGS = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=100_000, max_rate_pps=1_500_000,
                          relative_width=0.005)


def trial(rate: float, lost_share: float, duration: float = 1.0, received: int | None = None
          ) -> TrialResult:
    intended = round(rate * duration)
    lost = math.ceil(intended * lost_share - 1e-9)
    got = intended - lost if received is None else received
    return TrialResult(rate, duration, intended, intended, 0, got, duration)


def knee_trials(capacity: float, jitter: float, rates: list[float], seed: int
                ) -> list[TrialResult]:
    gen = SimulatedGenerator(SimulatedModel(capacity, capacity_jitter=jitter), seed=seed)
    return [gen.trial(r, 1.0) for r in rates]


# -- what one trial says -------------------------------------------------------------------

def test_a_bad_trial_reads_its_crossing_exactly() -> None:
    # 1.2 Mpps offered, 1 Mpps forwarded: loses 1/6; crosses 0.5 % at 1 M / 0.995
    y, kind = implied_crossing(trial(1_200_000, 1 / 6), 0.5)
    assert kind == EXACT and y == pytest.approx(1_000_000 / 0.995, rel=1e-6)
    y, kind = implied_crossing(trial(1_200_000, 1 / 6), 0.0)
    assert kind == EXACT and y == pytest.approx(1_000_000, rel=1e-6)


def test_a_good_trial_bounds_its_crossing_from_below_unless_it_lost_near_the_threshold(
        ) -> None:
    y, kind = implied_crossing(trial(900_000, 0.0), 0.5)
    assert kind == AT_LEAST and y == pytest.approx(900_000 / 0.995)
    y, kind = implied_crossing(trial(900_000, 0.00001), 0.5)  # scheduling noise: a bound only
    assert kind == AT_LEAST
    y, kind = implied_crossing(trial(1_003_000, 0.003), 0.5)  # 0.3 % of 0.5 %: above capacity
    assert kind == EXACT and y == pytest.approx(1_003_000 * 0.997 / 0.995)
    _, kind = implied_crossing(trial(900_000, 0.0), 0.0)
    assert kind == AT_LEAST


def test_a_trial_that_received_nothing_only_says_below() -> None:
    y, kind = implied_crossing(trial(500_000, 1.0, received=0), 0.5)
    assert kind == AT_MOST and y == 500_000


# -- the fit -------------------------------------------------------------------------------

def test_noiseless_knee_is_recovered_with_a_narrow_interval_that_holds_it() -> None:
    trials = knee_trials(1_000_000, 0.0, [1_500_000, 1_020_000, 1_010_000, 990_000, 1_003_000],
                         seed=0)
    fit = fit_crossing(trials, 0.5)
    true = 1_000_000 / 0.995
    assert fit is not None and fit.n_exact == 4 and fit.n_readings == 5
    assert fit.crossing_pps == pytest.approx(true, rel=1e-5)
    assert fit.ci_low_pps <= true <= fit.ci_high_pps
    assert fit.log_width() < 0.003


def test_noisy_knee_interval_covers_the_true_value() -> None:
    """2 % capacity noise, 20 trials around the answer: the 95 % interval holds the model's
    value in at least 90 % of 100 seeds, and the estimate is better than pass/fail allows."""
    true = 1_000_000 / 0.995
    covered, errors = 0, []
    for seed in range(100):
        rng = random.Random(seed)
        rates = [1_000_000 * rng.uniform(0.98, 1.05) for _ in range(20)]
        fit = fit_crossing(knee_trials(1_000_000, 0.02, rates, seed), 0.5)
        assert fit is not None
        covered += (fit.ci_low_pps or 0.0) <= true <= (fit.ci_high_pps or math.inf)
        errors.append(abs(fit.crossing_pps / true - 1))
    assert covered >= 90
    assert statistics.mean(errors) < 0.02 / math.sqrt(20) * 1.3


def test_no_fit_without_an_exact_reading() -> None:
    assert fit_crossing([trial(900_000, 0.0), trial(950_000, 0.0)], 0.5) is None
    assert fit_crossing([trial(900_000, 1.0, received=0)] * 3, 0.5) is None
    assert fit_crossing([], 0.5) is None
    unusable = [trial(1_200_000, 0.2)]
    unusable[0] = TrialResult(**{**unusable[0].__dict__, "generator_limited": True})
    assert fit_crossing(unusable, 0.5) is None
    with pytest.raises(ValueError, match="exceed_ratio"):
        fit_crossing([trial(1_200_000, 0.2)], 0.5, exceed_ratio=1.0)


def test_likelihood_cut_is_wider_with_few_readings() -> None:
    cuts = [lr_cut(n) for n in (2, 3, 5, 10, 30, 1000)]
    assert cuts == sorted(cuts, reverse=True)
    assert cuts[-1] == pytest.approx(1.92, abs=0.01)
    assert cuts[0] > 3.0


def test_exceed_ratio_moves_the_crossing_to_that_quantile() -> None:
    rng = random.Random(3)
    rates = [1_000_000 * rng.uniform(0.95, 1.1) for _ in range(60)]
    trials = knee_trials(1_000_000, 0.02, rates, 3)
    median = fit_crossing(trials, 0.5, 0.5)
    strict = fit_crossing(trials, 0.5, 0.1)
    assert median is not None and strict is not None
    assert strict.crossing_pps < median.crossing_pps * 0.99


# -- placement -----------------------------------------------------------------------------

def test_noiseless_search_is_one_trial_at_max_two_probes_and_one_candidate() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000), seed=0)
    result = create("lossfit", SETTINGS).run(gen.trial)
    rates = [round(t.rate_pps) for t in result.trials]
    durations = [t.duration_s for t in result.trials]
    assert durations == [0.5, 0.5, 0.5] + [1.0] * 5
    assert rates[0] == 1_500_000
    true = gen.true_pdr(0.5)
    assert all(r > true for r in rates[1:3])  # probes above the crossing: exact readings
    g = result.goals[0]
    assert set(rates[3:]) == {round(g.lower_bound_pps)}
    assert 0 < (true - g.lower_bound_pps) / true < 0.005
    assert g.estimate_pps == pytest.approx(true, rel=1e-5)
    assert g.lower_bound_pps < g.estimate_low_pps <= true <= g.estimate_high_pps
    assert g.upper_bound_pps == g.estimate_high_pps
    assert result.trial_seconds == 6.5


@pytest.mark.parametrize("noise", [0.01, 0.02])
def test_probes_are_short_and_mostly_lose(noise: float) -> None:
    """Probes go above the crossing, where a trial that loses gives an exact reading;
    final-duration trials are spent only on candidates near the answer."""
    lost, probes, far = 0, 0, 0
    for seed in range(10):
        gen = SimulatedGenerator(SimulatedModel(1_000_000, capacity_jitter=noise), seed=seed)
        result = create("lossfit", SETTINGS).run(gen.trial)
        true = gen.true_pdr(0.5)
        for t in result.trials[1:]:
            if t.duration_s < 1.0:
                probes += 1
                lost += exceeds(t, 0.5)
            else:
                far += abs(t.rate_pps / true - 1) > 3 * noise
    assert probes > 0 and lost >= 0.6 * probes
    assert far == 0


def test_reported_lower_bound_passed_by_the_mlr_rule_and_conditional_throughput() -> None:
    settings = SearchSettings(thresholds_pct=(0.0, 0.5), min_rate_pps=100_000,
                              max_rate_pps=1_500_000, relative_width=0.005)
    final = build_phases(settings)[-1]
    for seed in range(10):
        gen = SimulatedGenerator(SimulatedModel(1_000_000, capacity_jitter=0.02), seed=seed)
        result = create("lossfit", settings).run(gen.trial)
        for g in result.goals:
            assert g.status == "ok", g
            rec = LoadRecord(g.lower_bound_pps)
            for t in result.trials:
                if t.rate_pps == g.lower_bound_pps:
                    rec.add(t)
            assert rec.classify(g.threshold_pct, final, settings.exceed_ratio) == LOWER
            q = rec.quantile_loss(g.threshold_pct, final, settings.exceed_ratio)
            assert g.conditional_throughput_pps == pytest.approx(g.lower_bound_pps * (1 - q))
            assert g.estimate_pps is not None and g.upper_bound_pps <= g.estimate_high_pps
            assert "loss fit" in g.note


def test_costs_less_than_mlrsearch_on_the_model() -> None:
    """Same goals, settings and seeds (model SUT, trial-seconds, not time): lossfit spends
    less than MLRsearch at 0, 1 and 2 % noise and stays within 0.6 % of the true value."""
    for noise in (0.0, 0.01, 0.02):
        mine, theirs, errors = [], [], []
        for seed in range(15):
            for alg, out in (("lossfit", mine), ("mlrsearch", theirs)):
                gen = SimulatedGenerator(SimulatedModel(1_000_000, capacity_jitter=noise),
                                         seed=seed)
                result = create(alg, SETTINGS).run(gen.trial)
                out.append(result.trial_seconds)
                if alg == "lossfit":
                    errors.append(abs(result.goals[0].value_pps / gen.true_pdr(0.5) - 1))
        assert statistics.mean(mine) < 0.85 * statistics.mean(theirs), noise
        assert statistics.mean(errors) < 0.006, noise


def test_a_candidate_that_fails_makes_the_search_go_below_it() -> None:
    """A SUT that passes its first final trials at a load, then loses there (and only
    there): the failed load becomes an upper bound and the answer is found below it."""
    seen: dict[float, int] = {}

    def measure(rate: float, duration: float) -> TrialResult:
        n = seen[rate] = seen.get(rate, 0) + (duration >= 1.0)
        intended = round(rate * duration)
        capacity = 900_000 if (n >= 3 and 985_000 <= rate <= 1_010_000) else 1_000_000
        lost = max(0, math.ceil(intended * (1 - capacity / rate) - 1e-9))
        return TrialResult(rate, duration, intended, intended, 0, intended - lost, duration)

    result = create("lossfit", SETTINGS).run(measure)
    g = result.goals[0]
    assert g.status == "ok"
    assert g.lower_bound_pps < 985_000
    failed = {t.rate_pps for t in result.trials if t.duration_s >= 1.0 and exceeds(t, 0.5)}
    assert failed and min(failed) > g.lower_bound_pps


def test_every_trial_losing_everything_is_below_min() -> None:
    def measure(rate: float, duration: float) -> TrialResult:
        intended = round(rate * duration)
        return TrialResult(rate, duration, intended, intended, 0, 0, duration)

    result = create("lossfit", SETTINGS).run(measure)
    g = result.goals[0]
    assert g.status == "below_min" and g.value_pps is None
    assert any(t.rate_pps == SETTINGS.min_rate_pps for t in result.trials)


@pytest.mark.parametrize("smoothing", [0.01, 0.03])
def test_a_soft_knee_is_still_bracketed(smoothing: float) -> None:
    """A rounded knee is not the threshold model: readings far above the knee put the NDR
    too high, candidates there fail, and the search steps down (doubling) to the answer."""
    settings = SearchSettings(thresholds_pct=(0.0, 0.5), min_rate_pps=100_000,
                              max_rate_pps=1_500_000, relative_width=0.005)
    for seed in range(3):
        gen = SimulatedGenerator(SimulatedModel(1_000_000, smoothing=smoothing), seed=seed)
        result = create("lossfit", settings).run(gen.trial)
        for g in result.goals:
            true = gen.true_pdr(g.threshold_pct)
            assert g.status == "ok", g
            assert g.lower_bound_pps <= true * (1 + 1e-6) <= g.upper_bound_pps * (1 + 1e-6)
            assert (g.upper_bound_pps - g.lower_bound_pps) / g.upper_bound_pps <= 0.005 + 1e-9


@pytest.mark.parametrize("algorithm", ["lossfit", "mlr"])
def test_one_generator_stall_early_does_not_end_the_search_generator_limited(
        algorithm: str) -> None:
    """On a busy host the generator can stall in any trial.  The first two trials here
    stall (offered 60 % of the rate: taken for beyond the generator, as nothing faster
    was paced yet); the search must try that load again before calling it the generator's
    limit, and find the SUT's PDR.  ``mlr`` and ``lossfit`` treat it the same
    (srperf.search.mlr.ForcedLimits), so bench/search_b2.py compares like with like."""
    gen = SimulatedGenerator(SimulatedModel(1_000_000), seed=0)
    calls = {"n": 0}

    def measure(rate: float, duration: float) -> TrialResult:
        calls["n"] += 1
        real = gen.trial(rate, duration)
        if calls["n"] <= 2:
            return TrialResult(rate, duration, real.intended, real.intended, 0, real.intended,
                               duration / 0.6, generator_limited=True, note="stalled")
        return real

    result = create(algorithm, SETTINGS).run(measure)
    g = result.goals[0]
    assert result.generator_limited_trials == 2
    assert g.status == "ok", g
    assert g.lower_bound_pps <= gen.true_pdr(0.5) <= g.upper_bound_pps
