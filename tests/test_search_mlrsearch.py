"""The adapter driving CSIT MLRsearch 1.2.1 through our measure callable."""

from __future__ import annotations

import MLRsearch
import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create

SETTINGS = SearchSettings(thresholds_pct=(0.0, 0.5), min_rate_pps=100_000,
                          max_rate_pps=1_500_000, relative_width=0.005)


def test_installed_version_has_the_1_2_1_names() -> None:
    result = MLRsearch.MeasurementResult(intended_duration=1.0, intended_load=100.0,
                                         intended_count=100, offered_count=100,
                                         forwarding_count=97)
    assert result.loss_ratio == pytest.approx(0.03)


@pytest.mark.parametrize("seed", range(5))
def test_bounds_consistent_with_ours_on_the_same_model(seed: int) -> None:
    capacity = 600_000 + 150_000 * seed
    results = {}
    for alg in ("mlr", "mlrsearch"):
        gen = SimulatedGenerator(SimulatedModel(capacity, smoothing=0.01), seed=seed)
        results[alg] = create(alg, SETTINGS).run(gen.trial)
    for ours, theirs in zip(results["mlr"].goals, results["mlrsearch"].goals):
        assert ours.threshold_pct == theirs.threshold_pct
        true = gen.true_pdr(ours.threshold_pct)
        for g in (ours, theirs):
            assert g.status == "ok"
            assert g.lower_bound_pps <= true * (1 + 1e-6) <= g.upper_bound_pps * (1 + 2e-6)
            assert (g.upper_bound_pps - g.lower_bound_pps) / g.upper_bound_pps <= 0.005 * 1.0001
        # both brackets hold the true value: they overlap and their lower bounds differ by
        # less than one width
        assert max(ours.lower_bound_pps, theirs.lower_bound_pps) <= \
            min(ours.upper_bound_pps, theirs.upper_bound_pps)
        assert theirs.conditional_throughput_pps <= theirs.lower_bound_pps


def test_counts_are_mapped_so_that_loss_ratios_agree() -> None:
    """Refused packets are lost: MLRsearch must see lost / intended, as ours."""
    seen: list[TrialResult] = []

    def measure(rate: float, duration: float) -> TrialResult:
        intended = round(rate * duration)
        refused = intended // 100 if rate > 500_000 else 0
        trial = TrialResult(rate, duration, intended, intended - refused, refused,
                            intended - refused, duration)
        seen.append(trial)
        return trial

    settings = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=100_000,
                              max_rate_pps=1_000_000, relative_width=0.01)
    result = create("mlrsearch", settings).run(measure)
    g = result.goals[0]
    assert g.status == "ok" and g.lower_bound_pps <= 500_000 < g.upper_bound_pps
    assert result.trials == seen


def test_warmup_and_settings_mapping() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    settings = SearchSettings(thresholds_pct=(0.5,), warmup_duration_s=0.25,
                              initial_trial_duration_s=0.25, trial_duration_s=2.0,
                              duration_sum_s=4.0)
    result = create("mlrsearch", settings).run(gen.trial)
    assert result.trials[0].extra.get("warmup") is True
    assert result.trials[0].duration_s == 0.25 and result.trials[0].rate_pps == 1_500_000
    durations = {t.duration_s for t in result.trials[1:]}
    assert min(durations) == 0.25 and max(durations) == 2.0
