"""The results store: every trial appended the moment it completes.

A run that fails half-way keeps every finished trial.  Tables (see
:mod:`srperf.results.schema`): ``runs`` (one row per run, with environment
metadata and its purpose), ``trials``, ``searches`` (one row per search goal),
``outcomes`` (per behavior: measured, unsupported, failed) and ``comparisons``
(nightly verdicts).

The store is an SQLite file by default; a ``postgresql://`` URL puts it in a
PostgreSQL database (``pip install 'srperf[pg]'``), the same schema, so that
nightly jobs on several testbeds can write to one database.  Opening a store
migrates it to the current schema version.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import sqlalchemy as sa

from srperf.drivers.base import TrialResult
from srperf.errors import SrperfError
from srperf.results import schema
from srperf.search.base import SearchResult

log = logging.getLogger(__name__)

ADDED_SEARCH_COLUMNS = ("estimate_pps", "estimate_low_pps", "estimate_high_pps")
"""Columns of ``searches`` newer than the first schema (added to older files on open)."""

PURPOSES = ("run", "bench", "nightly", "conform")
"""What a run was for: an ordinary run, a benchmark command, a nightly job."""


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


def is_url(location: str | Path) -> bool:
    """True when ``location`` is a database URL rather than an SQLite file path."""
    return "://" in str(location)


def engine_url(location: str | Path) -> str:
    """SQLAlchemy URL for a path or URL; ``postgresql://`` uses psycopg 3."""
    text = str(location)
    if not is_url(text):
        return f"sqlite:///{Path(text).resolve()}"
    for plain in ("postgresql://", "postgres://"):
        if text.startswith(plain):
            return "postgresql+psycopg://" + text[len(plain):]
    return text


class ResultStore:
    """A results database (SQLite file or PostgreSQL URL); each row committed at once."""

    def __init__(self, location: str | Path) -> None:
        self.path: Path | None = None
        if not is_url(location):
            self.path = Path(location)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine = sa.create_engine(engine_url(location))
        except ModuleNotFoundError as exc:
            raise SrperfError(f"results database {location}: {exc}; for PostgreSQL "
                              "install srperf's pg extra (psycopg)") from None
        self.url = self.engine.url.render_as_string(hide_password=True)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        schema.migrate(self.engine, _now)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _insert(self, table: sa.Table, rows: dict[str, Any] | list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            conn.execute(table.insert(), rows)

    # -- writing -------------------------------------------------------------------
    def begin_run(self, experiment: str, testbed: str, forwarder: str,
                  environment: dict[str, Any], purpose: str = "run",
                  suite: str | None = None) -> str:
        """Start a run; ``purpose`` is one of :data:`PURPOSES`.  Returns the run id."""
        if purpose not in PURPOSES:
            raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
        run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self._insert(schema.runs, dict(
            run_id=run_id, started=_now(), finished=None, experiment=experiment,
            testbed=testbed, forwarder=forwarder, status="running",
            environment=json.dumps(environment, sort_keys=True, default=str),
            purpose=purpose, suite=suite))
        return run_id

    def update_environment(self, run_id: str, environment: dict[str, Any]) -> None:
        """Replace a run's environment (once the testbed's nodes could be read)."""
        with self.engine.begin() as conn:
            conn.execute(schema.runs.update().where(schema.runs.c.run_id == run_id).values(
                environment=json.dumps(environment, sort_keys=True, default=str)))

    def end_run(self, run_id: str, status: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(schema.runs.update().where(schema.runs.c.run_id == run_id)
                         .values(finished=_now(), status=status))

    def tag_run(self, run_id: str, purpose: str | None = None,
                suite: str | None = None) -> None:
        """Set a finished run's purpose and/or suite (e.g. after a nightly run)."""
        values: dict[str, Any] = {}
        if purpose is not None:
            if purpose not in PURPOSES:
                raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
            values["purpose"] = purpose
        if suite is not None:
            values["suite"] = suite
        if values:
            with self.engine.begin() as conn:
                conn.execute(schema.runs.update().where(schema.runs.c.run_id == run_id)
                             .values(**values))

    def add_trial(self, run_id: str, key: TrialKey, t: TrialResult) -> None:
        self._insert(schema.trials, dict(
            run_id=run_id, time=_now(), behavior=key.behavior, forwarder=key.forwarder,
            packet_size=key.packet_size, repetition=key.repetition,
            search_seq=key.search_seq, rate_pps=t.rate_pps, duration_s=t.duration_s,
            intended=t.intended, sent=t.sent, refused=t.refused, received=t.received,
            elapsed_s=t.elapsed_s, offered_rate_pps=t.offered_rate_pps,
            loss_ratio=t.loss_ratio, generator_limited=int(t.generator_limited),
            counters_consistent=int(t.counters_consistent), note=t.note,
            extra=json.dumps(t.extra, sort_keys=True, default=str)))

    def add_search(self, run_id: str, key: TrialKey, result: SearchResult) -> None:
        self._insert(schema.searches, [dict(
            run_id=run_id, time=_now(), behavior=key.behavior, forwarder=key.forwarder,
            packet_size=key.packet_size, repetition=key.repetition,
            search_seq=key.search_seq, algorithm=result.algorithm,
            threshold_pct=g.threshold_pct, status=g.status, lower_pps=g.lower_bound_pps,
            upper_pps=g.upper_bound_pps, conditional_pps=g.conditional_throughput_pps,
            n_trials=result.n_trials, trial_seconds=result.trial_seconds,
            wall_s=result.wall_s, note="; ".join(x for x in (g.note, result.note) if x),
            estimate_pps=g.estimate_pps, estimate_low_pps=g.estimate_low_pps,
            estimate_high_pps=g.estimate_high_pps) for g in result.goals])

    def add_outcome(self, run_id: str, behavior: str, forwarder: str, packet_size: int,
                    status: str, reason: str = "") -> None:
        self._insert(schema.outcomes, dict(
            run_id=run_id, time=_now(), behavior=behavior, forwarder=forwarder,
            packet_size=packet_size, status=status, reason=reason))

    def add_conformance(self, run_id: str, forwarder: str, results: Iterable[Any]) -> None:
        """Store the verdicts of a conformance run (:class:`srperf.conform.CaseResult`)."""
        rows = [dict(run_id=run_id, time=_now(), behavior=r.behavior, forwarder=forwarder,
                     packet_size=None, case_name=r.case, dimension=r.dimension,
                     expected=r.expected, status=r.status, detail=r.detail, spec=r.spec,
                     counters=json.dumps(r.counters, sort_keys=True)) for r in results]
        if rows:
            self._insert(schema.conformance, rows)

    def add_comparison(self, run_id: str, baseline_run_id: str | None, threshold_pct: float,
                       verdict: str, detail: dict[str, Any] | None = None) -> None:
        """Record a nightly verdict of ``run_id`` against its baseline."""
        self._insert(schema.comparisons, dict(
            run_id=run_id, baseline_run_id=baseline_run_id, time=_now(),
            threshold_pct=threshold_pct, verdict=verdict,
            detail=json.dumps(detail or {}, sort_keys=True, default=str)))

    def copy_run(self, run_id: str, dest: "ResultStore") -> None:
        """Copy one run (runs, trials, searches, outcomes rows) into another store."""
        with self.engine.connect() as src, dest.engine.begin() as dst:
            for name in schema.TABLES:
                table = schema.metadata.tables[name]
                rows = [dict(r._mapping) for r in src.execute(
                    sa.select(table).where(table.c.run_id == run_id))]
                if name != "runs":
                    for r in rows:
                        r.pop("id", None)
                if rows:
                    dst.execute(table.insert(), rows)

    # -- reading -------------------------------------------------------------------
    def frame(self, table: str, run_id: str | Iterable[str] | None = None) -> pd.DataFrame:
        """A table as a DataFrame, optionally for one run (or several run ids)."""
        if table not in schema.metadata.tables or table == "schema_version":
            raise ValueError(f"unknown table {table!r}")
        t = schema.metadata.tables[table]
        query = sa.select(t)
        if isinstance(run_id, str):
            query = query.where(t.c.run_id == run_id)
        elif run_id is not None:
            query = query.where(t.c.run_id.in_(list(run_id)))
        if "id" in t.c:
            query = query.order_by(t.c.id)
        with self.engine.connect() as conn:
            return pd.read_sql_query(query, conn)

    def simulated_runs(self, run_ids: Iterable[str]) -> set[str]:
        """Those of ``run_ids`` with a trial from the simulated SUT model
        (``extra["simulated"]``, see drivers/simulated.py)."""
        t = schema.trials
        query = (sa.select(t.c.run_id).distinct()
                 .where(t.c.run_id.in_(list(run_ids)),
                        t.c.extra.like('%"simulated": true%')))
        with self.engine.connect() as conn:
            return set(conn.execute(query).scalars())

    def last_run_id(self) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(schema.runs.c.run_id)
                                .order_by(schema.runs.c.started.desc()).limit(1)).scalar()

    def run_ids(self, spec: str) -> list[str]:
        """Run ids matching ``spec``: an id, a unique id prefix, or ``last``."""
        if spec == "last":
            last = self.last_run_id()
            return [last] if last else []
        with self.engine.connect() as conn:
            ids = list(conn.execute(sa.select(schema.runs.c.run_id)
                                    .where(schema.runs.c.run_id.startswith(spec))
                                    .order_by(schema.runs.c.started)).scalars())
        return [spec] if spec in ids else ids

    def last_good_run(self, experiment: str, testbed: str, suite: str | None,
                      exclude: str | None = None) -> str | None:
        """The newest nightly run of this suite, experiment and testbed that finished
        and was not itself judged a regression (None when there is none)."""
        r, c = schema.runs, schema.comparisons
        bad = sa.select(c.c.run_id).where(c.c.verdict == "regression")
        query = (sa.select(r.c.run_id)
                 .where(r.c.purpose == "nightly", r.c.experiment == experiment,
                        r.c.testbed == testbed, r.c.status == "finished",
                        r.c.run_id.not_in(bad))
                 .order_by(r.c.started.desc()))
        query = query.where(r.c.suite.is_(None) if suite is None else r.c.suite == suite)
        if exclude:
            query = query.where(r.c.run_id != exclude)
        with self.engine.connect() as conn:
            return conn.execute(query.limit(1)).scalar()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """Wait for a writer (another run, a nightly job) instead of failing with 'locked'."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout = 10000")
    cur.close()
