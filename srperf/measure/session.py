"""One measurement session: configure -> verify -> search -> store, on one testbed.

Shared by the orchestrator (which only plans: sizes x repetitions x behaviors,
interleaved), the benches and the tests, so there is one way to measure::

    with MeasurementSession(testbed, forwarder, options, store, run_id) as s:
        result = s.measure(behavior, key, settings, algorithm="mlr")

Opening takes the testbed's lock (one run per testbed; refused with
TestbedBusy, exit 2, when another run holds it), brings the testbed up (only
what it made is removed at the end), installs the forwarder on the SUT and
cleans it; every trial goes to the store as it ends, with the forwarder's own
counters (packets, per trial) in ``extra['dataplane']`` when it has some (read
once per trial, through a shell held on the SUT: the reading after one trial is
the reading before the next of the same search).
Closing, whatever happened, cleans the SUT, closes the generator and every
transport, removes what was made and gives the lock back.

Faults a search survives: a trial whose generator process died is run once
more (if it dies again the search ends with :class:`SearchAborted`, and the
orchestrator goes on to the next behavior); a dropped SSH connection is
reopened (the SUT's CFG functions are idempotent, so the interrupted one is
run again) and the lock re-taken, the search going on with its trials kept.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from typing import Any, Callable

from srperf.config.model import LatencyConfig, ProfileConfig
from srperf.config.settings import Settings
from srperf.traffic import packets as P
from srperf.drivers.base import (DistinctUnsupported, FlowsUnsupported, LatencyUnsupported,
                                 TrafficGenerator, TrialResult)
from srperf.errors import GeneratorError, SearchAborted, UnsupportedBehavior
from srperf.traffic.flows import Flows
from srperf.forwarders.base import Forwarder
from srperf.traffic.imix import IMIX_SIZE
from srperf.measure.progress import ProgressEvents
from srperf.results.store import ResultStore, TrialKey
from srperf.search.registry import create as create_search
from srperf.search.base import LatencyPoint, Measure, SearchResult, SearchSettings
from srperf.testbeds.base import SutHandle, Testbed

log = logging.getLogger(__name__)

TRIAL_RETRIES = 1
"""Re-runs of a trial whose generator failed (its process died) before the search
is given up."""


def command_line() -> str:
    """This process's command line, for the testbed lock's holder file."""
    words = [os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:]]
    return " ".join(words)[:200]


class MeasurementSession:
    """Measure behaviors of one forwarder on one testbed (a context manager)."""

    flows: Flows | None = None
    """Many flows (``traffic.flows``), None: one flow."""

    def __init__(self, testbed: Testbed, forwarder: Forwarder, options: Settings | None = None,
                 store: ResultStore | None = None, run_id: str | None = None,
                 keep_testbed: bool = False, verify: bool = True,
                 imix: tuple[tuple[int, int], ...] = (), flows: Flows | None = None) -> None:
        testbed.check_forwarder(forwarder, "<session>")
        self.imix = imix
        self.flows = flows if flows is not None and flows.count > 1 else None
        """The mix sent for packet size :data:`IMIX_SIZE`: (size in bytes, weight)."""
        self.testbed = testbed
        self.forwarder = forwarder
        self.options = options if options is not None else forwarder.parse_options({})
        self.store, self.run_id = store, run_id
        self.events = ProgressEvents()  # the orchestrator sets its progress view here
        self.keep_testbed = keep_testbed
        self.verify_enabled = verify
        self._made = False
        self._claimed = False
        self._sut: SutHandle | None = None
        self._verified: set[tuple[str, int]] = set()
        self._costed: set[tuple[str, int]] = set()

    # -- life cycle ---------------------------------------------------------------------
    def open(self) -> "MeasurementSession":
        """Bring the testbed up, install the forwarder on the SUT, leave it clean."""
        if self._sut is not None:
            return self   # already open (``with session.open():`` must not re-open)
        try:
            self._claimed = self.testbed.claim(command_line(), self.run_id)
            self._made = self.testbed.up() and not self.keep_testbed
            self._sut = self.testbed.sut(self.forwarder, self.options)
            self._sut.open()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Clean the SUT, close generator and transports, remove what :meth:`open` made."""
        if self._sut is not None:
            try:
                self._sut.close()
            except Exception as exc:  # cleanup must go on
                log.error("cleaning the SUT failed: %s", exc)
            self._sut = None
        self.testbed.close()
        try:
            if self._made:
                self.testbed.down()
                self._made = False
        finally:
            if self._claimed:
                self.testbed.unclaim()
                self._claimed = False

    def __enter__(self) -> "MeasurementSession":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def sut(self) -> SutHandle:
        if self._sut is None:
            raise RuntimeError("the session is not open")
        return self._sut

    def environment(self) -> dict[str, Any]:
        """Every node's environment, read through its own transport."""
        return self.testbed.environment(self.forwarder)

    def use_options(self, options: Settings) -> None:
        """Go on with forwarder ``options`` (the SUT's build step reruns if they differ)."""
        self.options = options
        self.sut.install(options)

    def use_forwarder(self, forwarder: Forwarder, options: Settings) -> None:
        """Go on with another ``forwarder`` (a paired A/B of two forwarders): the current
        one's SUT handle is closed (the SUT cleaned), the new one's opened."""
        self.testbed.check_forwarder(forwarder, "<session>")
        if self._sut is not None:
            self._sut.close()
            self._sut = None
        self.forwarder, self.options = forwarder, options
        self._sut = self.testbed.sut(forwarder, options)
        self._sut.open()

    # -- steps ----------------------------------------------------------------------------
    def configure(self, behavior: Any) -> None:
        """Configure ``behavior`` on the SUT (and the VNFs it needs)."""
        self.sut.configure(behavior)

    def unconfigure(self, behavior: Any) -> None:
        self.sut.unconfigure(behavior)

    def generator(self, behavior: Any, seed: int = 0) -> TrafficGenerator:
        return self.testbed.generator(behavior.name, seed)

    def verify(self, behavior: Any, packet_size: int, seed: int = 0,
               again: bool = False) -> str | None:
        """Verify once per (behavior, size) (``again``: even if it was, e.g. on a changed
        SUT); returns what was verified, None if it already was."""
        if not self.verify_enabled or (
                (behavior.name, packet_size) in self._verified and not again):
            return None
        size = min(s for s, _ in self.imix) if packet_size == IMIX_SIZE else packet_size
        gen = self.generator(behavior, seed)
        what = (self.sut.verify(behavior, gen, size) if self.flows is None
                else self.sut.verify(behavior, gen, size, flows=self.flows))
        self._verified.add((behavior.name, packet_size))
        return what

    def packet_cost(self, behavior: Any, key: TrialKey) -> Any:
        """The configured behavior's per-packet cost without a generator, once per
        (behavior, size) (:meth:`SutHandle.packet_cost`), stored with the run; None
        when the forwarder has none, its options switch it off or it was measured."""
        if (behavior.name, key.packet_size) in self._costed:
            return None
        self._costed.add((behavior.name, key.packet_size))
        size = min(s for s, _ in self.imix) if key.packet_size == IMIX_SIZE \
            else key.packet_size
        frame = bytes(behavior.build_frame(self.testbed.config, size))
        cost = self.sut.packet_cost(behavior, frame)
        if cost is None:
            return None
        if self.store is not None and self.run_id is not None:
            self.store.add_cost(self.run_id, key, cost)
        return cost

    def prepare(self, behavior: Any, packet_size: int, seed: int = 0) -> bytes:
        """Hand the behavior's test frame (or, for :data:`IMIX_SIZE`, the frames of
        :attr:`imix`) to the generator; return the (first) frame."""
        gen, tb = self.generator(behavior, seed), self.testbed.config
        if gen.bidirectional:
            size = min(s for s, _ in self.imix) if packet_size == IMIX_SIZE else packet_size
            reverse = behavior.build_reverse_frame(tb, size)
            if reverse is None:
                raise UnsupportedBehavior(behavior.name, "it works in one direction only, "
                                          "and the tester sends both ways "
                                          "(tester.options.bidirectional)")
            gen.prepare_reverse(bytes(reverse))
        if packet_size == IMIX_SIZE:
            if getattr(behavior, "distinct_frames", False):
                raise UnsupportedBehavior(behavior.name, "its packets must all differ "
                                          "(distinct_frames), which no driver does for a mix")
            frames = [(bytes(behavior.build_frame(tb, size)), weight)
                      for size, weight in self.imix]
            gen.prepare_mix(frames)
            return frames[0][0]
        frame = bytes(behavior.build_frame(tb, packet_size))
        if self.flows is not None:
            offset = P.counter_offset(frame) if getattr(behavior, "distinct_frames",
                                                        False) else None
            try:
                gen.prepare_flows(frame, self.flows, offset)
            except (FlowsUnsupported, ValueError) as exc:
                raise UnsupportedBehavior(behavior.name, f"{self.flows.count} flows "
                                          f"(traffic.flows): {exc}") from None
        elif getattr(behavior, "distinct_frames", False):
            try:
                gen.prepare_distinct(frame, P.counter_offset(frame))
            except DistinctUnsupported as exc:
                raise UnsupportedBehavior(behavior.name, f"its packets must all differ "
                                          f"(distinct_frames) and {exc}") from None
        else:
            gen.prepare(frame)
        return frame

    def measure_fn(self, behavior: Any, key: TrialKey | None = None,
                   log_to: list[dict[str, Any]] | None = None) -> Measure:
        """``measure(rate_pps, duration_s)``: one trial, with the forwarder's counter deltas,
        stored when the session has a store and ``key``."""
        gen = self.generator(behavior, key.search_seq if key else 0)
        sut = self.sut
        last: dict[str, dict[str, int] | None] = {}

        def measure(rate_pps: float, duration_s: float, *,
                    stop_lost: int | None = None) -> TrialResult:
            self.testbed.keep_claim()  # re-taken if a dropped connection lost it
            # One read per trial: the previous trial's "after" is this one's "before"
            # (nothing but test traffic reaches the SUT between two trials of a search).
            before = last["after"] if "after" in last else sut.counters()
            trial = self._trial(gen, behavior.name, rate_pps, duration_s, stop_lost)
            if before is not None:
                after = sut.counters() or {}
                last["after"] = after
                delta = {k: after[k] - before.get(k, 0) for k in after}
                trial = dataclasses.replace(trial, extra={**trial.extra, "dataplane": delta})
            if self.store is not None and self.run_id is not None and key is not None:
                self.store.add_trial(self.run_id, key, trial)
            self.events.trial_done(rate_pps, duration_s, trial.loss_ratio, usable=trial.usable)
            if log_to is not None:
                log_to.append({"rate_pps": rate_pps, "loss": trial.loss_ratio,
                               "limited": trial.generator_limited,
                               **trial.extra.get("dataplane", {})})
            log.debug("%s %.0f pps %.2f s -> loss %.4f%%", behavior.name, rate_pps, duration_s,
                      100 * trial.loss_ratio)
            return trial

        return measure

    @staticmethod
    def _trial(gen: TrafficGenerator, name: str, rate_pps: float,
               duration_s: float, stop_lost: int | None = None) -> TrialResult:
        """One trial; a generator failure (its process died) is retried
        :data:`TRIAL_RETRIES` times, then ends the search (SearchAborted)."""
        for attempt in range(TRIAL_RETRIES + 1):
            try:
                return gen.trial(rate_pps, duration_s, stop_lost=stop_lost)
            except GeneratorError as exc:
                if attempt < TRIAL_RETRIES:
                    log.warning("%s: the generator failed during a trial at %.0f pps (%s); "
                                "running the trial again", name, rate_pps, exc)
                    continue
                raise SearchAborted(f"the generator failed {attempt + 1} times on a trial at "
                                    f"{rate_pps:.0f} pps: {exc}") from exc
        raise AssertionError("unreachable")

    def search(self, behavior: Any, settings: SearchSettings, algorithm: str,
               key: TrialKey | None = None) -> SearchResult:
        """One search on what is configured now; stored when the session has a store."""
        started = time.monotonic()
        if key is not None:
            self.events.search_started(key.behavior, key.packet_size, key.repetition,
                                       key.search_seq, settings.thresholds_pct)
        result = create_search(algorithm, settings).run(self.measure_fn(behavior, key))
        self.events.search_done()
        result.wall_s = result.wall_s or time.monotonic() - started
        if self.store is not None and self.run_id is not None and key is not None:
            self.store.add_search(self.run_id, key, result)
        return result

    def measure(self, behavior: Any, key: TrialKey, settings: SearchSettings,
                algorithm: str, on_verified: Callable[[str], None] | None = None,
                latency: LatencyConfig | None = None,
                profile: ProfileConfig | None = None,
                on_cost: Callable[[Any], None] | None = None) -> SearchResult:
        """Configure, verify (once), measure the per-packet cost without a generator
        (once, where the forwarder has one), search, unconfigure: one search of
        ``behavior`` (with its latency and profile trials, and a loss-monitoring case's
        loss trial, when asked for)."""
        case = getattr(behavior, "case", None)
        if case is not None:   # a loss-monitoring case sends the flows it monitors
            if not hasattr(self, "_flows_outside_pm"):
                self._flows_outside_pm = self.flows
            flows = case.generator_flows()
            self.flows = flows if flows is not None and flows.count > 1 else None
        elif hasattr(self, "_flows_outside_pm"):
            self.flows = self._flows_outside_pm
        try:
            self.configure(behavior)
            what = self.verify(behavior, key.packet_size, key.search_seq)
            if what is not None and on_verified is not None:
                on_verified(what)
            cost = self.packet_cost(behavior, key)
            if cost is not None and on_cost is not None:
                on_cost(cost)
            frame = self.prepare(behavior, key.packet_size, key.search_seq)
            with self._monitoring(case) as pm:
                result = self.search(behavior,
                                     dataclasses.replace(settings, seed=key.search_seq),
                                     algorithm, key)
                if pm is not None:
                    result.pm_loss = self.pm_loss(behavior, key, result, pm, frame)
                if latency is not None and latency.enabled:
                    result.latency = self.latency(behavior, key, result, latency)
                if profile is not None and profile.enabled:
                    result.profile = self.profile(behavior, key, result, profile)
            return result
        finally:
            self.unconfigure(behavior)

    def _monitoring(self, case: Any) -> Any:
        """The case's implementation attached on the SUT for the ``with`` block
        (:func:`srperf.pm.step.attached`; nothing for a non-pm behavior)."""
        import contextlib

        if case is None:
            return contextlib.nullcontext(None)
        from srperf.pm.step import attached

        transport = getattr(self.sut, "transport", None)
        if transport is None:
            raise UnsupportedBehavior(case.name, "the SUT is a model: nothing to attach a "
                                      "loss monitor to")
        tb = self.testbed.config
        flows = case.monitored(tb)
        sut = tb.sut
        return _Monitored(case, attached(case, transport, sut.out_port.name,
                                         sut.in_port.name, flows), flows)

    def pm_loss(self, behavior: Any, key: TrialKey, result: SearchResult, pm: Any,
                frame: bytes) -> Any:
        """The case's loss trial (:func:`srperf.pm.step.run_case_loss_trial`), stored in
        ``pm_blocks``."""
        from srperf.pm.step import run_case_loss_trial

        node, flows = pm
        if node is None:
            return None
        trial = run_case_loss_trial(self, behavior, key, result, node, flows, frame)
        if trial is not None and self.store is not None and self.run_id is not None:
            self.store.add_pm_trial(self.run_id, key, behavior.case, trial, flows)
        return trial

    def latency(self, behavior: Any, key: TrialKey, result: SearchResult,
                cfg: LatencyConfig) -> list[LatencyPoint]:
        """Latency trials at ``cfg.fractions`` of the PDR ``result`` found (its highest
        loss threshold), stored as trials of the search; a point without figures says
        why (no PDR, a driver without latency streams)."""
        goal = max(result.goals, key=lambda g: g.threshold_pct)
        pdr = goal.lower_bound_pps if goal.status in ("ok", "at_max") else None
        if not pdr:
            return [LatencyPoint(f, 0.0, None, f"no PDR found ({goal.status})")
                    for f in cfg.fractions]
        gen = self.generator(behavior, key.search_seq)
        points = []
        for fraction in cfg.fractions:
            rate = fraction * pdr
            try:
                trial = gen.latency_trial(rate, cfg.duration_s, min(cfg.stream_pps, rate))
            except LatencyUnsupported as exc:
                log.warning("%s: latency not measured: %s", behavior.name, exc)
                return [LatencyPoint(f, f * pdr, None, str(exc)) for f in cfg.fractions]
            trial = dataclasses.replace(trial, extra={**trial.extra, "purpose": "latency",
                                                      "pdr_fraction": fraction})
            if self.store is not None and self.run_id is not None:
                self.store.add_trial(self.run_id, key, trial)
            points.append(LatencyPoint(fraction, rate, trial.extra.get("latency"),
                                       trial.note))
        if cfg.calibrate and not getattr(self, "_latency_calibrated", False):
            from srperf.traffic.latency_calibration import calibrate_points

            self._latency_calibrated = True
            points = calibrate_points(gen, points, cfg, self.store, self.run_id, key)
        return points

    def profile(self, behavior: Any, key: TrialKey, result: SearchResult,
                cfg: ProfileConfig) -> Any:
        """A profile trial at ``cfg.fraction`` of the PDR ``result`` found (its highest
        loss threshold; of its highest passing rate when the generator, not the SUT,
        ran out): the SUT's forwarding CPU measured through the SUT's transport
        (:mod:`srperf.profile`), stored with the search and its trial."""
        from srperf.profile.model import Profile

        goal = max(result.goals, key=lambda g: g.threshold_pct)
        pdr = goal.lower_bound_pps if goal.status in ("ok", "at_max", "generator_limited") \
            else None
        basis = "highest passing rate" if goal.status == "generator_limited" else "PDR"
        cpu = self.testbed.forwarding_cpu()
        profiler = self.sut.profiler(cpu, cfg.frequency_hz, cfg.top,
                                     self.testbed.forwarding_threads())
        if not pdr or profiler is None:
            why = f"no PDR found ({goal.status})" if not pdr else \
                "the SUT is a model: there is no CPU to profile"
            prof = Profile(cfg.fraction, 0.0, cfg.duration_s, cpu, busy_note=why,
                           sampler_note=why, pmu_note=why)
        else:
            self.testbed.keep_claim()
            gen = self.generator(behavior, key.search_seq)
            prof, trial = profiler.run(gen, cfg.fraction * pdr, cfg.duration_s, cfg.fraction)
            prof.load_basis = basis
            trial = dataclasses.replace(trial, extra={**trial.extra, "purpose": "profile",
                                                      "pdr_fraction": cfg.fraction})
            if self.store is not None and self.run_id is not None:
                self.store.add_trial(self.run_id, key, trial)
        if self.store is not None and self.run_id is not None:
            self.store.add_profile(self.run_id, key, prof)
        return prof


class _Monitored:
    """``with``: (the attached node or None, the monitored flows)."""

    def __init__(self, case: Any, cm: Any, flows: list[Any]) -> None:
        self.case, self.cm, self.flows = case, cm, flows

    def __enter__(self) -> tuple[Any, list[Any]]:
        return self.cm.__enter__(), self.flows

    def __exit__(self, *exc: Any) -> Any:
        return self.cm.__exit__(*exc)


__all__ = ["MeasurementSession", "Measure"]
