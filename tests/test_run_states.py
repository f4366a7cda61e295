"""Run states, signals in the foreground and the background, kill -9 then --resume.

Runs the real ``srperf`` command in a child process on the simulated testbed (a
MODEL SUT; ``wall_time_scale`` makes its trials take wall-clock time so that a
signal lands mid-run).  What is checked is the bookkeeping, which needs no
traffic: the status and its signal or reason, the searches and trials kept, a
dead process told from a live one, nothing left behind.  The kill -9/resume on
a real SUT (clean by its CFG script) is in test_run_faults_virtual.py.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.results.liveness import ProcessId, is_alive, this_process
from srperf.results.store import ResultStore
from srperf.util.wording import count

SRPERF = str(Path(sys.executable).parent / "srperf") \
    if (Path(sys.executable).parent / "srperf").exists() else (shutil.which("srperf") or "srperf")
BEHAVIORS = ["ipv6", "end", "h_encaps"]
REPETITIONS = 6


def _files(tmp_path: Path, repetitions: int = REPETITIONS,
           scale: float = 0.25) -> tuple[Path, Path]:
    exp = {"name": "states", "forwarder": "linux", "behaviors": BEHAVIORS,
           "repetitions": repetitions,
           "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 0.2,
                      "accuracy": "5%", "min_rate": "5%", "max_rate": "100%"}}
    tb = {"name": "simstates", "kind": "simulated",
          "tester": {"driver": "simulated", "line_rate_pps": 1500000},
          "simulated": {"capacity_pps": {"default": 1000000, "end": 800000},
                        "capacity_jitter": 0.02, "wall_time_scale": scale}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    return tmp_path / "exp.yaml", tmp_path / "tb.yaml"


def _query(db: Path, sql: str, *args: Any) -> list[tuple]:
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _wait_for_searches(db: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until ``n`` searches of the run have ended (outcome rows)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        try:
            if _query(db, "SELECT COUNT(*) FROM outcomes")[0][0] >= n:
                return
        except sqlite3.OperationalError:
            pass   # not created yet
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} searches ended in {timeout} s")


def _leftovers(results: Path, base: Path | None = None) -> list[str]:
    """Temporary files a run could leave: its own directory, and anything in the system
    temporary directory the children are given (:func:`_env`; /tmp itself is shared
    with other processes of the machine)."""
    return sorted(glob.glob(str(results / "runs" / "*"))
                  + glob.glob(str((base or results.parent) / "systmp" / "*")))


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "systmp").mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp_path / "systmp")}


def _run_row(db: Path) -> tuple:
    rows = _query(db, "SELECT run_id, status, signal, reason, pid, host, planned FROM runs")
    assert len(rows) == 1, rows
    return rows[0]


# -- the store ----------------------------------------------------------------------------
def test_end_states_carry_their_signal_or_reason(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite") as store:
        ids = [store.begin_run("e", "t", "linux", {}, planned=3) for _ in range(4)]
        store.end_run(ids[0], "finished")
        store.end_run(ids[1], "interrupted", signal="SIGTERM")
        store.end_run(ids[2], "failed", reason="StoreError: disk full")
        store.end_run(ids[3], "failed", reason="   ")
        with pytest.raises(ValueError):
            store.end_run(ids[0], "interrupted")      # no signal named
        with pytest.raises(ValueError):
            store.end_run(ids[0], "crashed")
        rows = {r["run_id"]: r for r in (store.run_row(i) for i in ids) if r}
    assert rows[ids[0]]["status"] == "finished" and rows[ids[0]]["reason"] is None
    assert (rows[ids[1]]["status"], rows[ids[1]]["signal"]) == ("interrupted", "SIGTERM")
    assert rows[ids[1]]["reason"] == "interrupted by SIGTERM"
    assert rows[ids[2]]["reason"] == "StoreError: disk full"
    assert rows[ids[3]]["reason"].strip(), "a failed run's reason is never empty"
    assert all(r["planned"] == 3 and r["pid"] == os.getpid() for r in rows.values())


def test_a_running_run_of_a_dead_process_is_shown_dead(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    with ResultStore(tmp_path / "s.sqlite") as store:
        alive = store.begin_run("e", "t", "linux", {}, planned=2)
        dead = store.begin_run("e", "t", "linux", {}, planned=2)
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE runs SET pid = ? WHERE run_id = ?", (gone.pid, dead))
        df = store.runs_overview().set_index("run_id")
    assert df.loc[alive, "status"] == "running"
    assert df.loc[dead, "status"] == "dead"
    assert f"--resume {dead}" in df.loc[dead, "reason"]
    # a PID reused by another process is not the run's
    me = this_process()
    assert is_alive(me) is True
    assert is_alive(ProcessId(me.pid, me.host, "1")) is False
    assert is_alive(ProcessId(me.pid, "another-host", me.start)) is None


def test_a_store_of_schema_4_is_migrated_and_its_runs_listed(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from srperf.results import schema

    path = tmp_path / "old.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:   # a store as srperf wrote it before version 5
        conn.exec_driver_sql("CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT, "
                             "finished TEXT, experiment TEXT, testbed TEXT, forwarder TEXT, "
                             "status TEXT, environment TEXT, purpose TEXT NOT NULL DEFAULT "
                             "'run', suite TEXT)")
        conn.exec_driver_sql("CREATE TABLE outcomes (id INTEGER PRIMARY KEY, run_id TEXT, "
                             "time TEXT, behavior TEXT, forwarder TEXT, packet_size INTEGER, "
                             "status TEXT, reason TEXT)")
        conn.exec_driver_sql("INSERT INTO runs VALUES ('old1', '2026-01-01T00:00:00', NULL, "
                             "'e', 't', 'linux', 'failed', '{}', 'run', NULL)")
        conn.exec_driver_sql("INSERT INTO outcomes VALUES (1, 'old1', 't', 'end', 'linux', 64, "
                             "'measured', '')")
    engine.dispose()
    with ResultStore(path) as store:
        with store.engine.connect() as conn:
            assert schema.current_version(conn) == schema.CURRENT_VERSION
        df = store.runs_overview()
        assert list(df["run_id"]) == ["old1"] and df.loc[0, "searches"] == 1
        assert store.ended_searches("old1") == {}   # no search numbers before version 5
    path.rename(tmp_path / "srperf.sqlite")
    refused = subprocess.run([SRPERF, "run", "--resume", "old1", "--results", str(tmp_path)],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "cannot be resumed" in refused.stderr, refused.stderr


# -- signals --------------------------------------------------------------------------------
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("where", ["foreground", "background"])
def test_signal_stores_interrupted_with_its_name(tmp_path: Path, signum: int, code: int,
                                                 where: str) -> None:
    exp, tb = _files(tmp_path)
    results = tmp_path / "res"
    db = results / "srperf.sqlite"
    argv = [SRPERF, "run", str(exp), "--testbed", str(tb), "--results", str(results)]
    before = set(_leftovers(results))
    if where == "foreground":
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=_env(tmp_path))
        pid = proc.pid
    else:
        # a script starting srperf in the background: the child inherits SIGINT ignored
        script = " ".join(f"'{a}'" for a in argv) + " 2>\"$1\" & echo $!; wait $!"
        proc = subprocess.Popen(["bash", "-c", script, "bash", str(tmp_path / "err")],
                                stdout=subprocess.PIPE, text=True, env=_env(tmp_path))
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
    try:
        _wait_for_searches(db, 2, proc)
        if where == "background":
            ignored = int(next(line for line in Path(f"/proc/{pid}/status").read_text()
                               .splitlines() if line.startswith("SigIgn:")).split()[1], 16)
            # the case under test is real only if the shell did make SIGINT ignored;
            # srperf then has its own handler, so it is not in SigIgn any more
            assert not ignored & (1 << (signal.SIGINT - 1))
        os.kill(pid, signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.kill(pid, signal.SIGKILL)
            proc.wait()
    err = (proc.stderr.read() if proc.stderr else (tmp_path / "err").read_text())
    assert proc.returncode == code, err
    assert ("terminated" if signum == signal.SIGTERM else "interrupted") in err
    _, status, sig, reason, _, _, planned = _run_row(db)
    assert (status, sig) == ("interrupted", signal.Signals(signum).name)
    assert reason == f"interrupted by {signal.Signals(signum).name}"
    assert planned == len(BEHAVIORS) * REPETITIONS
    assert _query(db, "SELECT COUNT(*) FROM outcomes")[0][0] >= 2
    assert set(_leftovers(results)) <= before
    listing = subprocess.run([SRPERF, "runs", "--results", str(results)],
                             capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    assert f"interrupted ({signal.Signals(signum).name})" in listing.stdout
    if where == "foreground":   # an interrupted run can be resumed, too
        ended = _query(db, "SELECT COUNT(*) FROM outcomes")[0][0]
        partial = _query(db, "SELECT COUNT(*) FROM trials WHERE search_seq NOT IN "
                             "(SELECT search_seq FROM outcomes)")[0][0]
        run_id = _run_row(db)[0]
        done = subprocess.run([SRPERF, "run", "--resume", run_id, "--results", str(results)],
                              capture_output=True, text=True, timeout=120, env=_env(tmp_path))
        assert done.returncode == 0, done.stdout + done.stderr
        assert _run_row(db)[1:4] == ("finished", None, None)
        assert f"{count(partial, 'trial')} of an unfinished search dropped" in done.stdout
        print(f"{signal.Signals(signum).name}: {ended} searches kept, {partial} trials of "
              "the running search dropped on resume")


def test_background_shell_really_ignores_sigint() -> None:
    """The premise of the background case: a non-interactive bash starts a background
    command with SIGINT ignored (so srperf must restore a handler itself)."""
    proc = subprocess.Popen(["bash", "-c", "sleep 30 & echo $!; wait $!"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    try:
        deadline = time.monotonic() + 10   # until bash's child has become sleep (exec)
        while Path(f"/proc/{pid}/comm").read_text().strip() != "sleep":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        status = Path(f"/proc/{pid}/status").read_text()
        ignored = int(next(line for line in status.splitlines()
                           if line.startswith("SigIgn:")).split()[1], 16)
        assert ignored & (1 << (signal.SIGINT - 1))
    finally:
        os.kill(pid, signal.SIGKILL)
        proc.wait()


# -- kill -9, then --resume ----------------------------------------------------------------
def test_kill_9_then_resume_keeps_every_ended_search(tmp_path: Path) -> None:
    exp, tb = _files(tmp_path)
    results = tmp_path / "res"
    db = results / "srperf.sqlite"
    before = set(_leftovers(results))
    proc = subprocess.Popen([SRPERF, "run", str(exp), "--testbed", str(tb),
                             "--results", str(results)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=_env(tmp_path))
    try:
        _wait_for_searches(db, 4, proc)
        time.sleep(0.15)  # into the next search: some of its trials are stored
    finally:
        proc.kill()
        proc.wait()
    run_id, status, *_ = _run_row(db)
    assert status == "running"   # nothing could record the kill
    ended = _query(db, "SELECT search_seq FROM outcomes ORDER BY search_seq")
    ended_seqs = [s for (s,) in ended]
    kept = _query(db, "SELECT id, search_seq, rate_pps, received FROM trials "
                      f"WHERE search_seq IN ({','.join(map(str, ended_seqs))}) ORDER BY id")
    partial = _query(db, "SELECT COUNT(*) FROM trials "
                         f"WHERE search_seq NOT IN ({','.join(map(str, ended_seqs))})")[0][0]
    assert list(results.glob("runs/*/tmp")), "the dead run's tmp stays until resumed"
    listing = subprocess.run([SRPERF, "runs", "--results", str(results)],
                             capture_output=True, text=True)
    assert " dead " in listing.stdout and f"--resume {run_id}" in listing.stdout

    done = subprocess.run([SRPERF, "run", "--resume", run_id, "--results", str(results)],
                          capture_output=True, text=True, timeout=120, env=_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(ended_seqs)} of {len(BEHAVIORS) * REPETITIONS} searches ended" in done.stdout
    # as 'srperf runs' showed it, and the searches keep their numbers (issue 49, item 3)
    assert f"resuming run {run_id} (dead)" in done.stdout
    first = next(line for line in done.stdout.splitlines() if "  search " in line)
    assert f"search {len(ended_seqs) + 1}/{len(BEHAVIORS) * REPETITIONS} " in first, first
    assert f"{count(partial, 'trial')} of an unfinished search dropped" in done.stdout
    rid, status, sig, reason, *_ = _run_row(db)
    assert (rid, status, sig, reason) == (run_id, "finished", None, None)
    seqs = [s for (s,) in _query(db, "SELECT search_seq FROM outcomes ORDER BY search_seq")]
    assert seqs == list(range(1, len(BEHAVIORS) * REPETITIONS + 1)), "each search once"
    # the ended searches' trials are the very rows stored before the kill, not redone
    again = _query(db, "SELECT id, search_seq, rate_pps, received FROM trials "
                       f"WHERE search_seq IN ({','.join(map(str, ended_seqs))}) ORDER BY id")
    assert again == kept
    goals = _query(db, "SELECT search_seq, COUNT(*) FROM searches GROUP BY search_seq")
    assert all(n == 1 for _, n in goals) and len(goals) == len(seqs)
    assert set(_leftovers(results)) <= before
    assert not (results / "runs").exists()


def test_resume_refuses_a_finished_a_live_and_a_changed_run(tmp_path: Path) -> None:
    exp, tb = _files(tmp_path, repetitions=1, scale=0.0)
    results = tmp_path / "res"
    first = subprocess.run([SRPERF, "run", str(exp), "--testbed", str(tb),
                            "--results", str(results)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    (run_id, *_), = _query(results / "srperf.sqlite", "SELECT run_id FROM runs")
    again = subprocess.run([SRPERF, "run", "--resume", run_id, "--results", str(results)],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "finished" in again.stderr, again.stderr
    both = subprocess.run([SRPERF, "run", str(exp), "--resume", run_id,
                           "--results", str(results)], capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with --resume" in both.stderr
    nothing = subprocess.run([SRPERF, "run", "--resume", "nosuchrun",
                              "--results", str(results)], capture_output=True, text=True)
    assert nothing.returncode == 2 and "nosuchrun" in nothing.stderr

    # a live run is not taken over (many repetitions: it must still be running when the
    # resume below starts, however slowly a busy machine starts it; it is killed after)
    exp2, tb2 = _files(tmp_path, repetitions=20, scale=0.5)
    results2 = tmp_path / "res2"
    proc = subprocess.Popen([SRPERF, "run", str(exp2), "--testbed", str(tb2),
                             "--results", str(results2)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_searches(results2 / "srperf.sqlite", 1, proc)
        (live, *_), = _query(results2 / "srperf.sqlite", "SELECT run_id FROM runs")
        taken = subprocess.run([SRPERF, "run", "--resume", live, "--results", str(results2)],
                               capture_output=True, text=True)
        assert taken.returncode == 2 and f"pid {proc.pid}" in taken.stderr, taken.stderr
    finally:
        proc.kill()
        proc.wait()
    # the experiment file changed since: the plan differs, refused naming it
    data = yaml.safe_load(exp2.read_text())
    data["behaviors"] = ["ipv6"]
    exp2.write_text(yaml.safe_dump(data))
    changed = subprocess.run([SRPERF, "run", "--resume", live, "--results", str(results2)],
                             capture_output=True, text=True)
    assert changed.returncode == 2 and "behaviors" in changed.stderr, changed.stderr
    assert _query(results2 / "srperf.sqlite", "SELECT status FROM runs")[0][0] == "running"


# -- the work directory a dead run left on the SUT ---------------------------------------
def test_a_dead_runs_work_directory_is_removed_only_if_srperf_made_it(tmp_path: Path) -> None:
    from srperf.measure.run_record import remove_stale_workdir
    from srperf.transports.netns import NetnsTransport

    node = NetnsTransport(None, tmp_base=str(tmp_path))
    stale = tmp_path / "srperf.Ab3dE5gH9k"
    (stale / "sub").mkdir(parents=True)
    (stale / "linux.sh").write_text("#!/bin/bash\n")
    assert remove_stale_workdir(node, str(stale))
    assert not stale.exists()
    assert not remove_stale_workdir(node, str(stale))   # gone already: nothing to do
    for other in (tmp_path / "keep", tmp_path / "srperf.short",
                  tmp_path / "x" / "srperf.Ab3dE5gH9k"):
        other.mkdir(parents=True)
        assert not remove_stale_workdir(node, str(other))
        assert other.exists()
    assert not remove_stale_workdir(node, "/")
    assert not remove_stale_workdir(node, f"{tmp_path}/srperf.Ab3dE5gH9k/../keep")
