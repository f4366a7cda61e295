"""``srperf ab`` end to end on the simulated SUT (a model: no traffic), its A/B file
form, and its refusals of bad input (exit 2, naming file, key and value)."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from srperf.cli.entry import main

ARGS = ["--testbed", "simulated", "--trial-s", "0.2", "--budget", "30"]


def test_ab_on_the_model_stores_every_trial_and_the_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["ab", "--a", "end", "--b", "end_x", "--results", str(tmp_path), *ARGS])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "MODEL" in out and "are not resolved" in out
    assert "stopped: width_reached" in out or "stopped: budget_spent" in out
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    (run_id, purpose, state), = db.execute("SELECT run_id, purpose, status FROM runs")
    assert (purpose, state) == ("ab", "finished")
    (verdict, detail), = db.execute("SELECT verdict, detail FROM comparisons")
    d = json.loads(detail)
    res = d["result"]
    assert verdict == res["status"] and d["kind"] == "paired_ab"
    assert res["n_blocks"] == len(d["blocks"]) >= 8
    assert all(math.isfinite(res[k]) for k in ("ratio", "low", "high", "mdd_pct"))
    assert res["low"] <= res["ratio"] <= res["high"]
    assert {b["order"] for b in d["blocks"]} <= {"ABBA", "BAAB"}
    # every trial is stored: 4 a block, plus the two searches that chose the load
    trials = db.execute("SELECT behavior, repetition FROM trials WHERE run_id = ?",
                        (run_id,)).fetchall()
    per_block = [t for t in trials if t[1] > 0]
    assert len(per_block) == 4 * res["n_blocks"]
    assert {t[0] for t in trials} == {"end", "end_x"}


def test_ab_file_form_and_a_over_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "aa.yaml"
    f.write_text("a: end\nb: end\nload_pps: 2000000\ntrial_s: 0.2\nbudget_s: 20\n"
                 "testbed: simulated\nmax_blocks: 8\n")
    assert main(["ab", str(f), "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "at 2000.0 kpps offered" in out and "stopped:" in out


def test_ab_never_takes_a_figure_from_a_load_the_sut_forwarded_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At a load below the SUT's capacity the received rate is the generator's: refused,
    saying so, never a ratio."""
    rc = main(["ab", "--a", "end", "--b", "end", "--load", "100000", "--results",
               str(tmp_path), *ARGS])
    assert rc == 1
    assert "not saturated" in capsys.readouterr().err


@pytest.mark.parametrize("content, key", [
    ("a: end\n", "b"),
    ("a: end\nb: nosuch\n", "b"),
    ("a: end\nb: end\nwidth_pct: 0\n", "width_pct"),
    ("a: end\nb: end\nbudget_s: soon\n", "budget_s"),
    ("a: end\nb: end\ncolour: red\n", "colour"),
])
def test_ab_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              content: str, key: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    assert main(["ab", str(f), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and key in err
    assert not (tmp_path / "srperf.sqlite").exists()   # no run was opened
