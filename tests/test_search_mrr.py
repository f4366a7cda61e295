"""mrr: median received rate at a fixed offered rate."""

from __future__ import annotations

import pytest

from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create


def test_mrr_is_the_median_received_rate() -> None:
    gen = SimulatedGenerator(SimulatedModel(800_000, capacity_jitter=0.02), seed=5)
    settings = SearchSettings(thresholds_pct=(0.0, 0.5), mrr_repeats=5, trial_duration_s=2.0)
    result = create("mrr", settings).run(gen.trial)
    assert result.n_trials == 5
    assert all(t.rate_pps == settings.max_rate_pps and t.duration_s == 2.0 for t in result.trials)
    received = sorted(t.received / 2.0 for t in result.trials)
    for g in result.goals:
        assert g.status == "mrr" and g.upper_bound_pps is None
        assert g.lower_bound_pps == g.conditional_throughput_pps == g.value_pps == received[2]
        assert "median of 5 trials at 1500000 pps" in g.note
    assert result.goals[0].lower_bound_pps == pytest.approx(800_000, rel=0.05)


def test_mrr_rate_setting_and_a_sut_that_keeps_up() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    result = create("mrr", SearchSettings(mrr_rate_pps=600_000)).run(gen.trial)
    assert {t.rate_pps for t in result.trials} == {600_000}
    assert result.goals[0].value_pps == 600_000


def test_mrr_with_a_limited_generator_reports_no_rate() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000, generator_max_rate_pps=700_000))
    result = create("mrr", SearchSettings()).run(gen.trial)
    g = result.goals[0]
    assert g.status == "generator_limited" and g.value_pps is None
    assert g.lower_bound_pps is None and "no receive rate reported" in g.note
    assert result.unusable_trials == 3
