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
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import sqlalchemy as sa

from srperf.drivers.base import TrialResult
from srperf.errors import SrperfError, StoreError
from srperf.safety.redact import redact, redact_keys
from srperf.results import schema
from srperf.results.names import FIGURE_STATUSES
from srperf.results.liveness import this_process
from srperf.results.runs_table import mark_dead_runs
from srperf.search.base import SearchResult
from srperf.stateful.base import StatefulSample, Variant

if TYPE_CHECKING:
    import pandas as pd

RUNS_COLUMNS = ("run_id", "experiment", "testbed", "forwarder", "status", "signal", "reason",
               "started", "finished", "searches", "planned", "trials", "samples", "cases", "pid",
               "host", "purpose")
"""The columns of :meth:`ResultStore.runs_rows`, in order."""

log = logging.getLogger(__name__)

ADDED_SEARCH_COLUMNS = ("estimate_pps", "estimate_low_pps", "estimate_high_pps")
"""Columns of ``searches`` newer than the first schema (added to older files on open)."""

PURPOSES = ("run", "bench", "nightly", "conform", "ab")
"""What a run was for: an ordinary run, a benchmark command, a nightly job."""

RUN_STATES = ("running", "finished", "interrupted", "failed")
"""A run's status: ``interrupted`` by a signal (named in ``signal``), ``failed``
with a ``reason`` (never empty)."""


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

    def __init__(self, location: str | Path, what: str = "--db",
                 file: str = "<command line>") -> None:
        """Open (check, then make or migrate) the store; ``what`` and ``file`` name where
        ``location`` came from in errors (exit 2 for a bad place, 1 for a server that
        cannot be reached)."""
        from srperf.safety import safe_paths
        from srperf.results import location as where

        place = where.resolve(location, what, file)
        self.path: Path | None = None
        if place.path is not None:   # every spelling of an SQLite file: one guarded open
            self.path = safe_paths.open_store_file(place.path, what, file)
        url = f"sqlite:///{self.path}" if self.path is not None else place.url
        try:
            self.engine = sa.create_engine(url)
        except ModuleNotFoundError as exc:
            raise SrperfError(f"results database {where.shown(location)}: {exc}; for "
                              "PostgreSQL install srperf's pg extra (psycopg)") from None
        self.url = self.engine.url.render_as_string(hide_password=True)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            schema.migrate(self.engine, _now)
        except sa.exc.OperationalError as exc:
            self.engine.dispose()
            orig = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            raise StoreError(f"{what} {self.path or where.shown(location)}: cannot open the "
                             "results store: "
                             f"{orig[0] if orig else type(exc).__name__}") from None

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def where(self) -> str:
        """The store for messages: its file, or its URL without the password."""
        return str(self.path) if self.path is not None else self.url

    def _write(self, statement: Any, rows: Any = None) -> None:
        """Execute one write in its own transaction; a database that cannot be written
        (disk full, I/O error) raises :class:`StoreError` naming the store.  SQLite
        rolls the transaction back, so every row written before stays readable."""
        try:
            with self.engine.begin() as conn:
                conn.execute(statement, rows) if rows is not None else conn.execute(statement)
        except (sa.exc.OperationalError, sa.exc.DatabaseError, OSError) as exc:
            orig = getattr(exc, "orig", None) or exc
            raise StoreError(f"results store {self.where}: cannot write: {orig} "
                             "(rows written before are kept)") from None

    def _insert(self, table: sa.Table, rows: dict[str, Any] | list[dict[str, Any]]) -> None:
        self._write(table.insert(), rows)

    # -- writing -------------------------------------------------------------------
    def begin_run(self, experiment: str, testbed: str, forwarder: str,
                  environment: dict[str, Any], purpose: str = "run",
                  suite: str | None = None, planned: int | None = None) -> str:
        """Start a run of this process; ``purpose`` is one of :data:`PURPOSES`,
        ``planned`` the number of searches of its plan.  Returns the run id."""
        if purpose not in PURPOSES:
            raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
        run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        me = this_process()
        self._insert(schema.runs, dict(
            run_id=run_id, started=_now(), finished=None, experiment=experiment,
            testbed=testbed, forwarder=forwarder, status="running",
            environment=redact(json.dumps(redact_keys(environment), sort_keys=True,
                                          default=str)),
            purpose=purpose, suite=suite, planned=planned,
            pid=me.pid, host=me.host, pid_start=me.start))
        return run_id

    def claim_run(self, run_id: str) -> None:
        """Make this process the one running ``run_id`` again (``--resume``): status
        ``running``, reason and signal cleared, PID, host and start time ours."""
        me = this_process()
        self._write(schema.runs.update().where(schema.runs.c.run_id == run_id).values(
            status="running", finished=None, reason=None, signal=None,
            pid=me.pid, host=me.host, pid_start=me.start))

    def set_planned(self, run_id: str, planned: int) -> None:
        """Change what a run plans (a stateful run whose configuration left the rounds)."""
        self._write(schema.runs.update().where(schema.runs.c.run_id == run_id).values(
            planned=int(planned)))

    def update_environment(self, run_id: str, environment: dict[str, Any]) -> None:
        """Replace a run's environment (once the testbed's nodes could be read)."""
        self._write(schema.runs.update().where(schema.runs.c.run_id == run_id).values(
            environment=redact(json.dumps(redact_keys(environment), sort_keys=True,
                                          default=str))))

    def end_run(self, run_id: str, status: str, reason: str | None = None,
                signal: str | None = None) -> None:
        """End a run: ``finished`` (with a ``reason`` when it measured nothing);
        ``interrupted`` by ``signal`` (its name); ``failed`` with ``reason``.  A run
        that did not finish always gets a reason."""
        if status not in RUN_STATES or status == "running":
            raise ValueError(f"a run ends {RUN_STATES[1:]}, not {status!r}")
        if status == "interrupted" and not signal:
            raise ValueError("an interrupted run names its signal")
        if status != "finished" and not (reason or "").strip():
            reason = f"interrupted by {signal}" if signal else "failed (no reason given)"
        self._write(schema.runs.update().where(schema.runs.c.run_id == run_id).values(
            finished=_now(), status=status,
            reason=redact(reason) if reason and reason.strip() else None,
            signal=signal))

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
            counters_consistent=int(t.counters_consistent), note=redact(t.note or "") or t.note,
            extra=json.dumps(t.extra, sort_keys=True, default=str)))

    def add_search(self, run_id: str, key: TrialKey, result: SearchResult) -> None:
        self._insert(schema.searches, [dict(
            run_id=run_id, time=_now(), behavior=key.behavior, forwarder=key.forwarder,
            packet_size=key.packet_size, repetition=key.repetition,
            search_seq=key.search_seq, algorithm=result.algorithm,
            threshold_pct=g.threshold_pct, status=g.status, lower_pps=g.lower_bound_pps,
            upper_pps=g.upper_bound_pps, conditional_pps=g.conditional_throughput_pps,
            n_trials=result.n_trials, trial_seconds=result.trial_seconds,
            wall_s=result.wall_s,
            note=redact("; ".join(x for x in (g.note, result.note) if x)),
            estimate_pps=g.estimate_pps, estimate_low_pps=g.estimate_low_pps,
            estimate_high_pps=g.estimate_high_pps) for g in result.goals])

    def add_profile(self, run_id: str, key: TrialKey, p: Any) -> None:
        """Store the profile trial (:class:`srperf.profile.model.Profile`) of a search."""
        top = p.functions[0].symbol if p.functions else None
        self._insert(schema.profiles, dict(
            run_id=run_id, time=_now(), behavior=key.behavior, forwarder=key.forwarder,
            packet_size=key.packet_size, repetition=key.repetition,
            search_seq=key.search_seq, fraction=p.fraction, rate_pps=p.rate_pps,
            duration_s=p.duration_s, cpu=p.cpu, packets=p.packets, loss_ratio=p.loss_ratio,
            busy_ns=p.busy_ns, thread_ns=p.thread_ns, ns_per_packet=p.ns_per_packet,
            cpu_ns_per_packet=p.cpu_ns_per_packet,
            cycles_per_packet=p.cycles_per_packet,
            instructions_per_packet=p.instructions_per_packet, samples=p.samples,
            top_function=top, busy_note=p.busy_note, pmu_note=p.pmu_note,
            sampler_note=p.sampler_note,
            detail=json.dumps(p.to_dict(), sort_keys=True, default=str)))

    def add_cost(self, run_id: str, key: TrialKey, c: Any) -> None:
        """Store a per-packet cost (:class:`srperf.results.costs.PacketCost`) measured
        before the search ``key``."""
        self._insert(schema.costs, dict(
            run_id=run_id, time=_now(), behavior=key.behavior, forwarder=key.forwarder,
            packet_size=key.packet_size, repetition=key.repetition,
            search_seq=key.search_seq, method=c.method, status=c.status, runs=c.runs,
            verdict=c.verdict, ns_per_packet=c.ns_per_packet, ns_min=c.ns_min,
            ns_p90=c.ns_p90, programs=c.programs, tail_calls=c.tail_calls,
            frame_bytes=c.frame_bytes, step_stats=c.step_stats, note=redact(c.note or ""),
            detail=json.dumps(c.detail_dict(), sort_keys=True)))

    def add_outcome(self, run_id: str, behavior: str, forwarder: str, packet_size: int,
                    status: str, reason: str = "", repetition: int | None = None,
                    search_seq: int | None = None) -> None:
        """How a search ended (``search_seq``); written last, so a search without an
        outcome row did not end."""
        self._insert(schema.outcomes, dict(
            run_id=run_id, time=_now(), behavior=behavior, forwarder=forwarder,
            packet_size=packet_size, status=status, reason=redact(reason or ""),
            repetition=repetition,
            search_seq=search_seq))

    def drop_unended(self, run_id: str) -> dict[str, int]:
        """Delete the trials and search goals of searches of ``run_id`` that have no
        outcome row (the search that was running when the process died); returns the
        number of rows deleted per table."""
        o = schema.outcomes
        ended = sa.select(o.c.search_seq).where(o.c.run_id == run_id,
                                                o.c.search_seq.is_not(None))
        dropped: dict[str, int] = {}
        try:
            with self.engine.begin() as conn:
                for table in (schema.trials, schema.searches, schema.profiles, schema.costs):
                    res = conn.execute(table.delete().where(
                        table.c.run_id == run_id, table.c.search_seq.not_in(ended)))
                    dropped[table.name] = int(res.rowcount or 0)
        except (sa.exc.OperationalError, sa.exc.DatabaseError, OSError) as exc:
            raise StoreError(f"results store {self.where}: cannot write: "
                             f"{getattr(exc, 'orig', None) or exc}") from None
        return dropped

    def add_conformance(self, run_id: str, forwarder: str, results: Iterable[Any]) -> None:
        """Store the verdicts of a conformance run (:class:`srperf.measure.conform.CaseResult`)."""
        rows = [dict(run_id=run_id, time=_now(), behavior=r.behavior, forwarder=forwarder,
                     packet_size=None, case_name=r.case, dimension=r.dimension,
                     expected=r.expected, status=r.status, detail=r.detail, spec=r.spec,
                     counters=json.dumps(r.counters, sort_keys=True)) for r in results]
        if rows:
            self._insert(schema.conformance, rows)

    def add_stateful_sample(self, run_id: str, kind: str, behavior: str, forwarder: str,
                            variant: Variant, repetition: int, sample: StatefulSample,
                            duration_s: float | None = None, primary_metric: str = "",
                            counters: Mapping[str, Any] | None = None,
                            started: str | None = None, finished: str | None = None
                            ) -> None:
        """Store one repetition of a stateful experiment (see
        :data:`srperf.results.schema.stateful_samples`).  A sample that is not ok keeps
        its status and reason and no metrics; ``counters`` are the proxy's counter
        deltas (and Table I columns) over the repetition; ``started``/``finished``
        default to now."""
        if not sample.ok and not (sample.reason or "").strip():
            raise ValueError(f"a {sample.status} stateful sample needs a reason")
        metrics = {str(k): float(v) for k, v in sample.metrics.items()} if sample.ok else {}
        self._insert(schema.stateful_samples, dict(
            run_id=run_id, time=_now(), started=started or _now(),
            finished=finished or _now(), kind=kind, behavior=behavior, forwarder=forwarder,
            variant=variant.label,
            variant_params=json.dumps(dict(variant.params), sort_keys=True, default=str),
            repetition=repetition, duration_s=duration_s, primary_metric=primary_metric,
            status=sample.status, reason=sample.reason,
            metrics=json.dumps(metrics, sort_keys=True),
            detail=json.dumps(dict(sample.detail), sort_keys=True, default=str),
            counters=json.dumps(dict(counters or {}), sort_keys=True, default=str)))

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
        import pandas as pd   # here: a command that only lists runs does without it

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

    def run_row(self, run_id: str) -> dict[str, Any] | None:
        """The ``runs`` row of ``run_id`` (environment decoded), None if there is none."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(schema.runs)
                               .where(schema.runs.c.run_id == run_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["environment"] = json.loads(out["environment"] or "{}")
        return out

    def stateful_samples(self, run_id: str) -> list[dict[str, Any]]:
        """The stateful samples of ``run_id`` in the order stored, one dict per row with
        ``variant_params``, ``metrics``, ``detail`` and ``counters`` decoded from JSON."""
        t = schema.stateful_samples
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t).where(t.c.run_id == run_id)
                                .order_by(t.c.id)).all()
        out = []
        for row in rows:
            d = dict(row._mapping)
            for col in ("variant_params", "metrics", "detail", "counters"):
                d[col] = json.loads(d[col] or "{}")
            out.append(d)
        return out

    def ended_searches(self, run_id: str) -> dict[int, tuple[str, int, str, str]]:
        """The searches of ``run_id`` that ended: search_seq -> (behavior, packet size,
        outcome status, reason)."""
        o = schema.outcomes
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(o.c.search_seq, o.c.behavior, o.c.packet_size,
                                          o.c.status, o.c.reason)
                                .where(o.c.run_id == run_id, o.c.search_seq.is_not(None))
                                .order_by(o.c.search_seq)).all()
        return {int(seq): (beh, int(size), status, reason or "")
                for seq, beh, size, status, reason in rows}

    def runs_overview(self, limit: int | None = None) -> pd.DataFrame:
        """:meth:`runs_rows` as a DataFrame (one row per run, newest first)."""
        import pandas as pd

        rows = self.runs_rows(limit)
        return pd.DataFrame(rows, columns=list(rows[0]) if rows else list(RUNS_COLUMNS))

    def runs_rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """One row per run, newest first: id, experiment, testbed, forwarder, status
        (``running`` shown as ``dead`` when its process is known to be gone), reason,
        started, finished, searches ended (for a stateful run: repetitions stored),
        planned, trials, samples (a stateful run's, calibration aside), conformance
        cases, pid, host, purpose (absent values None)."""
        r, o, t = schema.runs, schema.outcomes, schema.trials
        ss, cf = schema.stateful_samples, schema.conformance
        # a stateful run's unit of work is a sample (its calibration's aside): its samples
        # count as searches, and as samples, so that the table can name the unit
        samples_rows = sa.select(ss.c.run_id).where(ss.c.kind != "calibration")
        ended_rows = sa.union_all(sa.select(o.c.run_id), samples_rows).subquery()
        ended = (sa.select(ended_rows.c.run_id, sa.func.count().label("ended"))
                 .group_by(ended_rows.c.run_id).subquery())
        trials = (sa.select(t.c.run_id, sa.func.count().label("trials"))
                  .group_by(t.c.run_id).subquery())
        sampled = samples_rows.subquery()
        samples = (sa.select(sampled.c.run_id, sa.func.count().label("samples"))
                   .group_by(sampled.c.run_id).subquery())
        cases = (sa.select(cf.c.run_id, sa.func.count().label("cases"))
                 .group_by(cf.c.run_id).subquery())
        query = (sa.select(r.c.run_id, r.c.experiment, r.c.testbed, r.c.forwarder,
                           r.c.status, r.c.signal, r.c.reason, r.c.started, r.c.finished,
                           sa.func.coalesce(ended.c.ended, 0).label("searches"),
                           r.c.planned, sa.func.coalesce(trials.c.trials, 0).label("trials"),
                           sa.func.coalesce(samples.c.samples, 0).label("samples"),
                           sa.func.coalesce(cases.c.cases, 0).label("cases"),
                           r.c.pid, r.c.host, r.c.pid_start, r.c.purpose)
                 .outerjoin(ended, ended.c.run_id == r.c.run_id)
                 .outerjoin(trials, trials.c.run_id == r.c.run_id)
                 .outerjoin(samples, samples.c.run_id == r.c.run_id)
                 .outerjoin(cases, cases.c.run_id == r.c.run_id)
                 .order_by(r.c.started.desc()))
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = [dict(r._mapping) for r in conn.execute(query)]
        return mark_dead_runs(rows)

    def last_run_id(self, status: str | None = None) -> str | None:
        """The newest run's id (with ``status``: the newest run stored with it)."""
        query = sa.select(schema.runs.c.run_id)
        if status is not None:
            query = query.where(schema.runs.c.status == status)
        with self.engine.connect() as conn:
            return conn.execute(query.order_by(schema.runs.c.started.desc()).limit(1)).scalar()

    def run_ids(self, spec: str) -> list[str]:
        """Run ids matching ``spec``: an id, ``last``, an id prefix, or else any part of
        an id (every id starts with its date, so the part a user remembers is often the
        hex suffix: ``ee6912``).  More than one id back means ``spec`` is ambiguous."""
        if spec == "last":
            last = self.last_run_id()
            return [last] if last else []
        run_id = schema.runs.c.run_id
        with self.engine.connect() as conn:
            for match in (run_id.startswith, run_id.contains):
                ids = list(conn.execute(sa.select(run_id)
                                        .where(match(spec, autoescape=True))
                                        .order_by(schema.runs.c.started)).scalars())
                if ids:
                    break
        return [spec] if spec in ids else ids

    def last_good_run(self, experiment: str, testbed: str, suite: str | None,
                      exclude: str | None = None,
                      accept: Callable[[str], bool] | None = None,
                      nightly_only: bool = True) -> str | None:
        """The newest nightly run of this suite, experiment and testbed that finished,
        measured at least one figure (a search goal with a rate: a run whose every
        search ended generator-limited is never a baseline) and was not itself judged
        a regression (None when there is none); with ``accept``, the newest such run
        it accepts (srperf.results.emulation: never an emulated run for a native one).
        Not ``nightly_only``: the run that would be taken were every run (any purpose,
        any suite) a nightly one of this suite, for saying why there is no baseline."""
        r, c, s = schema.runs, schema.comparisons, schema.searches
        bad = sa.select(c.c.run_id).where(c.c.verdict == "regression")
        st = schema.stateful_samples
        measured = sa.union(
            sa.select(s.c.run_id).where(s.c.status.in_(FIGURE_STATUSES),
                                        s.c.lower_pps.is_not(None)),
            sa.select(st.c.run_id).where(st.c.status == "ok"))
        query = (sa.select(r.c.run_id)
                 .where(r.c.experiment == experiment,
                        r.c.testbed == testbed, r.c.status == "finished",
                        r.c.run_id.not_in(bad), r.c.run_id.in_(measured))
                 .order_by(r.c.started.desc()))
        if nightly_only:
            query = query.where(r.c.purpose == "nightly")
            query = query.where(r.c.suite.is_(None) if suite is None else r.c.suite == suite)
        if exclude:
            query = query.where(r.c.run_id != exclude)
        with self.engine.connect() as conn:
            if accept is None:
                return conn.execute(query.limit(1)).scalar()
            candidates = list(conn.execute(query).scalars())
        return next((run_id for run_id in candidates if accept(run_id)), None)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """Wait for a writer (another run, a nightly job) instead of failing with 'locked'."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout = 10000")
    cur.close()
