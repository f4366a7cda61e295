"""``srperf ab`` on a real kernel target: Debian's 6.1 guest booted once, two behaviors
reconfigured per trial through its console, a few blocks at an offered load above what
an emulated guest forwards (18-41 kpps).  Asserts what the code guarantees: the
comparison is stored with how the SUT executed, an emulated SUT says so on its lines, a
figure exists and is finite, and no QEMU, tap, namespace or run directory is left.

Slow, ``netns``: one QEMU guest (TCG here), testbed k5tk."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from srperf.cli.entry import main

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "k5tk"
pytestmark = [pytest.mark.netns, pytest.mark.slow]


def _testbed(tmp: Path) -> Path:
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86 is installed by scripts/install.sh")
    path = tmp / f"{PREFIX}.yaml"
    path.write_text((ROOT / "testbed" / "kernel-6.1.yaml").read_text()
                    .replace("name: kernel-6.1", f"name: {PREFIX}")
                    .replace("prefix: k61", f"prefix: {PREFIX}"))
    return path


def _left_behind() -> list[str]:
    left = [str(p) for p in [Path(f"/run/srperf/kernel-{PREFIX}")] if p.exists()]
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [n.split()[0] for n in names.splitlines() if n.startswith(PREFIX)]
    qemu = subprocess.run(["pgrep", "-f", f"-name srperf-kernel-{PREFIX} "],
                          capture_output=True, text=True).stdout.split()
    return left + [f"qemu {pid}" for pid in qemu]


def test_ab_on_the_6_1_guest_is_stored_with_its_execution_and_cleans_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tb = _testbed(tmp_path)
    results = tmp_path / "results"
    try:
        code = main(["ab", "--testbed", str(tb), "--a", "ipv6", "--b", "end",
                     "--load", "60000", "--trial-s", "0.5", "--min-blocks", "3",
                     "--max-blocks", "3", "--budget", "300", "--results", str(results)])
    finally:
        left = _left_behind()
    out = capsys.readouterr().out
    assert not left, f"left behind: {left}"
    assert code == 0, out   # measured-ok: srperf ab exits 0 whatever it measured
    db = sqlite3.connect(results / "srperf.sqlite")
    (detail,), = db.execute("SELECT detail FROM comparisons")
    d = json.loads(detail)
    (env,), = db.execute("SELECT environment FROM runs")
    execution = json.loads(env)["execution"]
    assert d["execution"] == execution and execution["mode"] in ("emulated", "native")
    blocks = [x for x in out.splitlines() if "block " in x and ("B/A" in x or "dropped" in x)]
    assert blocks, out
    if execution["mode"] == "emulated":
        assert all(x.startswith("[EMULATED tcg] ") for x in blocks), blocks
        assert "the SUT ran under software emulation" in out
    result = d["result"]
    assert result["n_blocks"] == len(d["blocks"])
    if result["n_blocks"] == 0:   # every block dropped: the generator fell behind
        assert d["blocks_dropped"] > 0 and result["status"] == "not_enough_evidence"
    else:
        assert math.isfinite(result["ratio"]) and result["ratio"] > 0
    behaviors = {b for b, in db.execute("SELECT DISTINCT behavior FROM trials")}
    assert behaviors == {"ipv6", "end"}
