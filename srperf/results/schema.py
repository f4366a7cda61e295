"""The results schema (SQLAlchemy Core) and its versioned migrations.

One schema for SQLite (the default, a file per results directory) and
PostgreSQL (one database that nightly jobs on several testbeds share).

Migrations are a numbered list of small, idempotent steps recorded in a
``schema_version`` table.  That is all Alembic would give here: the schema has
five tables and only ever grows (columns and tables added), every step must also
upgrade SQLite files written before the version table existed (they are
recognised by their columns), and the store must migrate itself when it opens a
file, with no migration scripts to ship or ``alembic upgrade`` to run.  On
PostgreSQL the steps run under an advisory lock so that two testbeds opening
the shared database at once do not both migrate it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

log = logging.getLogger(__name__)

metadata = sa.MetaData()

runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("started", sa.Text), sa.Column("finished", sa.Text),
    sa.Column("experiment", sa.Text), sa.Column("testbed", sa.Text),
    sa.Column("forwarder", sa.Text), sa.Column("status", sa.Text),
    sa.Column("environment", sa.Text),
    sa.Column("purpose", sa.Text, nullable=False, server_default="run"),
    sa.Column("suite", sa.Text),
    sa.Column("reason", sa.Text), sa.Column("signal", sa.Text),
    sa.Column("pid", sa.Integer), sa.Column("host", sa.Text), sa.Column("pid_start", sa.Text),
    sa.Column("planned", sa.Integer),
)
"""One row per run.  ``purpose``: 'run' | 'bench' | 'nightly'; ``suite``: the
nightly suite that made the run (NULL otherwise).  ``status``: 'running' |
'finished' | 'interrupted' (``signal`` names it: SIGINT, SIGTERM) | 'failed';
``reason`` says why a run did not finish (never empty then).  ``pid``, ``host``
and ``pid_start`` (the process's start time in clock ticks since boot, from
/proc) name the process that runs it, so that a run left 'running' by a process
that died (kill -9, power loss) can be told from a live one.  ``planned``: the
number of searches the plan holds (behaviors x sizes x repetitions)."""

def _row_of(*search_key: str) -> list[sa.Column]:
    """The columns every per-behavior table starts with: id, run id, time, behavior,
    forwarder, packet size, then ``search_key`` (integers: repetition, search_seq)."""
    return [sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("run_id", sa.Text, index=True), sa.Column("time", sa.Text),
            sa.Column("behavior", sa.Text), sa.Column("forwarder", sa.Text),
            sa.Column("packet_size", sa.Integer),
            *(sa.Column(name, sa.Integer) for name in search_key)]


trials = sa.Table(
    "trials", metadata,
    *_row_of("repetition", "search_seq"),
    sa.Column("rate_pps", sa.Float), sa.Column("duration_s", sa.Float),
    sa.Column("intended", sa.BigInteger), sa.Column("sent", sa.BigInteger),
    sa.Column("refused", sa.BigInteger), sa.Column("received", sa.BigInteger),
    sa.Column("elapsed_s", sa.Float), sa.Column("offered_rate_pps", sa.Float),
    sa.Column("loss_ratio", sa.Float), sa.Column("generator_limited", sa.Integer),
    sa.Column("counters_consistent", sa.Integer), sa.Column("note", sa.Text),
    sa.Column("extra", sa.Text),
)
"""One row per trial (rates pps, durations s, counts packets)."""

searches = sa.Table(
    "searches", metadata,
    *_row_of("repetition", "search_seq"), sa.Column("algorithm", sa.Text),
    sa.Column("threshold_pct", sa.Float), sa.Column("status", sa.Text),
    sa.Column("lower_pps", sa.Float), sa.Column("upper_pps", sa.Float),
    sa.Column("conditional_pps", sa.Float), sa.Column("n_trials", sa.Integer),
    sa.Column("trial_seconds", sa.Float), sa.Column("wall_s", sa.Float),
    sa.Column("note", sa.Text),
    sa.Column("estimate_pps", sa.Float), sa.Column("estimate_low_pps", sa.Float),
    sa.Column("estimate_high_pps", sa.Float),
)
"""One row per search goal (threshold in %, rates in pps)."""

outcomes = sa.Table(
    "outcomes", metadata,
    *_row_of(), sa.Column("status", sa.Text),
    sa.Column("reason", sa.Text),
    sa.Column("repetition", sa.Integer), sa.Column("search_seq", sa.Integer),
)
"""Per behavior and packet size: measured, unsupported, verify_failed, error.
One row per search that ended (``search_seq`` names it; NULL in stores written
before version 5): a search without an outcome row did not end."""

comparisons = sa.Table(
    "comparisons", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, index=True), sa.Column("baseline_run_id", sa.Text),
    sa.Column("time", sa.Text), sa.Column("threshold_pct", sa.Float),
    sa.Column("verdict", sa.Text), sa.Column("detail", sa.Text),
)
"""Verdicts of ``srperf nightly``: a run against its baseline (threshold in %)."""

conformance = sa.Table(
    "conformance", metadata,
    *_row_of(), sa.Column("case_name", sa.Text), sa.Column("dimension", sa.Text),
    sa.Column("expected", sa.Text), sa.Column("status", sa.Text),
    sa.Column("detail", sa.Text), sa.Column("spec", sa.Text), sa.Column("counters", sa.Text),
)
"""One row per conformance case (srperf conform): expected forward | drop | n/a; status
pass | fail | finding | n/a; counters: the forwarder's counter deltas (JSON)."""

profiles = sa.Table(
    "profiles", metadata,
    *_row_of("repetition", "search_seq"),
    sa.Column("fraction", sa.Float), sa.Column("rate_pps", sa.Float),
    sa.Column("duration_s", sa.Float), sa.Column("cpu", sa.Integer),
    sa.Column("packets", sa.BigInteger), sa.Column("loss_ratio", sa.Float),
    sa.Column("busy_ns", sa.BigInteger), sa.Column("thread_ns", sa.BigInteger),
    sa.Column("ns_per_packet", sa.Float), sa.Column("cpu_ns_per_packet", sa.Float),
    sa.Column("cycles_per_packet", sa.Float), sa.Column("instructions_per_packet", sa.Float),
    sa.Column("samples", sa.Integer), sa.Column("top_function", sa.Text),
    sa.Column("busy_note", sa.Text), sa.Column("pmu_note", sa.Text),
    sa.Column("sampler_note", sa.Text), sa.Column("detail", sa.Text),
)
"""One row per profile trial (srperf.profile), after the search ``search_seq``: load
(fraction of the PDR, pps), ns per forwarded packet (the forwarding threads' time
where known, ``thread_ns``, else the CPU's busy time, ``busy_ns``; the CPU's own
figure is ``cpu_ns_per_packet``),
cycles and instructions per packet (NULL without a PMU: ``pmu_note`` says why), the
busy samples and the largest function; ``detail``: the whole
:class:`srperf.profile.model.Profile` as JSON (functions with shares, BPF programs,
VPP nodes, notes)."""
costs = sa.Table(
    "costs", metadata,
    *_row_of("repetition", "search_seq"),
    sa.Column("method", sa.Text), sa.Column("status", sa.Text),
    sa.Column("runs", sa.Integer), sa.Column("verdict", sa.Text),
    sa.Column("ns_per_packet", sa.Float), sa.Column("ns_min", sa.Float),
    sa.Column("ns_p90", sa.Float), sa.Column("programs", sa.Integer),
    sa.Column("tail_calls", sa.Integer), sa.Column("frame_bytes", sa.Integer),
    sa.Column("step_stats", sa.Text), sa.Column("note", sa.Text),
    sa.Column("detail", sa.Text),
)
"""One row per per-packet cost measured without a generator, after the verification
of the search ``search_seq`` (once per behavior and size): ``method`` (bpf_prog_run:
the xdp forwarder runs its attached chain ``runs`` times over the behavior's own test
frame of ``frame_bytes``), status ok | failed (``note`` says why), the chain's
verdict, median / fastest / 90th-percentile ns per packet, the programs it ran
(dispatcher and steps) and its tail calls; ``step_stats`` off | count | time and
``detail`` (JSON) the per-step runs and ns of those runs (:mod:`srperf.results.costs`)."""

stateful_samples = sa.Table(
    "stateful_samples", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, index=True), sa.Column("time", sa.Text),
    sa.Column("started", sa.Text), sa.Column("finished", sa.Text),
    sa.Column("kind", sa.Text), sa.Column("behavior", sa.Text),
    sa.Column("forwarder", sa.Text), sa.Column("variant", sa.Text),
    sa.Column("variant_params", sa.Text), sa.Column("repetition", sa.Integer),
    sa.Column("duration_s", sa.Float), sa.Column("primary_metric", sa.Text),
    sa.Column("status", sa.Text), sa.Column("reason", sa.Text),
    sa.Column("metrics", sa.Text), sa.Column("detail", sa.Text),
    sa.Column("counters", sa.Text),
)
"""One row per repetition of a stateful experiment (kind goodput | http): the
variant's label and parameters (JSON), the requested duration (s), status ok |
failed | unsupported with its reason, ``metrics`` (JSON: metric name with its unit
-> number; empty unless ok), ``detail`` (JSON: raw per-process figures) and
``counters`` (JSON: the proxy's counter deltas and Table I columns, or empty);
``started``/``finished`` bound the measurement (UTC ISO 8601)."""

version_table = sa.Table(
    "schema_version", metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("applied", sa.Text),
)

TABLES = ("runs", "trials", "searches", "outcomes", "conformance", "stateful_samples",
          "profiles", "costs")
"""Tables a run's data lives in (``comparisons`` refers to runs)."""


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    apply: Callable[[Connection], None]


def _columns(conn: Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(conn).get_columns(table)}


def _create(*tables: sa.Table) -> Callable[[Connection], None]:
    def step(conn: Connection) -> None:
        metadata.create_all(conn, tables=list(tables), checkfirst=True)
    return step


def _add_columns(table: sa.Table, names: tuple[str, ...]) -> Callable[[Connection], None]:
    def step(conn: Connection) -> None:
        have = _columns(conn, table.name)
        for name in names:
            if name in have:
                continue
            col = table.c[name]
            ddl = f"ALTER TABLE {table.name} ADD COLUMN {name} " \
                  f"{col.type.compile(dialect=conn.dialect)}"
            if col.server_default is not None:
                ddl += f" NOT NULL DEFAULT '{col.server_default.arg}'"  # type: ignore
            conn.execute(sa.text(ddl))
    return step


def _indexes(conn: Connection) -> None:
    for table in (trials, searches, outcomes, comparisons):
        have = {ix["name"] for ix in sa.inspect(conn).get_indexes(table.name)}
        for ix in table.indexes:
            if ix.name not in have:
                ix.create(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, trials, searches, outcomes (the first srperf schema)",
              _create(runs, trials, searches, outcomes)),
    Migration(2, "searches: crossing estimate and its interval",
              _add_columns(searches, ("estimate_pps", "estimate_low_pps",
                                      "estimate_high_pps"))),
    Migration(3, "runs: purpose ('run' | 'bench' | 'nightly') and suite",
              _add_columns(runs, ("purpose", "suite"))),
    Migration(4, "comparisons (nightly verdicts) and run_id indexes",
              lambda conn: (_create(comparisons)(conn), _indexes(conn))),
    Migration(5, "runs: reason, signal, process (pid, host, start) and planned searches; "
              "outcomes: repetition and search_seq (which searches ended, for resume)",
              lambda conn: (_add_columns(runs, ("reason", "signal", "pid", "host",
                                                "pid_start", "planned"))(conn),
                            _add_columns(outcomes, ("repetition", "search_seq"))(conn))),
    Migration(6, "conformance (one row per case of srperf conform)",
              _create(conformance)),
    Migration(7, "stateful_samples (one row per repetition of a goodput/http experiment)",
              _create(stateful_samples)),
    Migration(8, "profiles (one row per profile trial after a search)",
              _create(profiles)),
    Migration(9, "costs (per-packet cost without a generator: BPF_PROG_RUN of a chain)",
              _create(costs)),
)
CURRENT_VERSION = MIGRATIONS[-1].version

_PG_LOCK_KEY = 0x5352_5045_5246  # "SRPERF": one advisory lock for schema upgrades


def current_version(conn: Connection) -> int:
    """The version recorded in the database; 0 for a new or pre-versioning file."""
    if not sa.inspect(conn).has_table("schema_version"):
        return 0
    value = conn.execute(sa.select(sa.func.max(version_table.c.version))).scalar()
    return int(value or 0)


def migrate(engine: sa.Engine, now: Callable[[], str]) -> int:
    """Bring the database to :data:`CURRENT_VERSION`; returns the version found.

    Every step is idempotent, so a file written before versioning (no
    ``schema_version`` table, perhaps some newer columns already) is upgraded
    by running all steps.
    """
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        found = current_version(conn)
        if found > CURRENT_VERSION:
            raise RuntimeError(f"results schema version {found} is newer than this srperf "
                               f"({CURRENT_VERSION}); upgrade srperf")
        if found < CURRENT_VERSION:
            _create(version_table)(conn)
            for m in MIGRATIONS:
                if m.version > found:
                    log.info("results schema: migration %d: %s", m.version, m.what)
                    m.apply(conn)
                    conn.execute(version_table.insert().values(version=m.version,
                                                               applied=now()))
        return found
