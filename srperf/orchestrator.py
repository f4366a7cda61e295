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
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from srperf import behaviors as catalogue
from srperf import environment, forwarders, testbeds
from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import (CfgError, ConfigError, SrperfError, UnsupportedBehavior,
                           VerificationError)
from srperf.progress import ProgressEvents
from srperf.results.store import ResultStore, TrialKey
from srperf.results.summary import summarize
from srperf.generators import MIX_DRIVERS
from srperf.imix import IMIX_SIZE, size_label
from srperf.search.base import GoalResult, LatencyPoint, SearchResult, SearchSettings
from srperf.session import MeasurementSession
from srperf.testbeds.base import Testbed

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


def search_settings(exp: Experiment, tb: TestbedConfig, seed: int = 0) -> SearchSettings:
    """Resolve the experiment's search (rates in % of line rate) to pps."""
    s, lr = exp.search, tb.tester.line_rate_pps
    settings = SearchSettings(
        thresholds_pct=tuple(s.thresholds_pct), min_rate_pps=s.min_rate.resolve(lr),
        max_rate_pps=s.max_rate.resolve(lr), accuracy_pps=s.accuracy.resolve(lr),
        trial_duration_s=s.trial_duration_s,
        initial_trial_duration_s=min(s.initial_trial_duration_s, s.trial_duration_s),
        repeat_near_threshold=s.repeat_near_threshold, warmup_duration_s=s.warmup_s,
        exceed_ratio=s.exceed_ratio, duration_sum_s=s.duration_sum_s,
        relative_width=s.relative_width, seed=seed,
        mrr_rate_pps=s.mrr_rate.resolve(lr) if s.mrr_rate else None)
    try:
        settings.validate()
    except ValueError as exc:
        raise ConfigError(exp.source, "search", dataclasses.asdict(s), str(exc)) from None
    return settings


class Orchestrator:
    """Runs one experiment on one testbed, storing everything in ``results_dir``."""

    def __init__(self, exp: Experiment, tb: TestbedConfig, results_dir: Path,
                 algorithm: str | None = None, progress: Progress | None = None,
                 keep_testbed: bool = False, testbed: Testbed | None = None) -> None:
        if algorithm:
            exp = dataclasses.replace(exp, search=dataclasses.replace(exp.search,
                                                                      algorithm=algorithm))
        self.exp, self.tb = exp, tb
        self.testbed = testbed or testbeds.create(tb)
        self.forwarder = forwarders.get(exp.forwarder)
        self.testbed.check_forwarder(self.forwarder, exp.source)
        self.options = self.forwarder.parse_options(exp.options)
        self.results_dir = Path(results_dir)
        self.progress = progress or (lambda msg: log.info("%s", msg))
        self.events = progress if isinstance(progress, ProgressEvents) else ProgressEvents()
        self.keep_testbed = keep_testbed
        self.settings = search_settings(exp, tb)
        self.behaviors = [catalogue.get(name) for name in exp.behaviors]
        if IMIX_SIZE in exp.packet_sizes and tb.tester.driver not in MIX_DRIVERS:
            raise ConfigError(exp.source, "packet_sizes", "imix",
                              f"an IMIX needs a driver that sends several frame sizes "
                              f"({', '.join(MIX_DRIVERS)}); {tb.source} uses "
                              f"tester.driver {tb.tester.driver!r}")

    # -- top level ---------------------------------------------------------------
    def run(self) -> RunReport:
        store = ResultStore(self.results_dir / "srperf.sqlite")
        env = environment.collect()
        env.update(experiment_file=self.exp.source, testbed_file=self.tb.source,
                   search=dataclasses.asdict(self.settings))
        run_id = store.begin_run(self.exp.name, self.tb.name, self.exp.forwarder, env)
        report = RunReport(run_id, store.path)
        self.progress(f"run {run_id}: {self.exp.name} on {self.tb.name} "
                      f"({self.exp.forwarder}), results in {store.path}")
        session = MeasurementSession(self.testbed, self.forwarder, self.options, store, run_id,
                                     keep_testbed=self.keep_testbed, verify=self.exp.verify,
                                     imix=self.exp.imix)
        session.events = self.events
        self.events.run_started(run_id, self.exp.name, self.tb.name, self.exp.forwarder,
                                len(self.exp.packet_sizes) * self.exp.repetitions
                                * len(self.behaviors))
        try:
            if not self.testbed.is_up():
                self.progress(f"bringing up {self.testbed.kind} testbed {self.tb.name}")
            with session:
                env.update(session.environment())
                store.update_environment(run_id, env)
                if self.exp.conformance == "required":
                    self._conformance(session, store, report)
                self._loop(session, store, report)
            report.status = "finished"
        except BaseException as exc:
            report.status = "failed"
            log.error("run %s failed: %s", run_id, exc)
            raise
        finally:
            store.end_run(run_id, report.status)
            report.summary = summarize(store.frame("searches", run_id),
                                       store.frame("outcomes", run_id))
            csv = self.results_dir / f"summary-{run_id}.csv"
            report.summary.to_csv(csv, index=False)
            report.summary_csv = csv
            store.close()
            self.events.run_done(report.status)
        return report

    def _conformance(self, session: MeasurementSession, store: ResultStore,
                     report: RunReport) -> None:
        """Run each behavior's conformance matrix (stored with the run); a behavior with a
        failing case is not measured (outcome ``nonconformant``)."""
        from srperf import conform

        session.use_options(self.forwarder.conformance_options(self.options))
        try:
            reports = conform.run_matrix(session, self.behaviors, store, report.run_id)
        finally:
            session.use_options(self.options)
        for rep in reports:
            failing = [r.case for r in rep.results if r.status == "fail"]
            summary = ", ".join(f"{rep.count(s)} {s}" for s in conform.STATUSES)
            if not failing:
                self.progress(f"{rep.behavior}: conformance {summary}"
                              + (f" (not run: {rep.skipped})" if rep.skipped else ""))
                continue
            reason = (f"conformance required: {len(failing)} failing case(s): "
                      f"{', '.join(failing[:8])}{' ...' if len(failing) > 8 else ''}")
            for size in self.exp.packet_sizes:
                key = TrialKey(rep.behavior, self.exp.forwarder, size, 0, 0)
                self._outcome(store, report, key, "nonconformant", reason)

    # -- the plan -------------------------------------------------------------------
    def _loop(self, session: MeasurementSession, store: ResultStore, report: RunReport) -> None:
        seq = 0
        for size in self.exp.packet_sizes:
            for rep in range(1, self.exp.repetitions + 1):
                for beh in self.behaviors:
                    if report.outcomes.get((beh.name, size), ("",))[0] in SKIP_AFTER:
                        continue
                    seq += 1
                    key = TrialKey(beh.name, self.exp.forwarder, size, rep, seq)
                    self._one(session, store, report, beh, key)

    def _one(self, session: MeasurementSession, store: ResultStore, report: RunReport,
             beh: catalogue.Behavior, key: TrialKey) -> None:
        try:
            result = session.measure(
                beh, key, self.settings, self.exp.search.algorithm,
                on_verified=lambda what: self.progress(f"{beh.name}: verified ({what})"),
                latency=self.exp.latency)
        except UnsupportedBehavior as exc:
            self._outcome(store, report, key, "unsupported", exc.reason)
        except VerificationError as exc:
            self._outcome(store, report, key, "verify_failed", str(exc))
        except CfgError as exc:
            self._outcome(store, report, key, "error", str(exc))
        else:
            report.searches.append((key, result))
            report.outcomes[(key.behavior, key.packet_size)] = ("measured", "")
            store.add_outcome(report.run_id, key.behavior, key.forwarder, key.packet_size,
                              "measured")
            self.progress(self._describe(key, result))
            for p in result.latency:
                self.progress(f"{key.behavior}: latency at {p.fraction:.0%} of PDR: "
                              + describe_latency(p))

    def _outcome(self, store: ResultStore, report: RunReport, key: TrialKey, status: str,
                 reason: str) -> None:
        report.outcomes[(key.behavior, key.packet_size)] = (status, reason)
        store.add_outcome(report.run_id, key.behavior, key.forwarder, key.packet_size,
                          status, reason)
        self.progress(f"{key.behavior}: {status}: {reason}")

    def _describe(self, key: TrialKey, result: SearchResult) -> str:
        parts = []
        for g in result.goals:
            if g.status in ("ok", "at_max") and g.lower_bound_pps is not None:
                up = f"{g.upper_bound_pps / 1e3:.1f}" if g.upper_bound_pps else "?"
                parts.append(f"{'NDR' if g.threshold_pct == 0 else f'PDR@{g.threshold_pct:g}%'}"
                             f" [{g.lower_bound_pps / 1e3:.1f}, {up}] kpps"
                             + (" (at max rate)" if g.status == "at_max" else "")
                             + describe_estimate(g))
            else:
                parts.append(f"{g.threshold_pct:g}%: {g.status} {g.note}".strip())
        return (f"{key.behavior} size {size_label(key.packet_size)} rep {key.repetition}: "
                + "; ".join(parts) + f" ({result.n_trials} trials, "
                f"{result.trial_seconds:.1f} trial-s, {result.wall_s:.1f} s)")


def describe_latency(p: LatencyPoint) -> str:
    """``min/avg/max 5/9/40 us, p50/p90/p99/p99.9 8/12/30/38 us`` or why there is none."""
    if p.latency is None:
        return f"not measured: {p.note}"
    lat = p.latency

    def us(*names: str) -> str:
        return "/".join("-" if lat.get(n) is None else f"{lat[n]:g}" for n in names)

    return (f"{p.rate_pps / 1e3:.1f} kpps, min/avg/max {us('min_us', 'avg_us', 'max_us')} us, "
            f"jitter {us('jitter_us')} us, p50/p90/p99/p99.9 "
            f"{us('p50_us', 'p90_us', 'p99_us', 'p999_us')} us ({lat.get('source')})")


def describe_estimate(g: GoalResult) -> str:
    """`` estimate X kpps (95 % a-b)`` for a goal with a crossing estimate, else ``""``."""
    if g.estimate_pps is None:
        return ""
    low = "open" if g.estimate_low_pps is None else f"{g.estimate_low_pps / 1e3:.1f}"
    high = "open" if g.estimate_high_pps is None else f"{g.estimate_high_pps / 1e3:.1f}"
    return f", estimate {g.estimate_pps / 1e3:.1f} kpps (95 % {low}-{high})"


__all__ = ["Orchestrator", "describe_estimate", "describe_latency", "RunReport", "search_settings",
           "SrperfError"]
