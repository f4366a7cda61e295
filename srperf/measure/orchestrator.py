"""Run an experiment on a testbed: the plan; the measuring is the session's.

Data flows one way::

    Experiment + Testbed -> MeasurementSession (SUT configured through its transport)
      -> behavior verified (a few packets captured and checked)
      -> search(measure) -> TrafficGenerator.trial -> ResultStore (every trial)

Repetitions are interleaved across behaviors (repetition 1 of every behavior,
then repetition 2, ...) so slow drifts of the host hit every behavior alike.
Whatever happens, the SUT is cleaned and every finished trial is kept.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator

import pandas as pd

from srperf.behaviors import catalogue
from srperf.forwarders import registry as forwarders
from srperf.testbeds import registry as testbeds
from srperf.measure import environment, run_record
from srperf.safety import safe_paths
from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import (CfgError, ConfigError, SearchAborted, SrperfError, StoreError,
                           UnsupportedBehavior, VerificationError)
from srperf.measure.progress import ProgressEvents
from srperf.results.store import ResultStore, TrialKey
from srperf.results.measured import nothing_measured, what_to_try
from srperf.results.names import goal_name, interval_text
from srperf.results.summary import summarize
from srperf.traffic.generators import MIX_DRIVERS
from srperf.traffic.imix import IMIX_SIZE, size_label
from srperf.search.base import GoalResult, LatencyPoint, SearchResult, SearchSettings
from srperf.search.configured import search_settings
from srperf.traffic.flows import Flows
from srperf.measure.session import MeasurementSession
from srperf.measure.run_record import describe_error, remove_stale_workdir, run_tmpdir
from srperf.util.terminate import run_end
from srperf.testbeds.base import Testbed
from srperf.util.wording import count, plural

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
SKIP_AFTER = ("unsupported", "verify_failed", "error", "nonconformant")
"""Outcomes after which a behavior is not tried again in later repetitions."""


@dataclass
class RunReport:
    """What a run produced: its id, the store, per-search results and outcomes."""

    run_id: str
    store_path: Path
    searches: list[tuple[TrialKey, SearchResult]] = field(default_factory=list)
    outcomes: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    summary_csv: Path | None = None
    status: str = "running"
    store_where: str = ""
    """The store for messages: its file, or its URL without the password."""
    nothing_measured: str | None = None
    """None when the run has at least one figure; else why it has none, naming each
    behavior's status (:func:`srperf.results.measured.nothing_measured`)."""
    stateful: Any = None
    """What a stateful run (kind goodput/http) stored (srperf.stateful.plan.StatefulRows)."""


class Orchestrator:
    """Runs one experiment on one testbed, storing everything in ``results_dir``."""

    def __init__(self, exp: Experiment, tb: TestbedConfig, results_dir: Path,
                 algorithm: str | None = None, progress: Progress | None = None,
                 keep_testbed: bool = False, testbed: Testbed | None = None,
                 recipe: dict[str, Any] | None = None, store: str | None = None) -> None:
        if algorithm:
            exp = dataclasses.replace(exp, search=dataclasses.replace(exp.search,
                                                                      algorithm=algorithm))
        self.exp, self.tb = exp, tb
        self.testbed = testbed or testbeds.create(tb)
        self.testbed.for_kind(exp.kind)
        self.forwarder = forwarders.get(exp.forwarder)
        self.testbed.check_forwarder(self.forwarder, exp.source)
        self.options = self.forwarder.parse_options(exp.options)
        self.results_dir = Path(results_dir)
        self.store_location = store or str(self.results_dir / "srperf.sqlite")
        """The results database: an SQLite file (default RESULTS/srperf.sqlite) or a
        postgresql:// URL; summary CSVs and temporary files stay in ``results_dir``."""
        say = progress or (lambda msg: log.info("%s", msg))
        self.progress = lambda msg: say(self.testbed.label_line(msg))
        self.events = progress if isinstance(progress, ProgressEvents) else ProgressEvents()
        self.keep_testbed = keep_testbed
        self.report: RunReport | None = None
        """The report of the run once it has begun (its id, even when it fails)."""
        self.recipe = recipe or {}
        """How to make this experiment and testbed again (files, overrides), for resume."""
        self.settings = search_settings(exp, tb)
        self.behaviors = [] if exp.pipes else [catalogue.get(name) for name in exp.behaviors]
        """The catalogue behaviors searched (none for SRv6Pipes chains: their behaviors
        are bytestream functions, srperf.forwarders.pipes; for a ``pm`` block, its cases,
        each searched as a behavior of its own: srperf.pm.cases)."""
        if exp.pm is not None:
            from srperf.pm import cases as pm_cases

            self.behaviors = [pm_cases.behavior(c) for c in pm_cases.expand(exp.pm)]
        model = testbeds.KINDS[tb.kind].is_model
        from srperf.drivers.linux_engine import engine_asked
        if IMIX_SIZE in exp.packet_sizes and (tb.tester.driver not in MIX_DRIVERS or model):
            drivers = ", ".join(MIX_DRIVERS) + (f", not the model of a {tb.kind} testbed"
                                                if model else "")
            raise ConfigError(exp.source, "packet_sizes", "imix",
                              f"an IMIX needs a driver that sends several frame sizes "
                              f"({drivers}); {tb.source} uses tester.driver "
                              f"{tb.tester.driver!r}")
        if IMIX_SIZE in exp.packet_sizes and tb.tester.driver == "linux" \
                and tb.tester.options.get("mode", "mmsg") != "mmsg" \
                and engine_asked(tb.tester.options) != "xdp":
            raise ConfigError(tb.source, "tester.options.mode", tb.tester.options["mode"],
                              f"srgen sends an IMIX with mode 'mmsg' only ({exp.source}: "
                              "packet_sizes has imix)")

    # -- top level ---------------------------------------------------------------
    def plan(self) -> dict[str, Any]:
        """What the run will do, as stored in its environment and compared on resume."""
        return {"forwarder": self.exp.forwarder,
                "behaviors": [b.name for b in self.behaviors] if self.exp.pm is not None
                else list(self.exp.behaviors),
                "packet_sizes": list(self.exp.packet_sizes), "repetitions": self.exp.repetitions,
                "algorithm": self.exp.search.algorithm,
                "search": json.loads(json.dumps(dataclasses.asdict(self.settings), default=str))}

    def run(self, resume: str | None = None) -> RunReport:
        """Run the plan holding the testbed's lock: refused (TestbedBusy, exit 2) before
        anything starts when another run holds it or what is up cannot be reused.  With
        ``resume`` (a run id), continue that run: its ended searches are kept and
        skipped, the one that was running is redone."""
        steps = self.steps(resume)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def steps(self, resume: str | None = None) -> Generator[int, None, RunReport]:
        """:meth:`run` one repetition at a time: the generator yields the number of each
        repetition (of each packet size) once it has ended, with the testbed still up
        and claimed, and returns the report.  Several runs advanced in turn interleave
        their repetitions (:mod:`srperf.kernel.interleave`); ``close()`` or ``throw()``
        at a yield ends the run there as an error there would (SUT cleaned, finished
        trials kept, the run's end recorded)."""
        claimed = self.testbed.claim(f"srperf run {self.exp.name}")
        try:
            self.testbed.check_reusable()
            return (yield from self._run(resume))
        finally:
            if claimed:
                self.testbed.unclaim()

    def _run(self, resume: str | None) -> Generator[int, None, RunReport]:
        # summary CSVs and temporary files go here even when the rows go to --db
        safe_paths.ensure_dir(self.results_dir, "results")
        store = ResultStore(self.store_location)
        try:
            run_id, env, ended = (self._reclaim(store, resume) if resume
                                  else self._begin(store))
        except BaseException:
            store.close()
            raise
        self.testbed.name_run(run_id)
        report = RunReport(run_id, store.path or self.results_dir, store_where=store.where)
        self.report = report
        self.progress(f"run {run_id}: {self.exp.name} on {self.tb.name} "
                      f"({self.exp.forwarder}), results in {store.where}")
        session = MeasurementSession(self.testbed, self.forwarder, self.options, store, run_id,
                                     keep_testbed=self.keep_testbed, verify=self.exp.verify,
                                     imix=self.exp.imix, flows=Flows(
                                         self.exp.traffic.flows.count,
                                         self.exp.traffic.flows.vary))
        session.events = self.events
        self.events.run_started(run_id, self.exp.name, self.tb.name, self.exp.forwarder,
                                self.planned, unit=self.unit)
        if ended:
            self.events.searches_kept(len(ended))
        reason: str | None = None
        signame: str | None = None
        adopt = False
        try:
            with run_tmpdir(self.results_dir / "runs" / run_id / "tmp") as tmp:
                was_up = self.testbed.is_up()
                if not was_up:
                    self.progress(f"bringing up {self.testbed.kind} testbed {self.tb.name}")
                if resume:
                    # the dead run's testbed is checked by up() (rebuilt when incomplete),
                    # its SUT cleaned by the session; what the dead run made, we remove
                    adopt = was_up and bool(env.get("testbed_made")) and not self.keep_testbed
                else:
                    env["testbed_made"] = not was_up   # before anything is made
                    store.update_environment(run_id, env)
                try:
                    with session:
                        previous = env.get("sut_workdir")
                        env.update(session.environment())
                        env["sut_workdir"] = self.testbed.node("sut").workdir()
                        store.update_environment(run_id, env)
                        if resume and previous and previous != env["sut_workdir"]:
                            remove_stale_workdir(self.testbed.node("sut"), str(previous))
                        if self.exp.conformance == "required":
                            self._conformance(session, store, report)
                        repetitions = self._loop(session, store, report, ended)
                        try:
                            for rep in repetitions:
                                with tmp.set_aside():   # another run may go meanwhile
                                    yield rep
                        finally:
                            repetitions.close()
                            self._note_engines(store, run_id, env)
                finally:
                    if adopt:
                        self.progress(f"removing the testbed run {run_id} brought up")
                        self.testbed.down()
            report.status = "finished"
        except KeyboardInterrupt as exc:
            report.status, reason, signame = run_end(exc)
            raise
        except (OSError, StoreError) as exc:
            report.status, reason = "failed", describe_error(exc)
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            what = (str(exc) if isinstance(exc, StoreError) else
                    f"results {self.results_dir}: no space left on device "
                    f"({exc.filename or store.where}); rows written before are kept")
            raise StoreError(f"{what}; the SUT is cleaned; once there is room: "
                             f"srperf run --resume {run_id}") from None
        except BaseException as exc:
            report.status, reason = "failed", describe_error(exc)
            log.info("run %s failed: %s", run_id, reason)   # the caller reports it
            raise
        finally:
            self._finish(store, report, reason, signame)
        return report

    def _note_engines(self, store: ResultStore, run_id: str, env: dict[str, Any]) -> None:
        """The engines the linux generator's trials used, and why ``auto`` kept srgen,
        into the run's environment beside the engine asked (drivers/linux_engine.py)."""
        from srperf.drivers.linux_engine import used

        done = used(self.testbed.generator_in_use())
        if done is None or not isinstance(env.get("generator"), dict):
            return
        env["generator"].update(done)
        try:
            store.update_environment(run_id, env)
        except StoreError as exc:   # the run's own error, if any, is the one to report
            log.warning("the engines used were not stored: %s", exc)

    def _begin(self, store: ResultStore) -> tuple[str, dict[str, Any], dict[int, Any]]:
        env = environment.collect()
        env.update(experiment_file=self.exp.source, testbed_file=self.tb.source,
                   search=dataclasses.asdict(self.settings), plan=self.plan(),
                   recipe=self.recipe)
        run_id = store.begin_run(self.exp.name, self.tb.name, self.exp.forwarder, env,
                                 planned=self.planned)
        return run_id, env, {}

    def _reclaim(self, store: ResultStore,
                 run_id: str) -> tuple[str, dict[str, Any], dict[int, Any]]:
        """Check that ``run_id`` may be resumed with this plan; make it ours again."""
        found = run_record.reclaim(store, run_id, self.plan())
        run_record.remove_tmpdir(self.results_dir / "runs" / run_id / "tmp")
        self.progress(f"resuming run {run_id} ({found.previous_status}): {len(found.ended)} "
                      f"of {count(self.planned, self.unit)} ended and "
                      f"{plural('is', len(found.ended))} kept; "
                      f"{count(found.dropped_trials, 'trial')} of an unfinished "
                      f"search dropped")
        return run_id, found.environment, found.ended

    def _finish(self, store: ResultStore, report: RunReport, reason: str | None,
                signame: str | None) -> None:
        """Record how the run ended and write its summary; a store that cannot be
        written (disk full) is logged here, the run's own error goes on up."""
        try:
            self._record_engines(store, report.run_id)
            if report.status == "finished":   # 'srperf runs' shows why it has no figure
                report.nothing_measured = nothing_measured(store, report.run_id)
                if report.nothing_measured:
                    reason = (f"{report.nothing_measured}; to try: "
                              f"{what_to_try(report.nothing_measured)}")
            store.end_run(report.run_id, report.status, reason, signame)
        except StoreError as exc:   # the run's own error says so; 'srperf runs': dead
            log.info("run %s: its end (%s) not recorded: %s", report.run_id, report.status, exc)
        try:
            report.nothing_measured = nothing_measured(store, report.run_id)
            report.summary = summarize(store.frame("searches", report.run_id),
                                       store.frame("outcomes", report.run_id))
            csv = self.results_dir / f"summary-{report.run_id}.csv"
            safe_paths.write_file(csv, report.summary.to_csv(index=False))
            report.summary_csv = csv
        except (OSError, StoreError, safe_paths.UnsafePath) as exc:
            log.info("summary of run %s not written: %s", report.run_id, exc)
        finally:
            store.close()
            self.events.run_done(report.status)

    def _record_engines(self, store: ResultStore, run_id: str) -> None:
        """Beside the engine asked (``generator.engine``), which engines sent the run's
        trials: ``generator.engines_sent``, trials per engine (``extra["engine"]``), so a
        run under ``auto`` says whether xdpgen, srgen or both sent it."""
        if self.tb.tester.driver != "linux":
            return
        from srperf.drivers.linux_engine import engines_sent

        row = store.run_row(run_id)
        generator = row["environment"].get("generator") if row else None
        if not isinstance(generator, dict):
            return
        generator["engines_sent"] = engines_sent(store.frame("trials", run_id)["extra"])
        store.update_environment(run_id, row["environment"] if row else {})

    @property
    def planned(self) -> int:
        """Searches in the plan: packet sizes x repetitions x behaviors; for a stateful
        experiment, the samples it plans (:func:`srperf.stateful.plan.planned_samples`)."""
        if self.exp.kind != "pdr":
            from srperf.stateful.plan import planned_samples

            return planned_samples(self.exp)
        return len(self.exp.packet_sizes) * self.exp.repetitions * len(self.behaviors)

    @property
    def unit(self) -> str:
        """What :attr:`planned` counts: ``search``, or ``sample`` (a stateful run)."""
        return "search" if self.exp.kind == "pdr" else "sample"

    def _conformance(self, session: MeasurementSession, store: ResultStore,
                     report: RunReport) -> None:
        """Run each behavior's conformance matrix (stored with the run); a behavior with a
        failing case is not measured (outcome ``nonconformant``)."""
        from srperf.measure import conform

        session.use_options(self.forwarder.conformance_options(self.options))
        try:
            reports = conform.run_matrix(session, self.behaviors, store, report.run_id)
        finally:
            session.use_options(self.options)
        for rep in reports:
            failing = [r.case for r in rep.results if r.status == "fail"]
            summary = conform.tally(rep)
            if not failing:
                self.progress(f"{rep.behavior}: conformance {summary}"
                              + (f" (not run: {rep.skipped})" if rep.skipped else ""))
                continue
            reason = (f"conformance required: {count(len(failing), 'failing case')}: "
                      f"{', '.join(failing[:8])}{' ...' if len(failing) > 8 else ''}")
            for size in self.exp.packet_sizes:
                key = TrialKey(rep.behavior, self.exp.forwarder, size, 0, 0)
                self._outcome(store, report, key, "nonconformant", reason)

    # -- the plan -------------------------------------------------------------------
    def _loop(self, session: MeasurementSession, store: ResultStore, report: RunReport,
              ended: dict[int, tuple[str, int, str, str]] | None = None
              ) -> Generator[int, None, None]:
        """The plan, interleaved; a search in ``ended`` (a resumed run's) is replayed
        from the store, not redone, so search numbers and skips stay as they were.
        Yields each repetition's number once its searches have ended (:meth:`steps`)."""
        if self.exp.kind != "pdr":
            from srperf.stateful.plan import StatefulPlan

            def replan(planned: int) -> None:
                store.set_planned(report.run_id, planned)
                self.events.replanned(planned)

            report.stateful = StatefulPlan(self.exp, session, store, report.run_id,
                                           self.progress, self.events.search_done,
                                           replan).run()
            return
        ended = ended or {}
        seq = 0
        for size in self.exp.packet_sizes:
            for rep in range(1, self.exp.repetitions + 1):
                for beh in self.behaviors:
                    if report.outcomes.get((beh.name, size), ("",))[0] in SKIP_AFTER:
                        continue
                    seq += 1
                    if seq in ended:
                        name, stored_size, status, reason = ended[seq]
                        if (name, stored_size) != (beh.name, size):
                            raise SrperfError(f"run {report.run_id}: search {seq} is "
                                              f"{name} {stored_size} B in the store, "
                                              f"{beh.name} {size} B in the plan")
                        report.outcomes[(beh.name, size)] = (status, reason)
                        continue
                    key = TrialKey(beh.name, self.exp.forwarder, size, rep, seq)
                    self._one(session, store, report, beh, key)
                yield rep

    def _one(self, session: MeasurementSession, store: ResultStore, report: RunReport,
             beh: catalogue.Behavior, key: TrialKey) -> None:
        self.events.label = self.testbed.label_line   # every trial line says how it ran
        try:
            result = session.measure(
                beh, key, self.settings, self.exp.search.algorithm,
                on_verified=lambda what: self.progress(self._verified(beh.name, what)),
                latency=self.exp.latency, profile=self.exp.profile,
                on_cost=lambda cost: self.progress(f"{beh.name}: {cost.describe()}"))
        except UnsupportedBehavior as exc:
            self._outcome(store, report, key, "unsupported", exc.reason)
        except VerificationError as exc:
            self._outcome(store, report, key, "verify_failed", str(exc))
        except (CfgError, SearchAborted) as exc:
            self._outcome(store, report, key, "error", str(exc))
        else:
            report.searches.append((key, result))
            report.outcomes[(key.behavior, key.packet_size)] = ("measured", "")
            store.add_outcome(report.run_id, key.behavior, key.forwarder, key.packet_size,
                              "measured", repetition=key.repetition, search_seq=key.search_seq)
            self.progress(self._describe(key, result))
            for p in result.latency:
                self.progress(f"{key.behavior}: latency at {p.fraction:.0%} of PDR: "
                              + describe_latency(p))
            if result.pm_loss is not None:
                from srperf.results.pm_summary import describe_loss_trial

                self.progress(f"{key.behavior}: {describe_loss_trial(result.pm_loss)}")
            if result.profile is not None:
                from srperf.profile.describe import describe_profile

                self.progress(f"{key.behavior}: profile at {result.profile.fraction:.0%} of "
                              f"{result.profile.load_basis}: "
                              f"{describe_profile(result.profile)}")

    def _outcome(self, store: ResultStore, report: RunReport, key: TrialKey, status: str,
                 reason: str) -> None:
        report.outcomes[(key.behavior, key.packet_size)] = (status, reason)
        store.add_outcome(report.run_id, key.behavior, key.forwarder, key.packet_size,
                          status, reason, repetition=key.repetition, search_seq=key.search_seq)
        self.progress(f"{key.behavior}: {status}: {reason}")

    def _verified(self, behavior: str, what: str) -> str:
        """``end: verified (...)``; a model checks no frames and says so as it is."""
        return f"{behavior}: {what}" if self.testbed.is_model else \
            f"{behavior}: verified ({what})"

    def _describe(self, key: TrialKey, result: SearchResult) -> str:
        parts = []
        for g in result.goals:
            if g.status in ("ok", "at_max") and g.lower_bound_pps is not None:
                up = f"{g.upper_bound_pps / 1e3:.1f}" if g.upper_bound_pps else "?"
                parts.append(f"{goal_name(g.threshold_pct)}"
                             f" [{g.lower_bound_pps / 1e3:.1f}, {up}] kpps"
                             + (" (at max rate)" if g.status == "at_max" else "")
                             + describe_estimate(g))
            else:
                parts.append(f"{g.threshold_pct:g}%: {g.status} {g.note}".strip())
        return (f"{key.behavior} size {size_label(key.packet_size)} rep {key.repetition}: "
                + "; ".join(parts) + f" ({count(result.n_trials, 'trial')}, "
                f"{result.trial_seconds:.1f} trial-s, {result.wall_s:.1f} s)")


def describe_latency(p: LatencyPoint) -> str:
    """``min/avg/max 5/9/40 us, p50/p90/p99/p99.9/p99.99 8/12/30/38/40 us`` or why there is
    none (no latency packet received is said, never shown as a latency of zero)."""
    if p.latency is None:
        return f"not measured: {p.note}"
    lat = p.latency

    def us(*names: str) -> str:
        return "/".join("-" if lat.get(n) is None else f"{lat[n]:.4g}" for n in names)

    counts = ""
    if lat.get("sent") is not None:
        counts = (f", probes {lat.get('packets')}/{lat['sent']} lost {lat.get('lost')} "
                  f"reordered {lat.get('reordered')}")
    if not lat.get("packets"):
        return (f"{p.rate_pps / 1e3:.1f} kpps, no latency figure: "
                f"{lat.get('note') or 'no latency packet received'}{counts}")
    cal = p.calibration
    alone = ""
    if cal is not None:
        alone = ("; generator alone (veth pair) p50/p99/p99.9 " + "/".join(
            "-" if cal.get(n) is None else f"{cal[n]:.4g}" for n in
            ("p50_us", "p99_us", "p999_us")) + " us")
    return (f"{p.rate_pps / 1e3:.1f} kpps, min/avg/max {us('min_us', 'avg_us', 'max_us')} us, "
            f"jitter {us('jitter_us')} us, p50/p90/p99/p99.9/p99.99 "
            f"{us('p50_us', 'p90_us', 'p99_us', 'p999_us', 'p9999_us')} us "
            f"({lat.get('source')}){counts}{alone}")


def describe_estimate(g: GoalResult) -> str:
    """`` estimate X kpps (95 % a-b)`` for a goal with a crossing estimate, else ``""``."""
    if g.estimate_pps is None:
        return ""
    def k(v: float | None) -> float | None:
        return None if v is None else v / 1e3

    interval = interval_text(k(g.estimate_low_pps), k(g.estimate_high_pps))
    return f", estimate {g.estimate_pps / 1e3:.1f} kpps (95 % {interval})"


__all__ = ["Orchestrator", "describe_estimate", "describe_latency", "RunReport", "search_settings",
           "SrperfError"]
