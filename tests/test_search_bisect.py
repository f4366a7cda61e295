"""bisect = SRPerf's Algorithm 1; multi = the same idea for several thresholds at once."""

from __future__ import annotations

import dataclasses

import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.search.bisect import SHORT_SHARE, BisectSearch


def algorithm1(low: float, up: float, eps: float, passes) -> tuple[list[float], float, float]:
    """The paper's pseudo code, written out independently."""
    rates = []
    while abs(up - low) > eps:
        tx = (low + up) / 2
        rates.append(tx)
        if passes(tx):
            low = tx
        else:
            up = tx
    return rates, low, up


def test_srperf_settings() -> None:
    s = BisectSearch.srperf_settings()
    assert (s.trial_duration_s, s.accuracy_pps, s.min_rate_pps, s.repeat_near_threshold) == \
        (10.0, 500.0, 100_000.0, 1)
    assert s.thresholds_pct == (0.5,) and s.warmup_duration_s == 0.0
    scaled = BisectSearch.srperf_settings(0.1, thresholds_pct=(0.0,), max_rate_pps=2e6)
    assert scaled.trial_duration_s == pytest.approx(1.0) and scaled.max_rate_pps == 2e6
    assert scaled.thresholds_pct == (0.0,)
    with pytest.raises(ValueError, match="duration_scale"):
        BisectSearch.srperf_settings(0.0)


def test_one_trial_per_rate_is_exactly_algorithm_1() -> None:
    capacity = 987_654.0
    gen = SimulatedGenerator(SimulatedModel(capacity))
    settings = BisectSearch.srperf_settings(0.1, max_rate_pps=1_500_000.0)
    result = create("bisect", settings).run(gen.trial)
    expected, low, up = algorithm1(100_000.0, 1_500_000.0, 500.0,
                                   lambda r: 1 - capacity / r <= 0.005)
    assert [t.rate_pps for t in result.trials] == pytest.approx(expected)
    assert all(t.duration_s == pytest.approx(1.0) for t in result.trials)
    g = result.goals[0]
    assert (g.lower_bound_pps, g.upper_bound_pps) == pytest.approx((low, up))
    assert g.status == "ok" and up - low <= 500.0
    assert low <= gen.true_pdr(0.5) <= up


def test_repeats_near_threshold_use_the_majority() -> None:
    """A SUT whose loss hovers near the threshold: every other trial at a rate fails."""
    counts: dict[float, int] = {}

    def measure(rate: float, duration: float) -> TrialResult:
        n = counts[rate] = counts.get(rate, 0) + 1
        intended = round(rate * duration)
        if rate <= 700_000:
            lost = 0
        elif rate <= 900_000:
            lost = round(intended * (0.006 if n == 1 else 0.004))  # near: bad once, then good
        else:
            lost = round(intended * 0.2)
        return TrialResult(rate, duration, intended, intended, 0, intended - lost, duration)

    settings = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=100_000,
                              max_rate_pps=1_500_000, accuracy_pps=5_000)
    one = create("bisect", dataclasses.replace(settings, repeat_near_threshold=1)).run(measure)
    counts.clear()
    three = create("bisect", settings).run(measure)
    assert one.goals[0].upper_bound_pps <= 700_000 + 5_000  # the first bad trial misled it
    assert 900_000 - 5_000 <= three.goals[0].lower_bound_pps <= 900_000
    near = {t.rate_pps for t in three.trials if 700_000 < t.rate_pps <= 900_000}
    assert all(counts[r] == 3 for r in near) and near  # bad, good, good -> good


def test_several_thresholds_run_one_bisection_each() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    settings = SearchSettings(thresholds_pct=(0.5, 0.0), min_rate_pps=100_000,
                              max_rate_pps=1_500_000, accuracy_pps=5_000)
    both = create("bisect", settings).run(gen.trial)
    single = create("bisect", dataclasses.replace(settings, thresholds_pct=(0.5,))).run(
        SimulatedGenerator(SimulatedModel(1_000_000)).trial)
    assert [g.threshold_pct for g in both.goals] == [0.5, 0.0]
    assert both.n_trials > single.n_trials
    multi = create("multi", settings).run(SimulatedGenerator(SimulatedModel(1_000_000)).trial)
    assert multi.n_trials < both.n_trials  # shared trials
    for g_b, g_m in zip(both.goals, multi.goals):
        assert g_b.threshold_pct == g_m.threshold_pct
        true = gen.true_pdr(g_b.threshold_pct)
        for g in (g_b, g_m):
            assert g.lower_bound_pps <= true <= g.upper_bound_pps


# -- bisect_start = "mrr": the bracket placed by one short probe at max -------------------

QUICK = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=75_000, max_rate_pps=1_500_000,
                       accuracy_pps=15_000, trial_duration_s=1.0, initial_trial_duration_s=0.5)
"""experiments/quick.yaml's search on the virtual testbed's 1.5 Mpps line rate."""


def informed(settings: SearchSettings = QUICK) -> SearchSettings:
    return dataclasses.replace(settings, bisect_start="mrr")


def assert_bracketed(result, true: float) -> None:
    """The goal is found, holds the model's exact PDR and is at most QUICK's accuracy wide."""
    g = result.goals[0]
    assert g.status == "ok"
    assert g.lower_bound_pps <= true <= g.upper_bound_pps
    assert g.upper_bound_pps - g.lower_bound_pps <= QUICK.accuracy_pps


def plain_and(settings: SearchSettings, capacity: float):
    """Algorithm 1 (QUICK) and ``settings`` on the same model SUT, both checked with
    :func:`assert_bracketed`: (plain result, result with ``settings``)."""
    plain = create("bisect", QUICK).run(SimulatedGenerator(SimulatedModel(capacity)).trial)
    gen = SimulatedGenerator(SimulatedModel(capacity))
    fast = create("bisect", settings).run(gen.trial)
    for result in (plain, fast):
        assert_bracketed(result, gen.true_pdr(0.5))
    return plain, fast


@pytest.mark.parametrize("capacity", [90_000.0, 333_000.0, 640_000.0, 1_234_567.0])
def test_informed_start_finds_the_same_answer_with_fewer_trials(capacity: float) -> None:
    plain, fast = plain_and(informed(), capacity)
    probe, *decisions = fast.trials
    assert probe.extra.get("probe") is True and probe.rate_pps == QUICK.max_rate_pps
    assert probe.duration_s == QUICK.initial_trial_duration_s
    assert all(t.duration_s == QUICK.trial_duration_s and "probe" not in t.extra
               for t in decisions)
    assert fast.trial_seconds < plain.trial_seconds


def test_informed_start_falls_back_to_algorithm_1_when_the_probe_misleads() -> None:
    """A soft knee: the probe's delivered rate overstates the PDR, the first trial below
    the knee fails, and Algorithm 1 bisects [min, that rate]: at most the probe and one
    trial more than Algorithm 1 alone."""
    model = SimulatedModel(600_000, smoothing=0.3)
    gen = SimulatedGenerator(model)
    result = create("bisect", informed()).run(gen.trial)
    plain = create("bisect", QUICK).run(SimulatedGenerator(model).trial)
    probe, first, second = result.trials[:3]
    knee = probe.received / probe.elapsed_s / 0.995
    assert first.rate_pps == pytest.approx(knee - max(QUICK.accuracy_pps, 0.02 * knee))
    assert first.loss_ratio > 0.005
    assert second.rate_pps == pytest.approx(0.5 * (QUICK.min_rate_pps + first.rate_pps))
    assert_bracketed(result, gen.true_pdr(0.5))
    assert result.trial_seconds <= plain.trial_seconds + probe.duration_s + 1.0 + 1e-9


def test_informed_start_edges_are_statuses_measured_once() -> None:
    at_max = create("bisect", informed()).run(SimulatedGenerator(SimulatedModel(3e6)).trial)
    assert at_max.goals[0].status == "at_max"
    assert [t.rate_pps for t in at_max.trials] == [1_500_000, 1_500_000]  # probe, then proof
    below = create("bisect", informed()).run(SimulatedGenerator(SimulatedModel(50_000)).trial)
    assert below.goals[0].status == "below_min"
    assert below.trials[-1].rate_pps == QUICK.min_rate_pps
    assert [t.rate_pps for t in below.trials].count(QUICK.min_rate_pps) == 1


def test_informed_start_reports_a_generator_limit_as_such() -> None:
    """The generator paces at most 800 kpps, the SUT forwards 1 Mpps: no SUT figure."""
    model = SimulatedModel(1_000_000, generator_max_rate_pps=800_000)
    for settings in (QUICK, informed()):
        g = create("bisect", settings).run(SimulatedGenerator(model).trial).goals[0]
        assert g.status == "generator_limited" and g.value_pps is None
        assert g.lower_bound_pps is not None and g.lower_bound_pps <= 800_000


# -- bisect_start = "short": short trials bisect first, full trials finish ----------------

def short(settings: SearchSettings = QUICK) -> SearchSettings:
    return dataclasses.replace(settings, bisect_start="short")


def assert_full_trials_decide(result, settings: SearchSettings = QUICK) -> None:
    """Short trials are probes (0.2 x the duration); every other trial is a full one."""
    for t in result.trials:
        if t.extra.get("probe"):
            assert t.duration_s == pytest.approx(SHORT_SHARE * settings.trial_duration_s)
        else:
            assert t.duration_s == settings.trial_duration_s


@pytest.mark.parametrize("capacity", [90_000.0, 333_000.0, 640_000.0, 1_234_567.0])
def test_short_start_finds_the_same_answer_with_fewer_trial_seconds(capacity: float) -> None:
    plain, fast = plain_and(short(), capacity)
    g = fast.goals[0]
    full = {t.rate_pps: t for t in fast.trials if not t.extra.get("probe")}
    # both bounds are full-duration trials: a pass at the lower, a failure at the upper
    assert full[g.lower_bound_pps].loss_ratio <= 0.005 < full[g.upper_bound_pps].loss_ratio
    assert_full_trials_decide(fast)
    short_trials = [t for t in fast.trials if t.extra.get("probe")]
    assert short_trials and fast.trials[:len(short_trials)] == short_trials  # phase 1 first
    assert fast.trial_seconds < 0.8 * plain.trial_seconds


def overstating(gen: SimulatedGenerator, factor: float):
    """A measure whose short trials see a SUT ``factor`` x faster (queues that hide a
    short trial's excess) while full trials see the real one."""
    fast = SimulatedGenerator(SimulatedModel(gen.model.capacity_pps * factor))

    def measure(rate: float, duration: float) -> TrialResult:
        return (fast if duration < QUICK.trial_duration_s else gen).trial(rate, duration)
    return measure


@pytest.mark.parametrize("factor", [1.1, 0.85])
def test_short_start_gallops_back_when_short_trials_mislead(factor: float) -> None:
    """Short trials 10 % too optimistic (or 15 % too pessimistic): the first full trials
    fail (pass) and the full phase walks the other way with a doubling step; the answer
    keeps Algorithm 1's meaning and accuracy."""
    gen = SimulatedGenerator(SimulatedModel(640_000.0))
    result = create("bisect", short()).run(overstating(gen, factor))
    assert_bracketed(result, gen.true_pdr(0.5))
    first_full = next(t for t in result.trials if not t.extra.get("probe"))
    assert (first_full.loss_ratio > 0.005) == (factor > 1)
    assert_full_trials_decide(result)
    # it walked from the short bracket, not back to Algorithm 1 over [min, max]
    true = gen.true_pdr(0.5)
    assert all(abs(t.rate_pps / true - 1) < 0.2 for t in result.trials if not t.extra.get("probe"))
    plain = create("bisect", QUICK).run(SimulatedGenerator(SimulatedModel(640_000.0)).trial)
    assert result.trial_seconds <= plain.trial_seconds + 1e-9


def test_short_start_edges_are_statuses() -> None:
    at_max = create("bisect", short()).run(SimulatedGenerator(SimulatedModel(3e6)).trial)
    assert at_max.goals[0].status == "at_max"
    assert at_max.trials[-1].rate_pps == QUICK.max_rate_pps
    assert not at_max.trials[-1].extra.get("probe")
    below = create("bisect", short()).run(SimulatedGenerator(SimulatedModel(50_000)).trial)
    assert below.goals[0].status == "below_min"
    assert below.trials[-1].rate_pps == QUICK.min_rate_pps
    assert not below.trials[-1].extra.get("probe")
    model = SimulatedModel(1_000_000, generator_max_rate_pps=800_000)
    g = create("bisect", short()).run(SimulatedGenerator(model).trial).goals[0]
    assert g.status == "generator_limited" and g.value_pps is None
    assert g.lower_bound_pps is not None and g.lower_bound_pps <= 800_000
