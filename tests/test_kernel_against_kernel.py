"""Kernel against kernel on real guests: one experiment on Debian's 6.1 and 6.12 kernel
targets, repetitions interleaved, then ``srperf compare`` of the two runs; and Ctrl-C in
the middle of it.  Whatever happens, no QEMU, tap, namespace or run directory is left.

Slow, ``netns``: two QEMU guests (TCG here), booted by srperf as testbeds k4a61, k4a612.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow]
# one behavior, a short search whose range fits what an emulated guest forwards
SETTINGS = ["behaviors=[ipv6]", "search.algorithm=bisect", "search.min_rate=2000",
            "search.max_rate=40000", "search.accuracy=8000", "search.trial_duration_s=0.5"]


def _testbeds(tmp: Path) -> list[Path]:
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86 is installed by scripts/install.sh")
    out = []
    for release, prefix in (("6.1", "k4a61"), ("6.12", "k4a612")):
        path = tmp / f"{prefix}.yaml"
        src = (ROOT / "testbed" / f"kernel-{release}.yaml").read_text()
        path.write_text(src.replace(f"name: kernel-{release}", f"name: {prefix}")
                        .replace(f"prefix: k{release.replace('.', '')}", f"prefix: {prefix}"))
        out.append(path)
    return out


def _left_behind() -> list[str]:
    """QEMU processes, namespaces and run directories of this module's testbeds."""
    left = []
    for prefix in ("k4a61", "k4a612"):
        if Path(f"/run/srperf/kernel-{prefix}").exists():
            left.append(f"/run/srperf/kernel-{prefix}")
        name = f"srperf-kernel-{prefix}".encode()
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if b"\0-name\0" + name + b"\0" in b"\0" + cmdline.read_bytes():
                    left.append(f"qemu {cmdline.parent.name} ({prefix})")
            except OSError:
                pass
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [n.split()[0] for n in names.splitlines() if n.startswith("k4a6")]
    return left


def test_quick_on_6_1_and_6_12_interleaved_then_compared(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _testbeds(tmp_path)
    results = tmp_path / "results"
    args = ["run", "quick", "--testbed", str(a), "--testbed", str(b), "--repetitions", "2",
            "--results", str(results)]
    for s in SETTINGS:
        args += ["--set", s]
    try:
        code = main(args)
    finally:
        left = _left_behind()
    out = capsys.readouterr().out
    assert not left, f"left behind: {left}"
    # 0, or 3 when every search was generator-limited: on a loaded 2-vCPU host the
    # pacer on the tester's CPU can be starved (a status, never a figure)
    assert code in (0, 3), out
    with ResultStore(results / "srperf.sqlite") as store:
        runs = store.frame("runs").sort_values("started")
        ids = list(runs["run_id"])
        searches = store.frame("searches").sort_values("id")
        order = [(r.run_id, r.repetition) for r in searches.itertuples()]
        envs = [store.run_row(i)["environment"] for i in ids]
    assert order == [(ids[0], 1), (ids[1], 1), (ids[0], 2), (ids[1], 2)]
    releases = [e["kernel_target"]["uname_r"] for e in envs]
    assert releases[0].startswith("6.1.0-") and releases[1].startswith("6.12.")
    tcg = envs[0]["kernel_target"]["accelerator"] == "tcg"
    trial_lines = [x for x in out.splitlines() if " trial" in x and "kpps" in x]
    assert len(trial_lines) >= 4
    if tcg:   # every trial line of an emulated search says so
        assert all("[EMULATED tcg]" in x for x in trial_lines), trial_lines
    assert "idle between its turns" in out

    # what the code guarantees, not how two kernels compare: an exit code of a verdict
    # (0, or 1 for a regression: a side failed to verify) and a labelled table
    assert main(["compare", ids[0], ids[1], "--results", str(results)]) in (0, 1)
    cmp_out = capsys.readouterr().out
    # two repetitions a side can carry no verdict on the rates (issue 48)
    assert "not_enough_evidence" in cmp_out or "not_comparable" in cmp_out, cmp_out
    assert f"run {ids[0]}: {releases[0]}" in cmp_out and f"run {ids[1]}: {releases[1]}" \
        in cmp_out
    assert "| ipv6 | 64 | 0.5 |" in cmp_out
    # two repetitions a side: a ratio without interval, or the status that has none
    assert "n too small" in cmp_out or "generator_limited" in cmp_out


def test_ctrl_c_during_an_interleaved_run_leaves_nothing(tmp_path: Path) -> None:
    """The simulated SUT takes the first turn (no second guest to boot), the 6.1 guest
    the second; Ctrl-C during the guest's first search ends both runs."""
    b = _testbeds(tmp_path)[0]
    a = tmp_path / "k4asim.yaml"
    a.write_text((ROOT / "testbed" / "simulated.yaml").read_text()
                 .replace("name: simulated", "name: k4asim\nprefix: k4asim"))
    results = tmp_path / "results"
    argv = [sys.executable, "-m", "srperf.cli", "run", "quick", "--testbed", str(a),
            "--testbed", str(b), "--repetitions", "3", "--results", str(results)]
    for s in SETTINGS:
        argv += ["--set", s]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=ROOT)
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 240
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            # the guest's first search has a trial (the simulated run's came first)
            if sum("ipv6 64B rep 1" in x and "trial 1 " in x for x in seen) >= 2:
                proc.send_signal(signal.SIGINT)
                break
        else:
            pytest.fail("no second kernel's trial within 240 s:\n" + "".join(seen[-30:]))
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = _left_behind()
    assert not left, f"left behind: {left}"
    assert proc.returncode != 0, "".join(seen) + rest
    with ResultStore(results / "srperf.sqlite") as store:
        states = {r["testbed"]: r["status"] for r in store.runs_rows()}
    assert states == {"k4asim": "interrupted", "k4a61": "interrupted"}, "".join(seen) + rest
