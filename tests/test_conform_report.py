"""Conformance verdicts in the results store and the HTML report; ``conformance:
required`` in the orchestrator (the simulated SUT; the matrix run replaced by a double
that reports a failing case)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from srperf.measure import conform
from srperf.behaviors.conformance import matrix as C
from srperf.config.model import Experiment, SearchConfig, TestbedConfig
from srperf.measure.orchestrator import Orchestrator
from srperf.results import report
from srperf.results.store import ResultStore

TB = TestbedConfig(name="m", prefix="m")
SIM = TestbedConfig(name="sim", kind="simulated", simulated={"capacity_pps": {"default": 1e6}})


def _results() -> list[conform.CaseResult]:
    cases = {c.name: c for c in C.cases("end", TB)}
    ok = cases["segments_2"]
    out = [conform.verdict(ok, [bytes(ok.outcome.frames[0].frame)], "linux", TB)]  # type: ignore
    out.append(conform.verdict(cases["hop_limit_1"], [cases["hop_limit_1"].frames[0]],
                               "linux", TB))
    return out


def test_stored_and_shown_in_the_report(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "srperf.sqlite")
    run = store.begin_run("conform:x", "virtual", "linux", {}, purpose="conform")
    store.add_conformance(run, "linux", _results())
    store.end_run(run, "finished")
    df = store.frame("conformance", run)
    assert list(df["status"]) == ["pass", "fail"]
    assert df.loc[1, "case_name"] == "hop_limit_1" and "forwarded" in df.loc[1, "detail"]
    html = tmp_path / "r.html"
    data = report.write_report(store, [run], html)
    assert data.conformance[0]["pass"] == 1 and data.conformance[0]["fail"] == 1
    text = html.read_text()
    assert 'id="conformance"' in text and "hop_limit_1" in text
    assert "RFC 8986 4.1 S05-S06" in text
    store.close()


def test_schema_6_upgrades_an_older_store(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    ResultStore(db).close()
    con = sqlite3.connect(db)
    con.execute("DROP TABLE conformance")
    con.execute("DELETE FROM schema_version WHERE version >= 6")  # 6 and any later
    con.commit()
    con.close()
    store = ResultStore(db)   # migrates again
    assert store.frame("conformance").empty
    store.close()


def test_required_conformance_refuses_a_failing_behavior(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def double(session, behaviors, store=None, run_id=None, progress=None):
        seen.append([b.name for b in behaviors])
        reports = []
        for b in behaviors:
            status = "fail" if b.name == "end" else "pass"
            r = conform.CaseResult(b.name, "sl_1", "sl", "forward", status, "IPv6.hlim: "
                                   "expected 63, got 64", "RFC 8986 4.1")
            store.add_conformance(run_id, "linux", [r])
            reports.append(conform.BehaviorReport(b.name, "linux", [r]))
        return reports

    monkeypatch.setattr(conform, "run_matrix", double)
    exp = Experiment(name="t", behaviors=("ipv6", "end"), conformance="required",
                     search=SearchConfig(algorithm="bisect", thresholds_pct=(0.5,)))
    rep = Orchestrator(exp, SIM, tmp_path).run()
    assert seen == [["ipv6", "end"]]
    assert rep.outcomes[("end", 64)][0] == "nonconformant"
    assert "sl_1" in rep.outcomes[("end", 64)][1]
    assert rep.outcomes[("ipv6", 64)][0] == "measured"
    assert [k.behavior for k, _ in rep.searches] == ["ipv6"]
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    assert db.execute("SELECT COUNT(*) FROM conformance").fetchone()[0] == 2


def test_conformance_off_runs_no_matrix(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conform, "run_matrix", lambda *a, **k: pytest.fail("ran"))
    exp = Experiment(name="t", behaviors=("ipv6",),
                     search=SearchConfig(algorithm="bisect", thresholds_pct=(0.5,)))
    assert Orchestrator(exp, SIM, tmp_path).run().outcomes[("ipv6", 64)][0] == "measured"


def test_a_matrix_that_did_not_run_is_stored_with_its_reason(tmp_path: Path) -> None:
    class Session:
        class forwarder:
            name, drop_counters = "ebpf", {}
        testbed = type("T", (), {"config": TB})()

    from srperf.behaviors import catalogue

    store = ResultStore(tmp_path / "srperf.sqlite")
    run = store.begin_run("conform:x", "virtual", "ebpf", {}, purpose="conform")
    [rep] = conform.run_matrix(Session(), [catalogue.get("end_baseline")], store, run)
    assert rep.skipped and not rep.ok
    df = store.frame("conformance", run)
    assert list(df["status"]) == ["not_run"] and "baseline" in df.loc[0, "detail"]
    data = report.collect(store, [run])
    assert data.conformance[0]["cases"] == 0 and "baseline" in data.conformance[0]["not_run"]
    store.close()
