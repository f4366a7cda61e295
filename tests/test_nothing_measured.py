"""A run or a nightly night that measured nothing is never green and never a baseline;
JUnit case names are spelled one way every night (simulated SUT, seeded model).

The all-generator-limited testbed is the simulated one with a generator that stalls in
every trial (``generator_limited_probability: 1``): every search ends
``generator_limited``, as on a lab whose TRex could not offer the rates tried."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from srperf.cli.guard import EXIT_NOTHING_MEASURED
from srperf.cli.entry import main
from srperf.nightly import load_suite, run_nightly
from srperf.results.names import case_name, goal_name
from srperf.results.store import ResultStore


def _testbed(tmp_path: Path, limited: bool) -> Path:
    sim: dict = {"capacity_pps": {"default": 1_000_000}, "capacity_jitter": 0.01}
    if limited:
        sim["generator_limited_probability"] = 1.0
    path = tmp_path / ("limited.yaml" if limited else "good.yaml")
    path.write_text(yaml.safe_dump({
        "name": "s26sim", "kind": "simulated",
        "tester": {"driver": "simulated", "line_rate_pps": 1_500_000}, "simulated": sim}))
    return path


def _suite(tmp_path: Path) -> Path:
    exp = tmp_path / "two.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "two", "forwarder": "linux", "behaviors": ["end", "h_encaps"],
        "packet_sizes": [64], "repetitions": 2,
        "search": {"algorithm": "bisect", "thresholds_pct": [0, 0.5],
                   "trial_duration_s": 0.5, "accuracy": "1%", "min_rate": "5%"}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "s26night", "testbed": str(_testbed(tmp_path, False)),
        "experiments": [str(exp)], "results": str(tmp_path / "results"),
        "reports": str(tmp_path / "reports")}))
    _testbed(tmp_path, True)
    return suite


def test_names_are_spelled_one_way() -> None:
    assert goal_name(0.5) == "PDR@0.5%" and goal_name(0) == "NDR"
    assert case_name("end", 64, 0.5) == "end 64B PDR@0.5%"
    assert case_name("end_dt4", 64, float("nan")) == "end_dt4 64B"


def test_an_all_generator_limited_run_exits_3_naming_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["pdr", "-b", "end", "-t", str(_testbed(tmp_path, True)),
                 "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == EXIT_NOTHING_MEASURED == 3
    assert "nothing measured: end 64B PDR@0.5%: generator_limited" in err
    # the same run on a generator that keeps up measured something: exit 0
    assert main(["pdr", "-b", "end", "-t", str(_testbed(tmp_path, False)),
                 "--results", str(tmp_path / "r")]) == 0


def _names(junit: Path) -> list[str]:
    return sorted(c.get("name") for c in ET.parse(junit).getroot().iter("testcase"))


def test_a_night_that_measured_nothing_fails_naming_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path)
    junit = tmp_path / "reports" / "junit-s26night.xml"
    assert main(["nightly", str(suite), "--testbed", str(tmp_path / "limited.yaml")]) == 3
    root = ET.parse(junit).getroot()
    failures = root.findall(".//testcase/failure")
    assert int(root.get("failures")) == len(failures) == 4
    assert {f.get("type") for f in failures} == {"nothing_measured"}
    assert "generator_limited" in failures[0].get("message")
    assert "nothing measured" in capsys.readouterr().err
    with ResultStore(tmp_path / "results" / "srperf.sqlite") as store:
        assert list(store.frame("comparisons")["verdict"]) == ["nothing_measured"]


def test_the_baseline_is_the_last_night_with_a_figure(tmp_path: Path) -> None:
    """good night, all-generator-limited night, good night: the third is compared with
    the first; the empty night is never the 'first good run'."""
    suite = load_suite(_suite(tmp_path))
    limited = str(tmp_path / "limited.yaml")
    quiet = {"progress": lambda msg: None}
    first = run_nightly(suite, **quiet).results[0]
    empty = run_nightly(suite, overrides={"testbed": limited}, **quiet).results[0]
    assert empty.baseline_run_id == first.run_id   # the empty night had one to compare
    third = run_nightly(suite, **quiet).results[0]
    assert third.baseline_run_id == first.run_id != empty.run_id
    assert third.comparison is not None
    assert all(c.verdict != "not_comparable" for c in third.comparison.changes)


def test_junit_case_names_are_the_same_every_night(tmp_path: Path) -> None:
    """The first night (no comparison) and the second (compared) name their cases
    alike: ``end 64B PDR@0.5%``, never ``PDR@0.5 %`` one night and ``PDR@0.5%`` the next."""
    suite = _suite(tmp_path)
    junit = tmp_path / "reports" / "junit-s26night.xml"
    assert main(["nightly", str(suite)]) == 0
    first = _names(junit)
    assert main(["nightly", str(suite)]) == 0
    second = _names(junit)
    expected = sorted(case_name(b, 64, t) for b in ("end", "h_encaps") for t in (0.0, 0.5))
    assert first == second == expected


def test_run_writes_to_the_db_named_by_flag_or_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--db`` / SRPERF_DB reach every command that reads or writes results, ``srperf
    run``/``pdr`` too (SQLite here; a postgresql:// URL takes the same path)."""
    team = tmp_path / "team.sqlite"
    tb = str(_testbed(tmp_path, False))
    results = str(tmp_path / "local")
    assert main(["pdr", "-b", "end", "-t", tb, "--results", results, "--db", str(team)]) == 0
    monkeypatch.setenv("SRPERF_DB", str(team))
    assert main(["pdr", "-b", "h_encaps", "-t", tb, "--results", results]) == 0
    assert not (tmp_path / "local" / "srperf.sqlite").exists()
    with ResultStore(team) as store:
        assert len(store.frame("runs")) == 2
    capsys.readouterr()
    for argv in (["runs"], ["report", "last", "-o", str(tmp_path / "r.html")],
                 ["export", "last", "-o", str(tmp_path / "x")],
                 ["compare", "last", "last"]):
        assert main([*argv, "--results", str(tmp_path / "nowhere")]) == 0, argv
    assert "h_encaps" in capsys.readouterr().out


def test_srperf_run_writes_to_a_real_postgresql(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``srperf pdr --db postgresql://...`` (the team's store): the run, its trials and
    its exit code, read back by ``srperf runs --db``; a throw-away real PostgreSQL."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import pg_server

    why = pg_server.unavailable()
    if why:
        pytest.skip(f"PostgreSQL: {why}")
    server = pg_server.start()
    try:
        tb = str(_testbed(tmp_path, False))
        assert main(["pdr", "-b", "end", "-t", tb, "--results", str(tmp_path / "l"),
                     "--db", server.url]) == 0
        assert main(["pdr", "-b", "end", "-t", str(_testbed(tmp_path, True)),
                     "--results", str(tmp_path / "l"), "--db", server.url]) == 3
        capsys.readouterr()
        assert main(["runs", "--db", server.url]) == 0
        assert capsys.readouterr().out.count("pdr-end") == 2
        with ResultStore(server.url) as store:
            assert len(store.frame("trials")) > 5
        assert not (tmp_path / "l" / "srperf.sqlite").exists()
    finally:
        server.stop()


def test_a_run_that_measured_nothing_keeps_why_in_runs_and_says_what_to_try(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 49 item 1: ``srperf runs`` showed such a run ``finished`` with an empty
    reason; now the reason is stored, and the run (and the table) say what to try."""
    results = str(tmp_path / "r")
    assert main(["pdr", "-b", "end", "-t", str(_testbed(tmp_path, True)),
                 "--results", results]) == 3
    err = capsys.readouterr().err
    assert "srperf: to try: the generator could not offer the rates tried" in err
    assert "fifo_priority" in err
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        (row,) = store.runs_rows()
    assert row["status"] == "finished"
    assert row["reason"].startswith("nothing measured: end 64B PDR@0.5%: generator_limited")
    assert "to try: " in row["reason"] and "fifo_priority" in row["reason"]
    assert main(["runs", "--results", results]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert " finished " in line and "nothing measured: end 64B" in line
    # a run that measured keeps no reason
    assert main(["pdr", "-b", "end", "-t", str(_testbed(tmp_path, False)),
                 "--results", results]) == 0
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        assert store.runs_rows()[0]["reason"] is None


def test_what_to_try_follows_the_first_cause_named() -> None:
    from srperf.results.measured import TRY_OTHER, TRY_UNDECIDED, what_to_try

    assert "fifo_priority" in what_to_try("nothing measured: end 64B NDR: generator_limited")
    assert what_to_try("nothing measured: a: undecided; b: generator_limited") == TRY_UNDECIDED
    assert what_to_try("nothing measured: end_dt4 64B: unsupported (no VRF)") == TRY_OTHER
