"""Every search on the MODEL SUT converges to the model's true PDR/NDR.

Claims tested (fixed seeds; each search takes no real time):
* without noise, the true value lies in [lower, upper] and the interval is as
  narrow as asked (accuracy_pps for bisect/multi, relative_width for mlr/mlrsearch);
* with a per-trial capacity jitter sigma, the reported rate is within
  width + 3 sigma of the true value.
"""

from __future__ import annotations

import pytest

from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchResult, SearchSettings
from srperf.search.registry import create

CAPACITY = 1_000_000.0
WIDTH = 0.01
SEEDS = range(8)


def settings(thresholds: tuple[float, ...]) -> SearchSettings:
    return SearchSettings(thresholds_pct=thresholds, min_rate_pps=100_000.0,
                          max_rate_pps=1_500_000.0, accuracy_pps=WIDTH * CAPACITY,
                          relative_width=WIDTH)


def run(alg: str, thresholds: tuple[float, ...], noise: float, seed: int,
        capacity: float = CAPACITY) -> tuple[SearchResult, SimulatedGenerator]:
    gen = SimulatedGenerator(SimulatedModel(capacity, capacity_jitter=noise), seed=seed)
    return create(alg, settings(thresholds)).run(gen.trial), gen


def width_ok(alg: str, lo: float, hi: float) -> bool:
    if alg in ("bisect", "multi"):
        return hi - lo <= WIDTH * CAPACITY * (1 + 1e-9)
    return (hi - lo) / hi <= WIDTH * (1 + 1e-9)


@pytest.mark.parametrize("alg, thresholds", [
    ("bisect", (0.5,)), ("bisect", (0.0, 0.5)),
    ("multi", (0.0, 0.5)), ("mlr", (0.0, 0.5)), ("mlrsearch", (0.0, 0.5)),
    ("mlr", (0.5,)), ("mlr", (0.1, 1.0, 5.0)),
    ("lossfit", (0.5,)), ("lossfit", (0.0, 0.5)), ("lossfit", (0.1, 1.0, 5.0)),
])
@pytest.mark.parametrize("seed", SEEDS)
def test_noiseless_model_is_bracketed(alg: str, thresholds: tuple[float, ...], seed: int
                                      ) -> None:
    capacity = CAPACITY * (0.6 + 0.1 * seed)  # a different SUT per seed
    result, gen = run(alg, thresholds, 0.0, seed, capacity)
    assert [g.threshold_pct for g in result.goals] == list(thresholds)
    for g in result.goals:
        true = gen.true_pdr(g.threshold_pct)
        assert g.status == "ok", g
        assert g.lower_bound_pps is not None and g.upper_bound_pps is not None
        assert g.lower_bound_pps <= true * (1 + 1e-6) and true <= g.upper_bound_pps * (1 + 1e-6)
        assert width_ok(alg, g.lower_bound_pps, g.upper_bound_pps), g
        assert g.value_pps == g.lower_bound_pps
        assert g.conditional_throughput_pps is not None
        assert g.conditional_throughput_pps <= g.lower_bound_pps
    assert result.n_trials == len(result.trials) > 0
    assert result.trial_seconds == pytest.approx(sum(t.duration_s for t in result.trials))
    assert result.wall_s >= 0.0 and result.algorithm == alg


@pytest.mark.parametrize("alg", ["bisect", "multi", "mlr", "mlrsearch", "lossfit"])
@pytest.mark.parametrize("noise", [0.001, 0.003])
def test_noisy_model_within_width_plus_noise(alg: str, noise: float) -> None:
    for seed in SEEDS:
        result, gen = run(alg, (0.0, 0.5), noise, seed)
        for g in result.goals:
            true = gen.true_pdr(g.threshold_pct)
            assert g.status == "ok" and g.value_pps is not None, (seed, g)
            assert abs(g.value_pps - true) / true <= WIDTH + 3 * noise, (seed, g, true)


def test_ndr_and_pdr_share_trials_in_multi_goal_searches() -> None:
    """multi/mlr/mlrsearch/lossfit find NDR and PDR together for less than two separate searches."""
    for alg in ("multi", "mlr", "mlrsearch", "lossfit"):
        both, _ = run(alg, (0.0, 0.5), 0.0, 0)
        ndr, _ = run(alg, (0.0,), 0.0, 0)
        pdr, _ = run(alg, (0.5,), 0.0, 0)
        assert both.trial_seconds < ndr.trial_seconds + pdr.trial_seconds, alg
