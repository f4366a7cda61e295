"""No program, map, link or pinned object of xdpgen, no xdpgen process and no namespace is
left by ``srperf run`` with ``tester.options.engine: xdp`` (issue 43): after a run that
succeeds, one that fails mid-run, and a ``kill -9`` of the srperf process itself.

The objects are found by id, not by name (tests/xdpgen_objects.py: other helpers may run
xdpgen at the same time); a watcher that saw no program fails the test (it cannot pass
unseen).  The run that succeeds is tests/test_engine_xdp_run.py's.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from srperf.cli.entry import main
from srperf.drivers.linux import LinuxGenerator
from srperf.util.netns import netns_names
from xdpgen_objects import Seen, pinned, watching

pytestmark = [pytest.mark.netns, pytest.mark.slow]

EXP: dict[str, Any] = {
    "name": "t5e-clean", "forwarder": "linux", "behaviors": ["ipv6"], "repetitions": 1,
    "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 0.1,
               "accuracy": "20%", "min_rate": "10%", "max_rate": "40%"}}


def _testbed(prefix: str) -> dict[str, Any]:
    return {"name": prefix, "kind": "virtual", "prefix": prefix,
            "tester": {"line_rate_pps": 200000, "options": {"engine": "xdp"}}}


@pytest.fixture
def files(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path, Path]]:
    """(prefix, experiment file, testbed file); the testbed's namespaces are removed
    afterwards whatever happened (a test asserts first that none was left)."""
    prefix = {"test_xdp_run_that_fails_mid_run_leaves_nothing": "t5ef",
              "test_kill_9_of_the_run_leaves_no_xdpgen_object": "t5ek"}[request.node.name]
    exp, tb = tmp_path / "exp.yaml", tmp_path / "tb.yaml"
    exp.write_text(yaml.safe_dump(EXP))
    tb.write_text(yaml.safe_dump(_testbed(prefix)))
    try:
        yield prefix, exp, tb
    finally:
        for ns in netns_names():
            if ns.startswith(f"{prefix}-"):
                subprocess.run(["ip", "netns", "del", ns], check=False)
        Path(f"/run/srperf/virtual-{prefix}.testbed.json").unlink(missing_ok=True)


def _namespaces(prefix: str) -> list[str]:
    return [n for n in netns_names() if n.startswith(f"{prefix}-")]


def db_row(results: Path, sql: str) -> tuple[Any, ...]:
    with sqlite3.connect(results / "srperf.sqlite") as db:
        return db.execute(sql).fetchone()


def test_xdp_run_that_fails_mid_run_leaves_nothing(files: tuple[str, Path, Path],
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The second trial raises (a planted internal error, while the resident xdpgen is
    up): the run ends failed (exit 1) and closes the generator and the testbed."""
    prefix, exp, tb = files
    real = LinuxGenerator.trial
    calls: list[float] = []

    def trial_then_fail(self: LinuxGenerator, rate_pps: float, duration_s: float,
                        **kw: Any) -> Any:
        """TEST DOUBLE (not srperf's): the real trial once, then a failure mid-run."""
        calls.append(rate_pps)
        if len(calls) > 1:
            assert self.resident_pid is not None, "xdpgen should be up"
            raise RuntimeError("planted failure mid-run (test double)")
        return real(self, rate_pps, duration_s, **kw)

    monkeypatch.setattr(LinuxGenerator, "trial", trial_then_fail)
    with watching(f"{prefix}-tester") as seen:
        rc = main(["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "r")])
    assert rc == 1 and len(calls) == 2, (rc, calls)
    status, = db_row(tmp_path / "r", "SELECT status FROM runs")
    assert status == "failed"
    assert seen.progs and seen.maps, "the watcher never saw xdpgen's program"
    assert not seen.gone(), "xdpgen's objects outlived the failed run"
    assert not pinned(prefix) and not _namespaces(prefix)


def test_kill_9_of_the_run_leaves_no_xdpgen_object(files: tuple[str, Path, Path],
                                                  tmp_path: Path) -> None:
    """``kill -9`` of the srperf process mid-search: its resident xdpgen reads the end of
    its stdin (or a broken stdout) and ends, and the kernel frees its program, maps and
    link with its file descriptors.  The namespaces stay (nothing runs in a killed
    process to remove them); ``srperf testbed down`` removes them."""
    prefix, exp, tb = files
    srperf = str(Path(sys.executable).parent / "srperf")
    log = (tmp_path / "run.log").open("w")
    proc = subprocess.Popen([srperf, "run", str(exp), "--testbed", str(tb), "--results",
                             str(tmp_path / "r")], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    seen = Seen(f"{prefix}-tester")
    try:
        end = time.monotonic() + 120
        while not seen.progs and proc.poll() is None and time.monotonic() < end:
            seen.look()
            time.sleep(0.05)
        assert seen.progs and seen.pids, (tmp_path / "run.log").read_text()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        log.close()
    assert proc.returncode == -signal.SIGKILL
    assert not seen.gone(), "xdpgen or its objects outlived kill -9 of the run"
    assert not pinned(prefix)
    assert _namespaces(prefix), "the killed run's testbed should still be there"
    down = subprocess.run([srperf, "testbed", "down", str(tb)], capture_output=True, text=True,
                          timeout=120)
    assert down.returncode == 0, down.stderr
    assert not _namespaces(prefix)
