"""The orchestrator on the simulated SUT model: interleaving, storage, failures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from srperf.config.model import Experiment, SearchConfig, TestbedConfig
from srperf.drivers.simulated import SimulatedGenerator
from srperf.errors import ConfigError
from srperf.measure.orchestrator import Orchestrator

SIM = TestbedConfig(name="sim", kind="simulated",
              simulated={"capacity_pps": {"default": 1_000_000, "end": 800_000}})


def _exp(**kw: object) -> Experiment:
    base = dict(name="t", behaviors=("ipv6", "end"), repetitions=3,
                search=SearchConfig(algorithm="bisect", thresholds_pct=(0.5,)))
    base.update(kw)
    return Experiment(**base)  # type: ignore[arg-type]


def test_repetitions_interleaved_and_every_trial_stored(tmp_path: Path) -> None:
    report = Orchestrator(_exp(), SIM, tmp_path).run()
    assert report.status == "finished"
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    order = db.execute("SELECT behavior, repetition FROM searches ORDER BY search_seq").fetchall()
    assert order == [("ipv6", 1), ("end", 1), ("ipv6", 2), ("end", 2), ("ipv6", 3), ("end", 3)]
    n_trials = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    assert n_trials == sum(r.n_trials for _, r in report.searches)
    s = report.summary.set_index("behavior")
    assert s.loc["ipv6", "n"] == 3
    # The model's capacities, within the search accuracy (0.5 % of 1.5 Mpps).
    assert s.loc["ipv6", "mean_kpps"] == pytest.approx(1000, abs=10)
    assert s.loc["end", "mean_kpps"] == pytest.approx(800, abs=10)
    assert report.summary_csv and report.summary_csv.exists()


def test_failure_mid_run_keeps_finished_trials(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real_trial = SimulatedGenerator.trial

    def flaky(self: SimulatedGenerator, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None):
        calls["n"] += 1
        if calls["n"] == 12:
            raise RuntimeError("generator crashed")
        return real_trial(self, rate_pps, duration_s, stop_lost=stop_lost)

    monkeypatch.setattr(SimulatedGenerator, "trial", flaky)
    with pytest.raises(RuntimeError, match="generator crashed"):
        Orchestrator(_exp(), SIM, tmp_path).run()
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    assert db.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 11
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "failed"


def test_algorithm_override_and_two_goals(tmp_path: Path) -> None:
    exp = _exp(behaviors=("ipv6",), repetitions=1,
               search=SearchConfig(thresholds_pct=(0.0, 0.5)))
    report = Orchestrator(exp, SIM, tmp_path, algorithm="mlr").run()
    (_, result), = report.searches
    assert result.algorithm == "mlr"
    assert [g.threshold_pct for g in result.goals] == [0.0, 0.5]


def test_impossible_search_is_a_config_error(tmp_path: Path) -> None:
    from srperf.config.model import RateSpec

    exp = _exp(search=SearchConfig(min_rate=RateSpec(2e6), max_rate=RateSpec(1e6)))
    with pytest.raises(ConfigError, match="min rate"):
        Orchestrator(exp, SIM, tmp_path)


def test_virtual_testbed_refuses_a_forwarder_that_needs_a_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from srperf.forwarders import registry as forwarders
    from srperf.forwarders.base import Forwarder

    class HostOnly(Forwarder):
        name, script, behaviors, runs_in_netns = "hostonly", "hostonly.sh", ("ipv6",), False

    monkeypatch.setitem(forwarders.REGISTRY, "hostonly", HostOnly())
    with pytest.raises(ConfigError, match="needs an ssh testbed"):
        Orchestrator(_exp(forwarder="hostonly"), TestbedConfig(name="v"), tmp_path)


def test_ssh_testbed_refuses_another_forwarder(tmp_path: Path) -> None:
    from srperf.config.model import SshConfig, SutConfig, TransportConfig

    tb = TestbedConfig(name="s", kind="ssh", sut=SutConfig(
        forwarder="ebpf", transport=TransportConfig("ssh", SshConfig(host="192.0.2.9"))))
    with pytest.raises(ConfigError, match="runs 'ebpf'"):
        Orchestrator(_exp(forwarder="linux"), tb, tmp_path)
