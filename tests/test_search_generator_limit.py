"""A rate beyond the generator is not retried; a transient stall is."""

from __future__ import annotations

from srperf.search.registry import create
from srperf.search.base import SearchSettings
from srperf.drivers.simulated import SimulatedGenerator

SETTINGS = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=50_000, max_rate_pps=1_500_000,
                          accuracy_pps=5_000, relative_width=0.01)


def test_rates_beyond_the_generator_cost_one_trial_each() -> None:
    """SUT of 1.2 Mpps behind a generator that paces at most 0.8 Mpps."""
    for alg in ("bisect", "mlr", "multi", "lossfit"):
        gen = SimulatedGenerator.from_config(
            {"capacity_pps": 1_200_000, "generator_max_rate_pps": 800_000}, seed=1)
        result = create(alg, SETTINGS).run(gen.trial)
        limited = [t for t in result.trials if t.generator_limited]
        assert limited, alg
        # Offered < 90 % of intended and never paced before: tried once only.
        far = [t.rate_pps for t in limited if 800_000 < 0.9 * t.rate_pps]
        assert far and len(far) == len(set(far)), f"{alg} retried a rate beyond the generator"
        goal = result.goals[0]
        assert goal.status == "generator_limited", (alg, goal)
        assert goal.lower_bound_pps is not None and goal.lower_bound_pps <= 800_000


def test_mlr_starts_from_what_a_limited_first_trial_forwarded() -> None:
    """SUT of 0.5 Mpps behind a generator of 0.8 Mpps, max 1.5 Mpps: the first
    trial (at max) is generator-limited, but the 0.5 Mpps it forwarded is the
    hint; mlr does not step down through more rates the generator cannot offer."""
    gen = SimulatedGenerator.from_config(
        {"capacity_pps": 500_000, "generator_max_rate_pps": 800_000}, seed=1)
    result = create("mlr", SETTINGS).run(gen.trial)
    assert [t.rate_pps for t in result.trials if t.generator_limited] == [1_500_000]
    assert result.trials[1].usable and 500_000 * 0.95 < result.trials[1].rate_pps < 500_000
    goal = result.goals[0]
    assert goal.status == "ok"
    assert goal.lower_bound_pps <= gen.true_pdr(0.5) * (1 + 1e-6) <= goal.upper_bound_pps
