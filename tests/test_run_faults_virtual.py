"""Faults on a real virtual testbed: kill -9 then --resume, and the disk full.

``srperf run`` runs in a child process; the SUT is the Linux kernel in a
namespace configured by its CFG script, so a kill -9 really leaves a behavior
configured, and the resume must clean it.  The disk-full case writes the results
to a small tmpfs the test mounts, and fills it once a search has ended.

Checked: every search that ended before the fault kept (the same trial rows),
at most the running search lost, the run ending ``finished`` under its own id
after the resume, and nothing left behind (namespaces of a testbed the run
made, SUT configuration, the run's temporary files).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from srperf.config.loader import load_testbed
from srperf.util.netns import netns_names, run
from srperf.testbeds.virtual import VirtualTestbed
from srperf.util.wording import count

from sut_state import state_diff
from test_run_states import SRPERF, _env, _leftovers, _query, _run_row, _wait_for_searches
from busy_host import BUSY_HOST_OPTIONS

pytestmark = [pytest.mark.netns, pytest.mark.slow]

PREFIX = "h16a"
SUT = f"{PREFIX}-sut"
BEHAVIORS = ["end", "h_encaps"]   # both leave seg6 routes on the SUT while configured
REPETITIONS = 3




def _files(tmp_path: Path, repetitions: int = REPETITIONS) -> tuple[Path, Path]:
    exp = {"name": "faults", "forwarder": "linux", "behaviors": BEHAVIORS,
           "repetitions": repetitions, "verify": False,
           "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 0.2,
                      "accuracy": "10%", "min_rate": "5%", "max_rate": "100%"}}
    tb = {"name": "faults", "kind": "virtual", "prefix": PREFIX,
          "tester": {"line_rate_pps": 200000, "options": BUSY_HOST_OPTIONS}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    return tmp_path / "exp.yaml", tmp_path / "tb.yaml"


def _ours() -> list[str]:
    return [n for n in netns_names() if n.startswith(f"{PREFIX}-")]


def sut_config() -> dict[str, list[str]]:
    """What a CFG script may change on the SUT: routes (every table but the kernel's own
    ``local`` one, whose multicast routes come and go with the links), rules, links."""
    def j(*argv: str) -> list[str]:
        out = run(["ip", "-j", *argv], ns=SUT, check=False).stdout
        return sorted(json.dumps(i, sort_keys=True) for i in (json.loads(out) if out.strip()
                                                               else [])
                      if i.get("table") != "local")
    return {"routes6": j("-6", "route", "show", "table", "all"),
            "routes4": j("-4", "route", "show", "table", "all"),
            "rules6": j("-6", "rule", "show"), "links": j("link", "show")}


def _seg6(config: dict[str, list[str]]) -> list[str]:
    return [r for r in config["routes6"] if "seg6" in r]


@pytest.fixture
def testbed_file(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    exp, tb = _files(tmp_path)
    try:
        yield exp, tb
    finally:
        VirtualTestbed(load_testbed(tb)).down()


def _unended_trials(db: Path) -> int:
    return _query(db, "SELECT COUNT(*) FROM trials WHERE search_seq NOT IN "
                      "(SELECT search_seq FROM outcomes)")[0][0]


@pytest.mark.parametrize("premade", [False, True], ids=["run-made-testbed", "reused-testbed"])
def test_kill_9_mid_search_then_resume(tmp_path: Path, testbed_file: tuple[Path, Path],
                                       premade: bool) -> None:
    exp, tb = testbed_file
    results = tmp_path / "res"
    db = results / "srperf.sqlite"
    baseline: dict[str, list[str]] | None = None
    if premade:
        testbed = VirtualTestbed(load_testbed(tb))
        testbed.up()
        testbed.close()
        baseline = sut_config()
    proc = subprocess.Popen([SRPERF, "run", str(exp), "--testbed", str(tb),
                             "--results", str(results)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=_env(tmp_path))
    try:
        _wait_for_searches(db, 2, proc, timeout=180)
        deadline = time.monotonic() + 60
        while _unended_trials(db) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)   # in the third search, some of its trials stored
        assert _unended_trials(db) >= 2
    finally:
        proc.kill()
        proc.wait()
    run_id, status, *_ = _run_row(db)
    assert status == "running"
    ended = [s for (s,) in _query(db, "SELECT search_seq FROM outcomes")]
    kept = _query(db, "SELECT id, search_seq, rate_pps, received FROM trials WHERE search_seq "
                      f"IN ({','.join(map(str, ended))}) ORDER BY id")
    lost = _unended_trials(db)
    # the fault is real: the SUT was left configured, the namespaces and tmp files stay
    assert _seg6(sut_config()), "kill -9 mid-search should leave the behavior configured"
    assert SUT in _ours()
    assert list(results.glob("runs/*/tmp/*")), "the dead run's temporary files"

    done = subprocess.run([SRPERF, "run", "--resume", run_id, "--results", str(results)],
                          capture_output=True, text=True, timeout=300, env=_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count(lost, 'trial')} of an unfinished search dropped" in done.stdout
    rid, status, sig, reason, *_ = _run_row(db)
    assert (rid, status, sig, reason) == (run_id, "finished", None, None)
    planned = len(BEHAVIORS) * REPETITIONS
    seqs = [s for (s,) in _query(db, "SELECT search_seq FROM outcomes ORDER BY search_seq")]
    assert seqs == list(range(1, planned + 1))
    assert _query(db, "SELECT id, search_seq, rate_pps, received FROM trials WHERE search_seq "
                      f"IN ({','.join(map(str, ended))}) ORDER BY id") == kept
    assert _unended_trials(db) == 0
    assert not _leftovers(results)
    if premade:
        # the testbed was not the run's: it stays, and the SUT is as it was before
        assert SUT in _ours()
        assert not state_diff(sut_config(), baseline), state_diff(sut_config(), baseline)
    else:
        # the dead run brought the testbed up: its resume removes it
        assert not _ours()
    print(f"kill -9 ({'reused' if premade else 'run-made'} testbed): {len(ended)} of "
          f"{planned} searches ended and kept ({len(kept)} trials), {lost} trials of the "
          "running search lost and redone")


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 4 MiB tmpfs of our own, unmounted (and removed) whatever happens."""
    mnt = Path(tempfile.mkdtemp(prefix="h16a-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "h16a-tmpfs",
                    str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        mnt.rmdir()


def _fill(mnt: Path) -> int:
    """Fill the file system; returns the bytes written."""
    written = 0
    with open(mnt / "filler", "wb", buffering=0) as out:
        for block in (65536, 4096, 512, 1):
            try:
                while True:
                    written += out.write(b"\0" * block)
            except OSError:
                pass
    return written


def test_disk_full_while_writing_results(tmp_path: Path, testbed_file: tuple[Path, Path],
                                         small_disk: Path) -> None:
    exp, tb = testbed_file
    testbed = VirtualTestbed(load_testbed(tb))
    testbed.up()
    testbed.close()
    baseline = sut_config()
    results = small_disk / "res"
    db = results / "srperf.sqlite"
    proc = subprocess.Popen([SRPERF, "run", str(exp), "--testbed", str(tb),
                             "--results", str(results)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path))
    try:
        _wait_for_searches(db, 1, proc, timeout=180)
        _fill(small_disk)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [line for line in err.splitlines() if line.startswith("srperf:")]
    assert proc.returncode == 1, err
    assert len(lines) == 1 and str(results) in lines[0], err
    assert "Traceback" not in err
    # the store is not corrupted: earlier trials are readable
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kept = con.execute("SELECT COUNT(*) FROM trials WHERE search_seq IN "
                           "(SELECT search_seq FROM outcomes)").fetchone()[0]
        assert kept >= 3
    finally:
        con.close()
    # the SUT is clean (the testbed was not the run's: it stays)
    assert sut_config() == baseline
    # once there is room again, the run is resumed and finishes
    partial = _unended_trials(db)
    (small_disk / "filler").unlink()
    run_id = _query(db, "SELECT run_id FROM runs")[0][0]
    done = subprocess.run([SRPERF, "run", "--resume", run_id, "--results", str(results)],
                          capture_output=True, text=True, timeout=300, env=_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _run_row(db)[1] == "finished"
    assert not _leftovers(results, tmp_path)
    assert sut_config() == baseline
    assert f"{count(partial, 'trial')} of an unfinished search dropped" in done.stdout
    print(f"disk full: exit 1, {kept} trials of ended searches kept, {partial} trials of the "
          f"running search lost and redone on resume; stderr:\n{err}")
