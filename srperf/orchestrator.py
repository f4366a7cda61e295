"""Run an experiment on a testbed: configure, verify, search, store.

Data flows one way::

    Experiment + Testbed -> SUT configured (CFG script through a transport)
      -> behavior verified (a few packets captured and checked)
      -> search(measure) -> TrafficGenerator.trial -> ResultStore (every trial)

Repetitions are interleaved across behaviors (repetition 1 of every behavior,
then repetition 2, ...) so slow drifts of the host hit every behavior alike.
Whatever happens, the SUT is cleaned and every finished trial is kept.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from srperf import behaviors as catalogue
from srperf import environment
from srperf.cfg_manager import CfgManager
from srperf.config.model import Experiment, Testbed
from srperf.drivers.base import TrafficGenerator, TrialResult
from srperf.errors import (CfgError, ConfigError, SrperfError, UnsupportedBehavior,
                           VerificationError)
from srperf.generators import create_generator
from srperf.progress import ProgressEvents
from srperf.results.store import ResultStore, TrialKey
from srperf.results.summary import summarize
from srperf.search import create as create_search
from srperf.search.base import GoalResult, SearchResult, SearchSettings
from srperf.transports import for_testbed

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


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


def search_settings(exp: Experiment, tb: Testbed, seed: int = 0) -> SearchSettings:
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


def check_compatible(exp: Experiment, tb: Testbed) -> None:
    """Refuse before touching anything when the testbed cannot run the experiment."""
    if tb.kind == "virtual" and exp.forwarder not in ("linux", "ebpf"):
        raise ConfigError(exp.source, "forwarder", exp.forwarder,
                          f"the virtual testbed {tb.source} runs the Linux kernel: forwarders "
                          "linux and ebpf only (vpp/srnk need an ssh testbed)")
    if tb.kind == "ssh" and exp.forwarder != tb.sut.forwarder:
        raise ConfigError(exp.source, "forwarder", exp.forwarder,
                          f"the SUT of {tb.source} runs {tb.sut.forwarder!r}")


class Orchestrator:
    """Runs one experiment on one testbed, storing everything in ``results_dir``."""

    def __init__(self, exp: Experiment, tb: Testbed, results_dir: Path,
                 algorithm: str | None = None, progress: Progress | None = None,
                 keep_testbed: bool = False) -> None:
        check_compatible(exp, tb)
        if algorithm:
            exp = dataclasses.replace(exp, search=dataclasses.replace(exp.search,
                                                                      algorithm=algorithm))
        self.exp, self.tb = exp, tb
        self.results_dir = Path(results_dir)
        self.progress = progress or (lambda msg: log.info("%s", msg))
        self.events = progress if isinstance(progress, ProgressEvents) else ProgressEvents()
        self.keep_testbed = keep_testbed
        self.settings = search_settings(exp, tb)
        self.behaviors = [catalogue.get(name) for name in exp.behaviors]
        self._measured_at_least_once: set[tuple[str, int]] = set()

    # -- top level ---------------------------------------------------------------
    def run(self) -> RunReport:
        store = ResultStore(self.results_dir / "srperf.sqlite")
        env = environment.collect()
        env.update(experiment_file=self.exp.source, testbed_file=self.tb.source,
                   search=dataclasses.asdict(self.settings))
        run_id = store.begin_run(self.exp.name, self.tb.name, self.exp.forwarder, env)
        report = RunReport(run_id, store.path)
        self.events.run_started(run_id, self.exp.name, self.tb.name, self.exp.forwarder,
                                len(self.exp.packet_sizes) * self.exp.repetitions
                                * len(self.behaviors))
        self.progress(f"run {run_id}: {self.exp.name} on {self.tb.name} "
                      f"({self.exp.forwarder}), results in {store.path}")
        testbed_made = False
        cfg: CfgManager | None = None
        generator: TrafficGenerator | None = None
        try:
            if self.tb.kind == "virtual":
                testbed_made = self._testbed_up()
            if self.tb.kind != "simulated":
                env_vars = catalogue.cfg_env(self.tb)
                cfg = CfgManager(for_testbed(self.tb), self.exp.forwarder, env_vars)
                cfg.install()
                cfg.clean()
                generator = create_generator(self.tb)
            self._loop(store, report, cfg, generator)
            report.status = "finished"
        except BaseException as exc:
            report.status = "failed"
            log.error("run %s failed: %s", run_id, exc)
            raise
        finally:
            self._cleanup(cfg, generator, testbed_made)
            store.end_run(run_id, report.status)
            report.summary = summarize(store.frame("searches", run_id),
                                       store.frame("outcomes", run_id))
            csv = self.results_dir / f"summary-{run_id}.csv"
            report.summary.to_csv(csv, index=False)
            report.summary_csv = csv
            store.close()
            self.events.run_done(report.status)
        return report

    def _testbed_up(self) -> bool:
        from srperf.testbeds.virtual import VirtualTestbed

        vt = VirtualTestbed(self.tb)
        if vt.is_up():
            return False
        self.progress(f"bringing up virtual testbed {self.tb.prefix}")
        vt.up()
        return not self.keep_testbed

    def _cleanup(self, cfg: CfgManager | None, generator: TrafficGenerator | None,
                 testbed_made: bool) -> None:
        for what, action in (("SUT clean", cfg.clean if cfg else None),
                             ("generator close", generator.close if generator else None),
                             ("transport close", cfg.transport.close if cfg else None)):
            if action is None:
                continue
            try:
                action()
            except Exception as exc:  # cleanup must go on
                log.error("%s failed: %s", what, exc)
        if testbed_made:
            from srperf.testbeds.virtual import VirtualTestbed

            VirtualTestbed(self.tb).down()

    # -- the loop ------------------------------------------------------------------
    def _loop(self, store: ResultStore, report: RunReport, cfg: CfgManager | None,
              generator: TrafficGenerator | None) -> None:
        seq = 0
        for size in self.exp.packet_sizes:
            for rep in range(1, self.exp.repetitions + 1):
                for beh in self.behaviors:
                    if report.outcomes.get((beh.name, size), ("",))[0] in (
                            "unsupported", "verify_failed", "error"):
                        continue
                    seq += 1
                    key = TrialKey(beh.name, self.exp.forwarder, size, rep, seq)
                    self._one(store, report, cfg, generator, beh, key)

    def _one(self, store: ResultStore, report: RunReport, cfg: CfgManager | None,
             generator: TrafficGenerator | None, beh: object, key: TrialKey) -> None:
        name, size, run_id = key.behavior, key.packet_size, report.run_id
        vnfs = None
        try:
            if cfg is not None:
                vnfs = self._vnfs_up(beh)
                cfg.env = self._cfg_env(beh)
                cfg.apply(beh.cfg_function, name)  # type: ignore[attr-defined]
            gen = generator
            if gen is None:  # simulated: one model per behavior, seeded by repetition
                gen = create_generator(self.tb, behavior=name, seed=key.search_seq)
            if cfg is not None and self.exp.verify and (name, size) not in \
                    self._measured_at_least_once:
                from srperf.verify import verify_behavior

                what = verify_behavior(beh, self.tb, gen, size)
                self.progress(f"{name}: verified ({what})")
            frame = beh.build_frame(self.tb, size)  # type: ignore[attr-defined]
            gen.prepare(bytes(frame))
            self._measured_at_least_once.add((name, size))
            result = self._search(store, run_id, key, gen)
            report.searches.append((key, result))
            report.outcomes[(name, size)] = ("measured", "")
            store.add_outcome(run_id, name, key.forwarder, size, "measured")
            self.progress(self._describe(key, result))
        except UnsupportedBehavior as exc:
            self._outcome(store, report, key, "unsupported", exc.reason)
        except VerificationError as exc:
            self._outcome(store, report, key, "verify_failed", str(exc))
        except CfgError as exc:
            self._outcome(store, report, key, "error", str(exc))
        finally:
            if cfg is not None:
                cfg.clean()
            if vnfs is not None:
                vnfs.down()

    def _cfg_env(self, beh: object) -> dict[str, str]:
        """SRPERF_* variables for the CFG script: testbed, behavior, proxy knobs."""
        env = catalogue.cfg_env(self.tb, beh)  # type: ignore[arg-type]
        if self.exp.forwarder == "ebpf":
            from srperf.proxy_behaviors import ProxySettings, proxy_env

            env.update(proxy_env(self.tb, ProxySettings(**self.exp.options.get("proxy", {}))))
        return env

    def _vnfs_up(self, beh: object) -> object | None:
        if not getattr(beh, "needs_vnf", False):
            return None
        from srperf.testbeds.vnf import VnfSet  # the legacy VNFs of proxy behaviors

        opts = self.exp.options
        vnfs = VnfSet(self.tb, count=int(opts.get("vnf_count", 1)),
                      mode=str(opts.get("vnf_mode", "forward")))
        vnfs.up()
        return vnfs

    def _outcome(self, store: ResultStore, report: RunReport, key: TrialKey, status: str,
                 reason: str) -> None:
        report.outcomes[(key.behavior, key.packet_size)] = (status, reason)
        store.add_outcome(report.run_id, key.behavior, key.forwarder, key.packet_size,
                          status, reason)
        self.progress(f"{key.behavior}: {status}: {reason}")

    def _search(self, store: ResultStore, run_id: str, key: TrialKey,
                gen: TrafficGenerator) -> SearchResult:
        counters = self._counter_reader()

        def measure(rate_pps: float, duration_s: float) -> TrialResult:
            before = counters() if counters else None
            trial = gen.trial(rate_pps, duration_s)
            if counters and before is not None:
                after = counters()
                delta = {k: after[k] - before.get(k, 0) for k in after}
                trial = dataclasses.replace(trial, extra={**trial.extra, "dataplane": delta})
            store.add_trial(run_id, key, trial)
            self.events.trial_done(rate_pps, duration_s, trial.loss_ratio, usable=trial.usable)
            log.debug("%s %.0f pps %.2f s -> loss %.4f%%", key.behavior, rate_pps,
                      duration_s, 100 * trial.loss_ratio)
            return trial

        algorithm = create_search(self.exp.search.algorithm,
                                  dataclasses.replace(self.settings, seed=key.search_seq))
        started = time.monotonic()
        self.events.search_started(key.behavior, key.packet_size, key.repetition,
                                   key.search_seq, self.settings.thresholds_pct)
        result = algorithm.run(measure)
        self.events.search_done()
        result.wall_s = result.wall_s or time.monotonic() - started
        store.add_search(run_id, key, result)
        return result

    def _counter_reader(self) -> Callable[[], dict[str, int]] | None:
        if self.exp.forwarder != "ebpf" or self.tb.kind != "virtual":
            return None
        from srperf.ebpf_counters import read_counters

        return lambda: read_counters(self.tb.sut_ns)

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
        return (f"{key.behavior} size {key.packet_size} rep {key.repetition}: "
                + "; ".join(parts) + f" ({result.n_trials} trials, "
                f"{result.trial_seconds:.1f} trial-s, {result.wall_s:.1f} s)")


def describe_estimate(g: GoalResult) -> str:
    """`` estimate X kpps (95 % a-b)`` for a goal with a crossing estimate, else ``""``."""
    if g.estimate_pps is None:
        return ""
    low = "open" if g.estimate_low_pps is None else f"{g.estimate_low_pps / 1e3:.1f}"
    high = "open" if g.estimate_high_pps is None else f"{g.estimate_high_pps / 1e3:.1f}"
    return f", estimate {g.estimate_pps / 1e3:.1f} kpps (95 % {low}-{high})"


__all__ = ["Orchestrator", "describe_estimate", "RunReport", "search_settings",
           "check_compatible", "SrperfError"]
