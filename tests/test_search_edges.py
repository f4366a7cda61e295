"""Edge cases give a clear GoalResult status; unusable trials never decide."""

from __future__ import annotations

import dataclasses

import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.util.wording import count

SEARCHES = ["bisect", "multi", "mlr", "mlrsearch", "lossfit"]
SETTINGS = SearchSettings(thresholds_pct=(0.0, 0.5), min_rate_pps=100_000.0,
                          max_rate_pps=1_500_000.0, accuracy_pps=10_000.0, relative_width=0.01)


def model(**kw: float) -> SimulatedGenerator:
    kw.setdefault("capacity_pps", 1_000_000.0)
    return SimulatedGenerator(SimulatedModel(**kw), seed=1)


@pytest.mark.parametrize("alg", SEARCHES)
def test_loss_even_at_min_is_below_min(alg: str) -> None:
    result = create(alg, SETTINGS).run(model(capacity_pps=50_000.0).trial)
    for g in result.goals:
        assert g.status == "below_min"
        assert g.lower_bound_pps is None and g.upper_bound_pps == 100_000.0
        assert g.value_pps is None and "minimum rate" in g.note


@pytest.mark.parametrize("alg", SEARCHES)
def test_no_loss_at_max_is_at_max(alg: str) -> None:
    result = create(alg, SETTINGS).run(model(capacity_pps=2_000_000.0).trial)
    for g in result.goals:
        assert g.status == "at_max"
        assert g.lower_bound_pps == 1_500_000.0 and g.upper_bound_pps is None
        assert g.value_pps == 1_500_000.0  # flagged: the configured max, not the SUT's limit
        assert "not the SUT's limit" in g.note


@pytest.mark.parametrize("alg", SEARCHES)
def test_generator_slower_than_the_sut_is_reported_not_measured(alg: str) -> None:
    gen = model(generator_max_rate_pps=800_000.0)
    result = create(alg, SETTINGS).run(gen.trial)
    assert result.unusable_trials > 0 and result.generator_limited_trials > 0
    assert "excluded from decisions" in result.note
    for g in result.goals:
        assert g.status == "generator_limited", g
        assert g.value_pps is None and g.conditional_throughput_pps is None
        assert "generator could not offer" in g.note
        assert g.upper_bound_pps is not None and g.upper_bound_pps > 800_000.0
        assert g.lower_bound_pps is not None and g.lower_bound_pps <= 800_000.0
        assert g.upper_bound_pps <= 800_000.0 * 1.02  # found the generator's limit


@pytest.mark.parametrize("alg", SEARCHES)
def test_random_generator_stalls_are_excluded_and_counted(alg: str) -> None:
    """A stalled trial shows less loss than the SUT really has; using it would overestimate."""
    gen = model(generator_limited_probability=0.15)
    result = create(alg, SETTINGS).run(gen.trial)
    assert result.unusable_trials == result.generator_limited_trials > 0
    assert f"{count(result.unusable_trials, 'trial')} excluded" in result.note
    for g in result.goals:
        true = gen.true_pdr(g.threshold_pct)
        assert g.status == "ok"
        assert g.lower_bound_pps <= true * (1 + 1e-6) <= g.upper_bound_pps * (1 + 2e-6)


@pytest.mark.parametrize("alg", SEARCHES)
def test_inconsistent_counters_are_excluded(alg: str) -> None:
    """Every other trial claims no loss but has inconsistent counters: it must be ignored."""
    gen = model()
    calls = {"n": 0}

    def measure(rate: float, duration: float) -> TrialResult:
        calls["n"] += 1
        real = gen.trial(rate, duration)
        if calls["n"] % 2:
            return dataclasses.replace(real, received=real.intended, counters_consistent=False,
                                       note="counters disagree")
        return real

    result = create(alg, SETTINGS).run(measure)
    assert result.unusable_trials > 0 and result.generator_limited_trials == 0
    for g in result.goals:
        true = gen.true_pdr(g.threshold_pct)
        assert g.status == "ok"
        assert g.lower_bound_pps <= true * (1 + 1e-6) <= g.upper_bound_pps * (1 + 2e-6)


@pytest.mark.parametrize("alg", SEARCHES + ["mrr"])
def test_warmup_is_kept_marked_and_not_used(alg: str) -> None:
    plain = create(alg, SETTINGS).run(model().trial)
    gen = model()
    first = {"done": False}

    def measure(rate: float, duration: float) -> TrialResult:
        real = gen.trial(rate, duration)
        if not first["done"]:  # a disastrous warm-up must not matter
            first["done"] = True
            return dataclasses.replace(real, received=0)
        return real

    warm = create(alg, dataclasses.replace(SETTINGS, warmup_duration_s=0.3)).run(measure)
    assert warm.trials[0].extra.get("warmup") is True and warm.trials[0].duration_s == 0.3
    assert not any(t.extra.get("warmup") for t in warm.trials[1:])
    assert [(g.status, g.lower_bound_pps, g.upper_bound_pps) for g in warm.goals] == \
        [(g.status, g.lower_bound_pps, g.upper_bound_pps) for g in plain.goals]
    assert warm.trial_seconds == pytest.approx(plain.trial_seconds + 0.3)


@pytest.mark.parametrize("alg", SEARCHES)
def test_trial_budget_gives_undecided_not_an_exception(alg: str) -> None:
    settings = dataclasses.replace(SETTINGS, max_trials=2)
    result = create(alg, settings).run(model(capacity_jitter=0.01).trial)
    assert result.n_trials <= 2
    assert "trial budget of 2 reached" in result.note
    assert all(g.status == "undecided" and g.value_pps is None for g in result.goals)
