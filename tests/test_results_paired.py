"""Paired interleaved A/B statistics on synthetic data with known answers (issue 48)."""

from __future__ import annotations

import math
import random

import pytest

from srperf.results.paired import (BUDGET_SPENT, NOT_ENOUGH, NOT_SIGNIFICANT, SIGNIFICANT,
                                   WIDTH_REACHED, StopRule, block_log_ratio,
                                   minimal_detectable_pct, run_paired, summarize)


class Clock:
    """A simulated clock: each measurement takes ``step`` seconds."""

    def __init__(self, step: float = 10.0) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        return self.t


def _testbed(ratio: float, cv: float, drift: float, rng: random.Random, clock: Clock):
    """A host whose rate drifts (a random walk of ``drift`` per trial) with ``cv`` noise
    per trial; B is ``ratio`` times A."""
    level = [1000.0]

    def measure(side: str, block: int, slot: int) -> float:
        clock.t += clock.step
        level[0] *= math.exp(rng.gauss(0, drift))
        return level[0] * (ratio if side == "B" else 1.0) * math.exp(rng.gauss(0, cv))
    return measure


def test_abba_cancels_a_linear_drift() -> None:
    # A rises 1 % per slot; B = 0.97 A: ABBA and BAAB both give exactly log 0.97
    for order in ("ABBA", "BAAB"):
        figs = [100 * 1.01 ** i * (0.97 if s == "B" else 1.0) for i, s in enumerate(order)]
        assert block_log_ratio(order, figs) == pytest.approx(math.log(0.97))
    with pytest.raises(ValueError, match="<= 0"):
        block_log_ratio("ABBA", [1.0, 0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="does not match"):
        block_log_ratio("ABB", [1.0, 1.0, 1.0, 1.0])


def test_known_ratio_is_recovered_with_an_interval_that_covers_it() -> None:
    rng = random.Random(7)
    clock = Clock()
    r = run_paired(_testbed(0.96, 0.02, 0.03, rng, clock), StopRule(1.0, 1e6), rng, clock)
    assert r.stop_reason == WIDTH_REACHED and r.half_width_pct <= 1.0
    assert r.low < 0.96 < r.high and r.status == SIGNIFICANT
    assert r.high < 1.0 and "B differs from A" in r.describe()


def test_budget_stops_and_says_so_with_the_minimal_detectable_difference() -> None:
    rng = random.Random(3)
    clock = Clock(step=10.0)   # a block is 40 s; a 200 s budget holds 5 blocks
    r = run_paired(_testbed(1.0, 0.08, 0.0, rng, clock), StopRule(0.1, 200.0, min_blocks=3),
                   rng, clock)
    assert r.stop_reason == BUDGET_SPENT and r.n_blocks == 5
    assert clock.t <= 200.0
    assert math.isfinite(r.mdd_pct) and r.mdd_pct > r.half_width_pct
    assert f"differences under {r.mdd_pct:.1f} % are not resolved" in r.describe()


def test_too_few_blocks_or_no_spread_is_not_enough_evidence() -> None:
    assert summarize([0.01, -0.01]).status == NOT_ENOUGH
    assert summarize([0.01, 0.01, 0.01]).status == NOT_ENOUGH
    assert summarize([]).status == NOT_ENOUGH
    assert "not enough evidence" in summarize([0.01]).describe()


def test_a_over_a_false_positive_rate_is_near_five_percent() -> None:
    """2000 simulated A/A comparisons (fixed seed) with drift and noise, 6 blocks each:
    the share that calls A different from A is 5 % within binomial error."""
    rng = random.Random(48)
    n, hits = 2000, 0
    for _ in range(n):
        clock = Clock()
        r = run_paired(_testbed(1.0, 0.05, 0.05, rng, clock),
                       StopRule(0.01, 1e9, min_blocks=6, max_blocks=6), rng, clock)
        assert r.n_blocks == 6
        hits += r.status == SIGNIFICANT
    rate = hits / n
    assert 0.05 - 3 * math.sqrt(0.05 * 0.95 / n) < rate < 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)


def test_sequential_width_rule_keeps_the_false_positive_rate_near_nominal() -> None:
    """Stopping on the width (default: from 8 blocks) inflates the A/A false-positive
    rate a little (the module docstring gives the figures); it stays within 5 % plus
    three binomial standard errors."""
    rng = random.Random(4848)
    n, hits = 1000, 0
    for _ in range(n):
        clock = Clock()
        r = run_paired(_testbed(1.0, 0.03, 0.02, rng, clock),
                       StopRule(1.0, 1e9, max_blocks=200), rng, clock)
        hits += r.status == SIGNIFICANT
    assert hits / n < 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)


def test_minimal_detectable_difference() -> None:
    # (t_.975 + t_.8) * s / sqrt(n) at n = 10, s = 0.05: (2.262 + 0.883) * 0.0158
    assert minimal_detectable_pct(0.05, 10) == pytest.approx(
        100 * (math.exp(3.1453 * 0.05 / math.sqrt(10)) - 1), rel=1e-3)
    assert math.isnan(minimal_detectable_pct(0.05, 1))
    assert minimal_detectable_pct(0.05, 40) < minimal_detectable_pct(0.05, 10)


def test_stop_rule_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="width_pct"):
        StopRule(0.0)
    with pytest.raises(ValueError, match="budget_s"):
        StopRule(1.0, -1)
    with pytest.raises(ValueError, match="min_blocks"):
        StopRule(1.0, 10, min_blocks=2)
    assert summarize([0.01, 0.02, 0.00, 0.015]).status in (SIGNIFICANT, NOT_SIGNIFICANT)
