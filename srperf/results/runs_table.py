"""The rows of ``srperf runs`` read from an SQLite store with the standard ``sqlite3``
module, so that listing runs does not import SQLAlchemy (a third of a second here).

:func:`sqlite_runs_rows` opens the file through the same guard as
:class:`srperf.results.store.ResultStore` (:func:`srperf.safety.safe_paths.open_store_file`)
and runs the statement SQLAlchemy makes for :meth:`ResultStore.runs_rows`, written out.
It answers None whenever the store would need more than reading: a server URL, a file
without the current schema (new, older or newer: the store migrates or refuses it), or
any SQLite error (the store then says what went wrong, as it always did).
:func:`mark_dead_runs` is the liveness pass both readers share.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from srperf.results.liveness import ProcessId, is_alive

SCHEMA_VERSION = 9
"""The schema this statement reads (:data:`srperf.results.schema.CURRENT_VERSION`; a test
keeps the two equal)."""

RUNS_SQL = (
    "SELECT runs.run_id, runs.experiment, runs.testbed, runs.forwarder, runs.status, "
    "runs.signal, runs.reason, runs.started, runs.finished, "
    "coalesce(anon_1.ended, ?) AS searches, runs.planned, "
    "coalesce(anon_2.trials, ?) AS trials, coalesce(anon_3.samples, ?) AS samples, "
    "coalesce(anon_4.cases, ?) AS cases, runs.pid, runs.host, runs.pid_start, runs.purpose \n"
    "FROM runs LEFT OUTER JOIN (SELECT anon_5.run_id AS run_id, count(*) AS ended \n"
    "FROM (SELECT outcomes.run_id AS run_id \n"
    "FROM outcomes UNION ALL SELECT stateful_samples.run_id AS run_id \n"
    "FROM stateful_samples \n"
    "WHERE stateful_samples.kind != ?) AS anon_5 GROUP BY anon_5.run_id) AS anon_1 "
    "ON anon_1.run_id = runs.run_id LEFT OUTER JOIN (SELECT trials.run_id AS run_id, "
    "count(*) AS trials \n"
    "FROM trials GROUP BY trials.run_id) AS anon_2 ON anon_2.run_id = runs.run_id "
    "LEFT OUTER JOIN (SELECT anon_6.run_id AS run_id, count(*) AS samples \n"
    "FROM (SELECT stateful_samples.run_id AS run_id \n"
    "FROM stateful_samples \n"
    "WHERE stateful_samples.kind != ?) AS anon_6 GROUP BY anon_6.run_id) AS anon_3 "
    "ON anon_3.run_id = runs.run_id LEFT OUTER JOIN (SELECT conformance.run_id AS run_id, "
    "count(*) AS cases \n"
    "FROM conformance GROUP BY conformance.run_id) AS anon_4 "
    "ON anon_4.run_id = runs.run_id ORDER BY runs.started DESC")
RUNS_PARAMS: tuple[object, ...] = (0, 0, 0, 0, "calibration", "calibration")
"""The statement's parameters, in order (the coalesced zeros, the calibration kind)."""
"""What SQLAlchemy compiles :meth:`ResultStore.runs_rows`'s query to for SQLite (the same
text, so that SQLite plans it the same way and orders ties alike)."""

BUSY_TIMEOUT_MS = 10000
"""As the store's own connections: wait for a writer instead of failing with 'locked'."""


def sqlite_runs_rows(location: str, what: str, limit: int | None) -> list[dict[str, Any]] | None:
    """:meth:`ResultStore.runs_rows` of the SQLite store at ``location`` (``what`` names
    the option in errors), or None when only :class:`ResultStore` can answer."""
    from srperf.safety import safe_paths
    from srperf.results import location as where

    place = where.resolve(location, what)
    if place.path is None:
        return None
    path = safe_paths.open_store_file(place.path, what)
    try:
        conn = safe_paths.read_only_sqlite(path)
    except sqlite3.Error:
        return None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                            "AND name = 'schema_version'").fetchone():
            return None
        if conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] \
                != SCHEMA_VERSION:
            return None
        sql, params = RUNS_SQL, list(RUNS_PARAMS)
        if limit:
            sql, params = sql + "\n LIMIT ? OFFSET ?", params + [limit, 0]
        cursor = conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return mark_dead_runs(rows)


def mark_dead_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` without their ``pid_start``, a 'running' run whose process is gone shown
    as 'dead' (and one whose process cannot be checked says so in its reason)."""
    for row in rows:
        pid_start = row.pop("pid_start")
        if row["status"] != "running" or row["pid"] is None:
            continue
        alive = is_alive(ProcessId(int(row["pid"]), str(row["host"]),
                                   None if pid_start is None else str(pid_start)))
        if alive is False:
            row["status"] = "dead"
            row["reason"] = (f"process {int(row['pid'])} on {row['host']} is gone "
                             "(killed?); srperf run --resume " + str(row["run_id"]))
        elif alive is None:
            row["reason"] = f"running on {row['host']} (pid {int(row['pid'])})?"
    return rows


__all__ = ["RUNS_SQL", "SCHEMA_VERSION", "mark_dead_runs", "sqlite_runs_rows"]
