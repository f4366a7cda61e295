"""``srperf runs`` reads an SQLite store with ``sqlite3`` (:mod:`srperf.results.runs_table`):
the rows and the printed table must be those of the SQLAlchemy store, on a real store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from srperf.cli.runs import format_runs
from srperf.drivers.base import TrialResult
from srperf.results import schema
from srperf.results.runs_table import SCHEMA_VERSION, sqlite_runs_rows
from srperf.results.store import ResultStore, TrialKey

SRPERF = str(Path(sys.executable).parent / "srperf")


def _trial(rate: float) -> TrialResult:
    return TrialResult(rate_pps=rate, duration_s=1.0, intended=1000, sent=1000, refused=0,
                       received=990, elapsed_s=1.0)


def _store(where: Path) -> Path:
    """A store holding runs in every state, trials, outcomes and two equal start times."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    path = where / "srperf.sqlite"
    with ResultStore(path) as store:
        done = store.begin_run("quick", "virtual.yaml", "linux", {}, planned=3)
        key = TrialKey("end", "linux", 64, 1, 1)
        for rate in (1e5, 2e5, 3e5):
            store.add_trial(done, key, _trial(rate))
        store.add_outcome(done, "end", "linux", 64, "measured")
        store.add_outcome(done, "end_dt4", "linux", 64, "unsupported", "Error: no VRF")
        store.end_run(done, "finished")
        stopped = store.begin_run("quick", "ssh.yaml", "vpp", {}, planned=7)
        store.add_trial(stopped, key, _trial(1e5))
        store.end_run(stopped, "interrupted", signal="SIGTERM")
        failed = store.begin_run("table33", "trex.yaml", "ebpf", {})
        store.end_run(failed, "failed", reason="StoreError: disk full")
        store.begin_run("e", "t", "linux", {}, planned=2)              # running, alive
        dead = store.begin_run("e", "t", "linux", {}, planned=2)
        elsewhere = store.begin_run("e", "t", "linux", {}, planned=1)
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE runs SET pid = ? WHERE run_id = ?", (gone.pid, dead))
            conn.exec_driver_sql("UPDATE runs SET host = 'another-host' WHERE run_id = ?",
                                 (elsewhere,))
            conn.exec_driver_sql("UPDATE runs SET started = (SELECT started FROM runs "
                                 "WHERE run_id = ?) WHERE run_id = ?", (done, stopped))
    return path


def test_the_schema_version_is_the_stores() -> None:
    assert SCHEMA_VERSION == schema.CURRENT_VERSION


@pytest.mark.parametrize("limit", [None, 1, 2, 4, 100])
def test_rows_equal_the_sqlalchemy_rows(tmp_path: Path, limit: int | None) -> None:
    path = _store(tmp_path)
    with ResultStore(path) as store:
        expected = store.runs_rows(limit)
    got = sqlite_runs_rows(str(path), "--db", limit)
    assert got == expected
    assert [type(v) for r in got for v in r.values()] == \
        [type(v) for r in expected for v in r.values()]
    assert len(got) == min(limit or 6, 6)
    if len(got) == 6:
        assert {r["status"] for r in got} == {"finished", "interrupted", "failed", "running",
                                              "dead"}


@pytest.mark.parametrize("argv", [[], ["-n", "2"], ["--limit", "0"]])
def test_the_printed_table_is_the_sqlalchemy_one(tmp_path: Path, argv: list[str]) -> None:
    path = _store(tmp_path)
    limit = int(argv[1]) if argv else 20
    with ResultStore(path) as store:
        expected = format_runs(store.runs_rows(limit or None)) + "\n"
    proc = subprocess.run([SRPERF, "runs", "--results", str(tmp_path), *argv],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, COLUMNS="200"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_a_store_to_make_or_migrate_is_left_to_sqlalchemy(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    assert sqlite_runs_rows(str(new), "--db", None) is None   # made empty, 0600
    assert new.exists() and new.stat().st_mode & 0o777 == 0o600
    proc = subprocess.run([SRPERF, "runs", "--db", str(new)], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "no runs\n"), proc.stderr
    assert sqlite_runs_rows(str(new), "--db", None) == []     # made by the store now


def test_the_store_guard_still_refuses(tmp_path: Path) -> None:
    path = _store(tmp_path)
    os.chmod(path, 0o666)
    proc = subprocess.run([SRPERF, "runs", "--results", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "not trusted as a results store" in proc.stderr


def test_a_bad_limit_is_refused_as_before(tmp_path: Path) -> None:
    _store(tmp_path)
    proc = subprocess.run([SRPERF, "runs", "--results", str(tmp_path), "-n", "2000000"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--limit = 2000000" in proc.stderr and "1000000" in proc.stderr
