"""Issue 49, first contact round two: what a newcomer following the README met (simulated
SUT, seeded model: bookkeeping only, no traffic)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from srperf.cli.entry import main
from srperf.results.store import ResultStore


def _testbed(tmp_path: Path) -> Path:
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump({
        "name": "s49sim", "kind": "simulated",
        "tester": {"driver": "simulated", "line_rate_pps": 1_500_000},
        "simulated": {"capacity_pps": {"default": 1_000_000}, "capacity_jitter": 0.01}}))
    return path


def _pdr(tmp_path: Path, behavior: str = "end") -> None:
    assert main(["pdr", "-b", behavior, "-t", str(_testbed(tmp_path)),
                 "--results", str(tmp_path / "r")]) == 0


# -- item 9: 'report last' -------------------------------------------------------------
def test_report_last_takes_the_newest_finished_run_and_names_a_running_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _pdr(tmp_path)
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        finished = store.last_run_id()
        running = store.begin_run("quick", "virtual", "linux", {}, planned=7)  # ours: alive
    capsys.readouterr()
    out = tmp_path / "rep.html"
    assert main(["report", "last", "-o", str(out), "--results", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert f"'last' is the newest finished run, {finished}" in captured.err
    assert f"the newest run, {running}, is running" in captured.err
    assert finished in out.read_text() and running not in out.read_text()
    # a run named by its id is taken as it is, without a note
    assert main(["report", running, "-o", str(out), "--results", str(tmp_path / "r")]) == 0
    assert "newest finished" not in capsys.readouterr().err


def test_report_last_warns_when_no_run_has_finished(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").mkdir()
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        running = store.begin_run("quick", "virtual", "linux", {}, planned=7)
    assert main(["report", "last", "-o", str(tmp_path / "rep.html"),
                 "--results", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert f"warning: no run has finished; 'last' takes {running}, which is running" in err


# -- item 8: counters that add up in 'srperf runs' ---------------------------------------
def test_a_stateful_run_counts_its_samples_and_a_conform_run_its_cases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A goodput run showed ``SEARCHES 2/1  TRIALS 0`` (its calibration counted, one
    'search' planned); a conform run ``0/?``."""
    from srperf.cli.runs import format_runs
    from srperf.config.loader import load_experiment
    from srperf.measure.conform import CaseResult
    from srperf.stateful.base import StatefulSample, Variant
    from srperf.stateful.plan import planned_samples

    exp = load_experiment(Path("experiments/caching_proxy_goodput.yaml"),
                          ["behaviors=[end_cache]", "goodput.vnf_modes=[forward]",
                           "goodput.chains=[1]", "goodput.segments=[2]",
                           "goodput.repetitions=2"])
    assert planned_samples(exp) == 2
    (tmp_path / "r").mkdir()
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        run = store.begin_run(exp.name, "virtual", "ebpf", {}, planned=planned_samples(exp))
        ok = StatefulSample({"goodput_mbps": 900.0})
        store.add_stateful_sample(run, "calibration", "ipv6", "linux",
                                  Variant("1 streams", {"streams": 1}), 1, ok)
        for rep in (1, 2):
            store.add_stateful_sample(run, "goodput", "end_cache", "ebpf",
                                      Variant("1 streams", {"streams": 1}), rep, ok)
        store.end_run(run, "finished")
        conf = store.begin_run("conform:linux_endpoints", "virtual", "linux", {},
                               purpose="conform")
        store.add_conformance(conf, "linux", [
            CaseResult("end", f"case {i}", "sl", "forward", "pass", "", "RFC 8986")
            for i in range(3)])
        store.end_run(conf, "finished")
        rows = {r["run_id"]: r for r in store.runs_rows()}
    table = format_runs([rows[run], rows[conf]]).splitlines()
    assert table[1].split()[4:6] == ["2/2", "samples"] and table[1].split()[6] == "-"
    assert table[2].split()[4:6] == ["3", "cases"] and table[2].split()[6] == "-"


def test_progress_counts_a_stateful_runs_samples() -> None:
    import io

    from srperf.measure.progress import make_progress

    out = io.StringIO()
    view = make_progress(out)
    view.run_started("r1", "goodput", "virtual", "ebpf", 2, unit="sample")
    view.search_done()
    view.search_done()
    view.run_done("finished")
    lines = out.getvalue().splitlines()
    assert lines[0] == "run r1: 2 samples planned"
    assert lines[-1].startswith("run r1 finished: 2 samples in ")


# -- item 7: nightly without a baseline says why -----------------------------------------
def test_nightly_without_a_baseline_says_only_nightly_runs_count_and_which_run_it_would_take(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The store held a finished quick run with figures; nightly said only 'no baseline
    yet (first good run)'."""
    import xml.etree.ElementTree as ET

    exp = tmp_path / "one.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "one", "forwarder": "linux", "behaviors": ["end"], "packet_sizes": [64],
        "repetitions": 2, "search": {"algorithm": "bisect", "thresholds_pct": [0.5],
                                     "trial_duration_s": 0.5, "accuracy": "1%",
                                     "min_rate": "5%"}}))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "s49night", "testbed": str(_testbed(tmp_path)), "experiments": [str(exp)],
        "results": str(tmp_path / "r"), "reports": str(tmp_path / "reports")}))
    assert main(["nightly", str(suite)]) == 0      # an empty store: no other run either
    first = capsys.readouterr().out
    assert "only finished nightly runs of suite s49night" in first
    assert "no other run of one on s49sim has a figure" in first
    with ResultStore(tmp_path / "r" / "srperf.sqlite") as store:
        with store.engine.begin() as conn:   # as if the first night were a plain run
            conn.exec_driver_sql("UPDATE runs SET purpose = 'run', suite = NULL")
        plain = store.last_run_id()
    assert main(["nightly", str(suite)]) == 0
    out = capsys.readouterr().out
    assert "baseline none, no baseline" in out
    assert f"run {plain} (srperf run) would have been taken" in out
    junit = ET.parse(tmp_path / "reports" / "junit-s49night.xml").getroot()
    assert "only finished nightly runs" in junit.find(".//system-out").text


# -- item 10: trend ---------------------------------------------------------------------
def test_trend_says_not_measured_keeps_its_columns_and_dates_a_single_run(
        tmp_path: Path) -> None:
    """Never-measured tests were listed ``normal`` with empty charts, rows ``<test> /
    h_encaps`` broke the column layout, and a one-run chart had an axis of 0.6-1.4 days."""
    from srperf.results.trend import (NOT_MEASURED, NORMAL, RunFilter, TrendSettings,
                                      format_table, trends)
    from srperf.results.trend_report import render
    from srperf.results.trend_synth import night_date, write_run

    with ResultStore(tmp_path / "srperf.sqlite") as store:
        write_run(store, "s49tb", night_date("2026-03-01", 1),
                  {("end", 64): [500.0, 505.0], ("h_encaps", 64): [400.0, 401.0],
                   ("end_dt4", 64): "unsupported",
                   ("end_x", 64): ["generator_limited"] * 2})
        items = trends(store, RunFilter(testbed="s49tb"), TrendSettings(reference="h_encaps"))
    by_test = {t.key.test: t for t in items}
    assert by_test["end 64B PDR@0.5%"].cls == NORMAL
    assert by_test["end_x 64B PDR@0.5%"].cls == NOT_MEASURED
    lines = format_table(items).splitlines()
    relative = [x for x in lines if " / h_encaps" in x]
    assert relative, lines
    # every row's numbers start where the header's 'n' column does
    header = lines[0]
    n_at = header.index(" n gaps") + 1
    for line in lines[1:]:
        assert line[n_at - 1] == " " and line[n_at].isdigit(), (header, line)
    assert lines[-1].startswith(NOT_MEASURED) and "no figure in 1 run" in lines[-1]
    html = render(items, "t")
    assert f"{sum(t.cls == NOT_MEASURED for t in items)} not measured (no figure" in html
    assert "one run, 2026-03-01 02:00" in html and "days since" not in html


# -- item 12: the small ones ---------------------------------------------------------------
def test_run_help_lists_every_shipped_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    from srperf import resources

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    names = sorted(p.stem for p in resources.experiments_dir().glob("*.yaml"))
    assert len(names) > 4
    assert "shipped one (" + ", ".join(names) + ")" in text


def test_compare_notes_are_short_in_the_table_and_whole_below_it() -> None:
    from srperf.results.compare import NOTE_MAX, BehaviorChange, Comparison, format_markdown

    long = ("baseline: generator_limited x3 (the generator could not offer 75000 pps: "
            "offered 51234 pps in 1.0 s; " * 6).strip()
    c = Comparison("a", "b", 5.0, "welch", changes=[
        BehaviorChange("end", 64, 0.5, None, None, "generator_limited x3", "ok x3", None,
                       "not_comparable", long),
        BehaviorChange("end_x", 64, 0.5, None, None, "ok x3", "ok x3", None,
                       "not_comparable", "short note")])
    text = format_markdown(c)
    rows = [x for x in text.splitlines() if x.startswith("| end")]
    assert len(rows) == 2
    note = rows[0].rsplit("|", 2)[1].strip()
    assert len(note) <= NOTE_MAX + 8 and note.endswith("... [1]")
    assert rows[1].endswith("| short note |")
    assert "Notes in full:" in text and f"1. {' '.join(long.split())}" in text


def test_a_behavior_unsupported_for_want_of_vrf_is_explained_once() -> None:
    from srperf.cli.run import vrf_note

    outcomes = {("end", 64): ("measured", ""),
                ("end_dt4", 64): ("unsupported", "VRF device for table 100: Error: Unknown "
                                                 "device type."),
                ("end_dt4", 1500): ("unsupported", "VRF device for table 100: Error"),
                ("end_dx2", 64): ("unsupported", "no L2 port")}
    note = vrf_note(outcomes)
    assert note.startswith("NOTE: end_dt4 needs a VRF device") and note.count("end_dt4") == 1
    assert "end_dx2" not in note and "not a failure" in note
    assert vrf_note({("end", 64): ("measured", "")}) == ""
