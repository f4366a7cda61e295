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
