"""The MODEL SUT: formulas, noise, determinism, config validation."""

from __future__ import annotations

import math
import statistics

import pytest

from srperf.drivers.base import TrialResult
from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.errors import GeneratorError


def test_true_pdr_hard_knee() -> None:
    m = SimulatedModel(1_000_000)
    assert m.true_pdr(0.0) == pytest.approx(1_000_000)
    assert m.true_pdr(0.5) == pytest.approx(1_000_000 / 0.995, rel=1e-9)
    assert m.true_pdr(10.0) == pytest.approx(1_000_000 / 0.9, rel=1e-9)


def test_true_pdr_smoothed_knee_solves_the_loss_curve() -> None:
    m = SimulatedModel(1_000_000, smoothing=0.02)
    assert m.true_pdr(0.0) == pytest.approx(980_000)
    for t in (0.1, 0.5, 1.0, 5.0):
        pdr = m.true_pdr(t)
        assert m.loss_share(pdr) == pytest.approx(t / 100.0, rel=1e-6)
        assert m.loss_share(pdr * 0.999) < t / 100.0 < m.loss_share(pdr * 1.001)
    # loss rises monotonically with the rate
    shares = [m.loss_share(r) for r in range(900_000, 1_100_000, 1_000)]
    assert all(a <= b for a, b in zip(shares, shares[1:]))
    with pytest.raises(ValueError, match="outside"):
        m.true_pdr(100.0)


def test_trial_counts_without_noise() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    below = gen.trial(500_000, 2.0)
    assert isinstance(below, TrialResult)
    assert below.intended == 1_000_000 and below.sent == 1_000_000 and below.refused == 0
    assert below.received == 1_000_000 and below.loss_ratio == 0.0
    assert below.elapsed_s == 2.0 and below.usable and below.extra["simulated"] is True
    above = gen.trial(1_250_000, 1.0)
    assert above.intended == 1_250_000
    assert above.lost == math.ceil(1_250_000 * (1 - 1 / 1.25) - 1e-9) == 250_000
    assert above.received_rate_pps == pytest.approx(1_000_000)
    # just above capacity: any positive loss share loses at least one packet
    edge = gen.trial(1_000_010, 1.0)
    assert edge.lost >= 1


def test_same_seed_same_trials_and_different_seed_differs() -> None:
    model = SimulatedModel(1_000_000, capacity_jitter=0.02, burst_probability=0.2,
                           burst_duration_s=0.01, generator_limited_probability=0.1)
    rates = [900_000, 1_000_000, 1_100_000, 1_050_000] * 10
    g1, g2, g3 = (SimulatedGenerator(model, seed=s) for s in (7, 7, 8))
    t1 = [g1.trial(r, 0.5) for r in rates]
    t2 = [g2.trial(r, 0.5) for r in rates]
    t3 = [g3.trial(r, 0.5) for r in rates]
    assert t1 == t2
    assert t1 != t3
    assert len({t.received for t in t1}) > 4  # the noise really varies the outcome


def test_capacity_jitter_has_the_configured_sigma() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000, capacity_jitter=0.02), seed=3)
    caps = [gen.trial(1_100_000, 0.1).extra["model_capacity_pps"] for _ in range(3000)]
    assert statistics.mean(caps) == pytest.approx(1_000_000, rel=0.002)
    assert statistics.stdev(caps) / 1_000_000 == pytest.approx(0.02, rel=0.08)


def test_loss_bursts_lose_the_packets_of_the_stall() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000, burst_probability=1.0,
                                            burst_duration_s=0.01))
    trial = gen.trial(500_000, 1.0)
    assert trial.lost == 5_000 and trial.extra["model_burst"] is True
    assert trial.usable  # a loss burst is the SUT's loss, not the generator's


def test_generator_max_rate_flags_the_trial() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000, generator_max_rate_pps=800_000))
    assert gen.max_rate_pps() == 800_000
    ok = gen.trial(800_000, 1.0)
    assert ok.usable and ok.lost == 0
    over = gen.trial(900_000, 1.0)
    assert over.generator_limited and not over.usable
    assert over.elapsed_s == pytest.approx(900_000 / 800_000)
    assert over.offered_rate_pps == pytest.approx(800_000)
    assert "at most 800000 pps" in over.note


def test_random_generator_stalls_are_flagged() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000, generator_limited_probability=1.0), seed=1)
    trials = [gen.trial(1_100_000, 1.0) for _ in range(20)]
    assert all(t.generator_limited and not t.usable for t in trials)
    # the stalled generator offered slower, so the SUT lost less than it would have:
    # exactly why a search must not use these trials
    assert all(t.loss_ratio < 1 - 1 / 1.1 for t in trials)
    assert all(t.elapsed_s > 1.0 for t in trials)


def test_capture_is_refused() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    with pytest.raises(GeneratorError,
                       match="cannot capture packets: verification needs a real SUT"):
        gen.capture([b"\x00" * 60])


def test_trial_rejects_nonpositive_rate_or_duration() -> None:
    gen = SimulatedGenerator(SimulatedModel(1_000_000))
    with pytest.raises(GeneratorError):
        gen.trial(0, 1.0)
    with pytest.raises(GeneratorError):
        gen.trial(1000, 0.0)


def test_from_config_number_and_per_behavior() -> None:
    assert SimulatedGenerator.from_config({"capacity_pps": 750_000}).model.capacity_pps == 750_000
    cfg = {"capacity_pps": {"default": 1_000_000, "end": 800_000}, "capacity_jitter": 0.01,
           "generator_max_rate_pps": None}
    assert SimulatedGenerator.from_config(cfg, "end").model.capacity_pps == 800_000
    gen = SimulatedGenerator.from_config(cfg, "ipv6", seed=4)
    assert gen.model.capacity_pps == 1_000_000 and gen.model.capacity_jitter == 0.01
    assert gen.seed == 4 and gen.behavior == "ipv6" and gen.max_rate_pps() is None
    assert gen.true_pdr(0.0) == 1_000_000


@pytest.mark.parametrize("cfg, behavior, key", [
    ({"capacity_pps": {"end": 1}}, "ipv6", "capacity_pps.ipv6"),
    ({"capacity_pps": {"end": 1}}, None, "capacity_pps.default"),
    ({"capacity_pps": {"default": -5}}, None, "capacity_pps.default"),
    ({"capacity_pps": {"default": 10, "end": "fast"}}, "end", "capacity_pps.end"),
    ({}, None, "capacity_pps"),
    ({"capacity_pps": 0}, None, "capacity_pps"),
    ({"capacity_pps": True}, None, "capacity_pps"),
    ({"capacity_pps": 1e6, "jitter": 0.1}, None, "'jitter'"),
    ({"capacity_pps": 1e6, "capacity_jitter": -0.1}, None, "capacity_jitter"),
    ({"capacity_pps": 1e6, "capacity_jitter": "x"}, None, "capacity_jitter"),
    ({"capacity_pps": 1e6, "burst_probability": 1.5}, None, "burst_probability"),
    ({"capacity_pps": 1e6, "burst_duration_s": -1}, None, "burst_duration_s"),
    ({"capacity_pps": 1e6, "generator_limited_probability": 2}, None,
     "generator_limited_probability"),
    ({"capacity_pps": 1e6, "generator_max_rate_pps": 0}, None, "generator_max_rate_pps"),
    ({"capacity_pps": 1e6, "smoothing": 0.5}, None, "smoothing"),
    ({"capacity_pps": float("nan")}, None, "capacity_pps"),
])
def test_from_config_errors_name_the_key(cfg: dict, behavior: str | None, key: str) -> None:
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        SimulatedGenerator.from_config(cfg, behavior)


def test_from_config_needs_a_mapping() -> None:
    with pytest.raises(ValueError, match="mapping"):
        SimulatedGenerator.from_config([1, 2], None)  # type: ignore[arg-type]
