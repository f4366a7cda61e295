"""The results store: every trial appended to SQLite the moment it completes.

A run that fails half-way keeps every finished trial.  Tables: ``runs`` (one
row per run, with environment metadata), ``trials``, ``searches`` (one row per
search goal) and ``outcomes`` (per behavior: measured, unsupported, failed).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from srperf.drivers.base import TrialResult
from srperf.search.base import SearchResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started TEXT, finished TEXT, experiment TEXT,
    testbed TEXT, forwarder TEXT, status TEXT, environment TEXT);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT, behavior TEXT,
    forwarder TEXT, packet_size INTEGER, repetition INTEGER, search_seq INTEGER,
    rate_pps REAL, duration_s REAL, intended INTEGER, sent INTEGER, refused INTEGER,
    received INTEGER, elapsed_s REAL, offered_rate_pps REAL, loss_ratio REAL,
    generator_limited INTEGER, counters_consistent INTEGER, note TEXT, extra TEXT);
CREATE TABLE IF NOT EXISTS searches (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT, behavior TEXT,
    forwarder TEXT, packet_size INTEGER, repetition INTEGER, search_seq INTEGER,
    algorithm TEXT, threshold_pct REAL, status TEXT, lower_pps REAL, upper_pps REAL,
    conditional_pps REAL, n_trials INTEGER, trial_seconds REAL, wall_s REAL, note TEXT,
    estimate_pps REAL, estimate_low_pps REAL, estimate_high_pps REAL);
CREATE TABLE IF NOT EXISTS outcomes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, time TEXT, behavior TEXT,
    forwarder TEXT, packet_size INTEGER, status TEXT, reason TEXT);
"""

ADDED_SEARCH_COLUMNS = ("estimate_pps", "estimate_low_pps", "estimate_high_pps")
"""Columns of ``searches`` newer than the first schema (added to older files on open)."""


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class TrialKey:
    """Where a trial belongs: behavior, packet size, repetition, search number."""

    behavior: str
    forwarder: str
    packet_size: int
    repetition: int
    search_seq: int


class ResultStore:
    """An SQLite results file; one connection, autocommit per row."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), isolation_level=None)
        self.db.executescript(SCHEMA)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """Bring a results file written by an older srperf up to the current schema."""
        have = {row[1] for row in self.db.execute("PRAGMA table_info(searches)")}
        for column in ADDED_SEARCH_COLUMNS:
            if column not in have:
                self.db.execute(f"ALTER TABLE searches ADD COLUMN {column} REAL")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------
    def begin_run(self, experiment: str, testbed: str, forwarder: str,
                  environment: dict[str, Any]) -> str:
        run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?)",
                        (run_id, _now(), None, experiment, testbed, forwarder, "running",
                         json.dumps(environment, sort_keys=True, default=str)))
        return run_id

    def update_environment(self, run_id: str, environment: dict[str, Any]) -> None:
        """Replace a run's environment (once the testbed's nodes could be read)."""
        self.db.execute("UPDATE runs SET environment=? WHERE run_id=?",
                        (json.dumps(environment, sort_keys=True, default=str), run_id))

    def end_run(self, run_id: str, status: str) -> None:
        self.db.execute("UPDATE runs SET finished=?, status=? WHERE run_id=?",
                        (_now(), status, run_id))

    def add_trial(self, run_id: str, key: TrialKey, t: TrialResult) -> None:
        self.db.execute(
            "INSERT INTO trials (run_id, time, behavior, forwarder, packet_size, repetition,"
            " search_seq, rate_pps, duration_s, intended, sent, refused, received, elapsed_s,"
            " offered_rate_pps, loss_ratio, generator_limited, counters_consistent, note, extra)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, _now(), key.behavior, key.forwarder, key.packet_size, key.repetition,
             key.search_seq, t.rate_pps, t.duration_s, t.intended, t.sent, t.refused,
             t.received, t.elapsed_s, t.offered_rate_pps, t.loss_ratio,
             int(t.generator_limited), int(t.counters_consistent), t.note,
             json.dumps(t.extra, sort_keys=True, default=str)))

    def add_search(self, run_id: str, key: TrialKey, result: SearchResult) -> None:
        for g in result.goals:
            self.db.execute(
                "INSERT INTO searches (run_id, time, behavior, forwarder, packet_size,"
                " repetition, search_seq, algorithm, threshold_pct, status, lower_pps,"
                " upper_pps, conditional_pps, n_trials, trial_seconds, wall_s, note,"
                " estimate_pps, estimate_low_pps, estimate_high_pps)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, _now(), key.behavior, key.forwarder, key.packet_size,
                 key.repetition, key.search_seq, result.algorithm, g.threshold_pct, g.status,
                 g.lower_bound_pps, g.upper_bound_pps, g.conditional_throughput_pps,
                 result.n_trials, result.trial_seconds, result.wall_s,
                 "; ".join(x for x in (g.note, result.note) if x),
                 g.estimate_pps, g.estimate_low_pps, g.estimate_high_pps))

    def add_outcome(self, run_id: str, behavior: str, forwarder: str, packet_size: int,
                    status: str, reason: str = "") -> None:
        self.db.execute(
            "INSERT INTO outcomes (run_id, time, behavior, forwarder, packet_size, status,"
            " reason) VALUES (?,?,?,?,?,?,?)",
            (run_id, _now(), behavior, forwarder, packet_size, status, reason))

    # -- reading -------------------------------------------------------------------
    def frame(self, table: str, run_id: str | None = None) -> pd.DataFrame:
        """A table as a DataFrame, optionally for one run."""
        if table not in ("runs", "trials", "searches", "outcomes"):
            raise ValueError(f"unknown table {table!r}")
        query = f"SELECT * FROM {table}"
        params: tuple[Any, ...] = ()
        if run_id is not None:
            query += " WHERE run_id = ?"
            params = (run_id,)
        return pd.read_sql_query(query, self.db, params=params)

    def last_run_id(self) -> str | None:
        row = self.db.execute("SELECT run_id FROM runs ORDER BY started DESC LIMIT 1").fetchone()
        return row[0] if row else None
