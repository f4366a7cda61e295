"""``srperf ab`` with a testbed per side (two kernels side by side) and on an emulated
SUT: which pairs are refused before anything runs (exit 2, naming key and value), how
the two runs and the comparison are stored, and that an emulated SUT's figures say so
in the output and the store.  Fast: two copies of the simulated testbed (models); the
emulated SUT is the model with a kernel target's environment and label, as
:mod:`srperf.testbeds.kernel_vm` gives them under TCG (no guest is booted here)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from srperf.cli.entry import main
from srperf.testbeds.simulated import SimulatedTestbed

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--trial-s", "0.2", "--budget", "20", "--min-blocks", "3", "--max-blocks", "4"]


def _model(tmp: Path, name: str) -> Path:
    """A copy of the simulated testbed named and prefixed ``name``."""
    path = tmp / f"{name}.yaml"
    text = (ROOT / "testbed" / "simulated.yaml").read_text()
    path.write_text(text.replace("name: simulated", f"name: {name}\nprefix: {name}"))
    return path


def _emulate(monkeypatch: pytest.MonkeyPatch, names: set[str]) -> None:
    """The model testbeds in ``names`` report what a kernel target under TCG reports."""
    environment = SimulatedTestbed.environment

    def env(self: SimulatedTestbed, forwarder: Any = None) -> dict[str, Any]:
        out = environment(self, forwarder)
        if self.config.name in names:
            out["execution"] = {"mode": "emulated", "how": "QEMU tcg"}
        return out

    def label(self: SimulatedTestbed, line: str) -> str:
        return f"[EMULATED tcg] {line}" if self.config.name in names else line

    monkeypatch.setattr(SimulatedTestbed, "environment", env)
    monkeypatch.setattr(SimulatedTestbed, "label_line", label)


def _db(tmp: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp / "results" / "srperf.sqlite")


def test_a_testbed_per_side_gives_two_runs_and_one_comparison(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _model(tmp_path, "k5ta"), _model(tmp_path, "k5tb")
    rc = main(["ab", "--a", "ipv6", "--b", "ipv6", "--a-testbed", str(a), "--b-testbed",
               str(b), "--results", str(tmp_path / "results"), *ARGS])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "A on k5ta, B on k5tb (both booted, alternating)" in out
    db = _db(tmp_path)
    runs = dict(db.execute("SELECT testbed, run_id FROM runs"))
    assert set(runs) == {"k5ta", "k5tb"}
    (run_id, baseline, detail), = db.execute(
        "SELECT run_id, baseline_run_id, detail FROM comparisons")
    assert (run_id, baseline) == (runs["k5tb"], runs["k5ta"])
    d = json.loads(detail)
    assert d["runs"] == {"A": runs["k5ta"], "B": runs["k5tb"]}
    assert d["config"]["a"]["testbed"] == str(a) and d["config"]["b"]["testbed"] == str(b)
    assert d["sides"]["B"] == f"ipv6 on testbed {b}"
    # every block's trials: A's in A's run, B's in B's run (the probes are repetition 0)
    n_blocks = len(d["blocks"])
    assert n_blocks >= 3
    for side, tb in (("A", "k5ta"), ("B", "k5tb")):
        (blocks,), = db.execute("SELECT COUNT(DISTINCT repetition) FROM trials WHERE "
                                "run_id = ? AND repetition > 0", (runs[tb],))
        assert blocks == n_blocks, side
    assert d["execution"] == {"mode": "native"}
    assert "[EMULATED" not in out


def test_pairs_of_testbeds_that_are_refused(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    a = _model(tmp_path, "k5ta")
    same = tmp_path / "same.yaml"
    same.write_text(a.read_text().replace("name: k5ta", "name: k5tc"))
    rc = main(["ab", "--a", "ipv6", "--b", "ipv6", "--a-testbed", str(a), "--b-testbed",
               str(same), "--results", str(tmp_path / "results"), *ARGS])
    err = capsys.readouterr().err
    assert rc == 2 and "prefix" in err and "k5ta" in err
    virtual = tmp_path / "k5tv.yaml"
    virtual.write_text((ROOT / "testbed" / "virtual.yaml").read_text()
                       .replace("name: virtual", "name: k5tv")
                       .replace("prefix: srp", "prefix: k5tv"))
    rc = main(["ab", "--a", "ipv6", "--b", "ipv6", "--a-testbed", str(a), "--b-testbed",
               str(virtual), "--results", str(tmp_path / "results"), *ARGS])
    err = capsys.readouterr().err
    assert rc == 2 and "b.testbed" in err and "model" in err
    rc = main(["ab", "--a", "ipv6", "--b", "ipv6", "--b-testbed", "", "--results",
               str(tmp_path / "results"), *ARGS])
    assert rc == 2 and "b.testbed" in capsys.readouterr().err
    assert not (tmp_path / "results" / "srperf.sqlite").exists()


def test_an_emulated_sut_is_labelled_in_the_output_and_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    a = _model(tmp_path, "k5ta")
    _emulate(monkeypatch, {"k5ta"})
    rc = main(["ab", "--a", "end_dt6", "--b", "end_dt4", "--testbed", str(a), "--results",
               str(tmp_path / "results"), *ARGS])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [x for x in out.splitlines() if x.startswith(("block ", "at ", "stopped"))
             or "] block " in x or "] at " in x or "] stopped" in x]
    assert lines and all(x.startswith("[EMULATED tcg] ") for x in lines), lines
    assert "NOTE: [EMULATED tcg] the SUT ran under software emulation" in out
    db = _db(tmp_path)
    (detail,), = db.execute("SELECT detail FROM comparisons")
    assert json.loads(detail)["execution"] == {"mode": "emulated", "how": "QEMU tcg"}
    (env,), = db.execute("SELECT environment FROM runs")
    assert json.loads(env)["execution"]["mode"] == "emulated"


def test_an_emulated_side_is_never_paired_with_a_native_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _model(tmp_path, "k5ta"), _model(tmp_path, "k5tb")
    _emulate(monkeypatch, {"k5tb"})
    rc = main(["ab", "--a", "ipv6", "--b", "ipv6", "--a-testbed", str(a), "--b-testbed",
               str(b), "--results", str(tmp_path / "results"), *ARGS])
    captured = capsys.readouterr()
    assert rc == 1, captured.out
    assert "emulated" in captured.err and "native" in captured.err
    db = _db(tmp_path)
    assert {s for s, in db.execute("SELECT status FROM runs")} == {"failed"}
    assert db.execute("SELECT COUNT(*) FROM trials").fetchone() == (0,)
    assert db.execute("SELECT COUNT(*) FROM comparisons").fetchone() == (0,)
