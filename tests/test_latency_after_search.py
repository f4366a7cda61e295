"""Latency measured after each search at fractions of its PDR (MeasurementSession.latency),
on the simulated testbed: its generator has no latency stream, which must be said; with a
latency-capable generator the trials are run at the right loads and stored."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from srperf.config.model import Experiment, LatencyConfig, SearchConfig, TestbedConfig
from srperf.drivers.latency import from_trex
from srperf.drivers.simulated import SimulatedGenerator
from srperf.measure.orchestrator import Orchestrator

SIM = TestbedConfig(name="sim", kind="simulated",
                    simulated={"capacity_pps": {"default": 1_000_000}})


def _exp(**latency: object) -> Experiment:
    return Experiment(name="lat", behaviors=("ipv6",),
                      search=SearchConfig(algorithm="bisect", thresholds_pct=(0.5,)),
                      latency=LatencyConfig(enabled=True, **latency))  # type: ignore[arg-type]


def test_driver_without_latency_stream_says_so(tmp_path: Path) -> None:
    report = Orchestrator(_exp(), SIM, tmp_path).run()
    (_, result), = report.searches
    assert [p.fraction for p in result.latency] == [0.1, 0.5, 0.9]
    assert all(p.latency is None for p in result.latency)
    assert "has no latency stream" in result.latency[0].note


def test_latency_trials_at_fractions_of_the_pdr_are_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[float, float, float]] = []

    def latency_trial(self, rate_pps, duration_s, stream_pps):  # type: ignore[no-untyped-def]
        asked.append((rate_pps, duration_s, stream_pps))
        t = self.trial(rate_pps, duration_s)
        lat = from_trex({"total_min": 3, "average": rate_pps / 1e5, "total_max": 50,
                         "jitter": 1, "histogram": {"10": 99, "50": 1}})
        return dataclasses.replace(t, extra={**t.extra, "latency": lat.as_dict()})

    monkeypatch.setattr(SimulatedGenerator, "latency_trial", latency_trial, raising=False)
    report = Orchestrator(_exp(fractions=(0.5, 0.9), duration_s=0.5, stream_pps=100),
                          SIM, tmp_path).run()
    (_, result), = report.searches
    pdr = result.goals[0].lower_bound_pps
    assert [(r / pdr, d, s) for r, d, s in asked] == [
        (pytest.approx(0.5), 0.5, 100), (pytest.approx(0.9), 0.5, 100)]
    assert [p.latency["p99_us"] for p in result.latency] == [10, 10]
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    extras = [json.loads(e) for (e,) in db.execute("SELECT extra FROM trials")]
    stored = [e for e in extras if e.get("purpose") == "latency"]
    assert [e["pdr_fraction"] for e in stored] == [0.5, 0.9]
