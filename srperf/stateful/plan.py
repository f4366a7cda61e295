"""The stateful plan of one run: configurations x repetitions, stored as they end.

Entered from the orchestrator's loop when the experiment's ``kind`` is not ``pdr``, on the
same session (testbed, lock, SUT, store).  A configuration is a behavior with a VNF mode,
a segment-list length and a number of chains; for each, the SUT is configured, the TCP
steered through it (:mod:`srperf.stateful.steering`), the runner's servers started, and
each repetition stored (one ``stateful`` row) with the SUT's counter deltas and Table I.

``goodput.streams: calibrated`` takes the stream count of the latest calibration in the
store, or runs one first: the function bypassed (forwarder linux, plain ``ipv6``), streams
added one at a time until goodput grows by no more than ``calibration.growth_pct``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from srperf.behaviors import catalogue
from srperf.forwarders import registry as forwarders
from srperf.config.model import Experiment
from srperf.errors import CfgError, UnsupportedBehavior, VerificationError
from srperf.stateful import runner as make_runner
from srperf.stateful.base import Endpoints, StatefulError, StatefulSample, Variant
from srperf.stateful.counters import cache_entries, table_i
from srperf.stateful.endpoints import make_endpoints
from srperf.config.stateful import CALIBRATED
from srperf.stateful.carry import CARRIED, VISITED
from srperf.stateful.steering import VISITED_SIDS, Steering, refusal

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
CALIBRATION = "calibration"
"""``kind`` of the stored calibration rows."""
PIPES_FORWARDER = forwarders.pipes.FORWARDER.name
"""``forwarder`` of the rows of SRv6Pipes chains (srperf.forwarders.pipes)."""
CHOSEN = "chosen"
"""``variant`` of the calibration row that records the stream count chosen."""


@dataclass(frozen=True)
class Configuration:
    """One measured configuration of a stateful run."""

    behavior: str
    vnf_mode: str | None
    segments: int
    chains: int
    segment_mode: str = VISITED
    """How the segments beyond the two that process a packet are made (goodput's
    segment_mode): carried ones are named in the label, visited ones are not (the
    meaning of 'N segs' in runs stored before carried existed)."""

    @property
    def setting(self) -> str:
        """The configuration without its behavior (``vnf forward, 2 segs``)."""
        return ", ".join(self.label.split(", ")[1:])

    @property
    def label(self) -> str:
        parts = [self.behavior]
        if self.vnf_mode:
            parts.append(f"vnf {self.vnf_mode}")
        if self.behavior != "ipv6":
            extra = self.segments - VISITED_SIDS
            parts.append(f"{self.segments} segs" + (f" ({extra} carried)" if extra > 0 and
                                                    self.segment_mode == CARRIED else ""))
        if self.chains > 1:
            parts.append(f"{self.chains} chains")
        return ", ".join(parts)


@dataclass
class StatefulRows:
    """What a stateful run stored, for the command line's table."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    calibrated_streams: int | None = None


def configurations(exp: Experiment) -> list[Configuration]:
    g = exp.goodput
    seg_mode = g.segment_mode if exp.kind == "goodput" else VISITED
    has_vnfs = "vnf_mode" in forwarders.get(exp.forwarder).options.json_schema()["properties"]
    modes: list[str | None] = list(g.vnf_modes) if g.vnf_modes else \
        [exp.options.get("vnf_mode", "forward") if has_vnfs else None]
    out = []
    for mode in modes:
        for beh in exp.behaviors:
            for chains in g.chains:
                for segs in (g.segments if beh != "ipv6" else g.segments[:1]):
                    out.append(Configuration(beh, mode, segs, chains, seg_mode))
    return out


def planned_samples(exp: Experiment) -> int:
    """The samples a stateful run plans (calibration aside): each configuration's
    variants (goodput: one stream count; http: one per object size) x repetitions; an
    SRv6Pipes run: each case's object sizes x repetitions."""
    reps = int((exp.goodput if exp.kind == "goodput" else exp.http).repetitions)
    if exp.pipes:
        return sum(len(case.object_sizes) for case in exp.pipes) * reps
    variants = 1 if exp.kind == "goodput" else len(exp.http.object_sizes)
    return len(configurations(exp)) * variants * reps


class StatefulPlan:
    """Runs an experiment of a stateful kind on an open session."""

    def __init__(self, exp: Experiment, session: Any, store: Any, run_id: str,
                 progress: Progress, sample_done: Callable[[], None] | None = None,
                 replan: Callable[[int], None] | None = None) -> None:
        self.exp, self.session, self.store, self.run_id = exp, session, store, run_id
        self.progress = progress
        self.sample_done = sample_done or (lambda: None)
        """Called once per sample stored (calibration aside): the run's progress count."""
        self.replan = replan or (lambda planned: None)
        """Called with the samples now planned when a configuration leaves the rounds (it
        was refused or its first repetition failed): it stores one row for what it will
        not measure, so that 'srperf runs' adds up."""
        self._stored: dict[Configuration, int] = {}
        self.tb = session.testbed.config
        self.result = StatefulRows()
        self.config: Any = exp.goodput if exp.kind == "goodput" else exp.http

    # -- top level ------------------------------------------------------------------
    def run(self) -> StatefulRows:
        if self.exp.pipes:
            return self.run_pipes()
        handle = make_endpoints(self.session.testbed)
        endpoints = handle.up()
        try:
            if self.exp.kind == "goodput" and self.config.streams == CALIBRATED:
                streams = self._stored_calibration()
                if streams is None:
                    streams = self.calibrate(endpoints)
                self.result.calibrated_streams = streams
                self.config = dataclasses.replace(self.config, streams=streams)
            # Repetitions interleaved across configurations (rep 1 of each, then rep 2...):
            # a slow spell of the shared machine hits every configuration alike.  Each
            # round configures, steers and starts the servers anew; a configuration that
            # cannot be set up, or whose first repetition fails, leaves the rounds.
            live = configurations(self.exp)
            per_conf = planned_samples(self.exp) // max(len(live), 1)
            planned = per_conf * len(live)
            for rep in range(1, int(self.config.repetitions) + 1):
                kept = [conf for conf in live if self._configuration(endpoints, conf, rep)]
                for conf in (c for c in live if c not in kept):
                    planned -= per_conf - self._stored.get(conf, 0)
                if len(kept) < len(live):
                    self.replan(planned)
                live = kept
        finally:
            handle.down()
        return self.result

    # -- SRv6Pipes chains ----------------------------------------------------------------
    def run_pipes(self) -> StatefulRows:
        """The ``pipes:`` configurations on a chain of namespaces of their own
        (``<testbed prefix>p-c``, ``-m1``...): the testbed's SUT is not on their path."""
        from srperf.stateful.pipes_plan import run_cases

        if not self.session.testbed.makes_namespaces:
            raise StatefulError(f"{self.exp.source}: pipes: SRv6Pipes chains are built in "
                                f"namespaces: a virtual testbed, not {self.tb.kind!r}")

        def on_sample(case: Any, variant: Variant, rep: int, sample: StatefulSample) -> None:
            self.session.testbed.keep_claim()
            if not sample.ok and not sample.reason.strip():
                sample = dataclasses.replace(sample, reason=f"{sample.status}: the tool "
                                                            "gave no reason")
            metric = "requests_per_s"
            self.store.add_stateful_sample(
                self.run_id, self.exp.kind, case.label, PIPES_FORWARDER, variant, rep, sample,
                duration_s=float(self.config.duration_s), primary_metric=metric)
            self.sample_done()
            self.result.rows.append(dict(
                behavior=case.label, forwarder=PIPES_FORWARDER, kind=self.exp.kind,
                configuration=case.label, variant=variant.label, repetition=rep,
                status=sample.status, reason=sample.reason, metric=metric,
                value=sample.metrics.get(metric), metrics=dict(sample.metrics), counters={},
                detail=dict(sample.detail)))
            value = sample.metrics.get(metric)
            self.progress(f"{case.label} {variant.label} rep {rep}: "
                          + (f"{value:.0f} req/s, {sample.metrics['transfer_mbps']:.1f} Mb/s"
                             if sample.ok and value is not None
                             else f"{sample.status}: {sample.reason}"))

        methods = run_cases(f"{self.tb.prefix}p", self.exp.pipes, self.config,
                            int(self.config.repetitions), on_sample,
                            options=self.session.options)
        if methods:
            self.progress(f"impairments made by {', '.join(sorted(methods))}")
        return self.result

    # -- calibration -------------------------------------------------------------------
    def _stored_calibration(self) -> int | None:
        frame = self.store.frame("stateful_samples")
        if frame.empty:
            return None
        cal = frame[(frame["kind"] == CALIBRATION) & (frame["status"] == "ok")
                    & (frame["variant"] == CHOSEN)]
        if cal.empty:
            return None
        last = cal.sort_values("id").iloc[-1]
        metrics = json.loads(last["metrics"] or "{}")
        chosen = metrics.get("calibrated_streams")
        if chosen is None:
            return None
        self.progress(f"calibration: {int(chosen)} streams (stored by run {last['run_id']})")
        return int(chosen)

    def calibrate(self, endpoints: Endpoints) -> int:
        """Streams that saturate the path with the function bypassed (plain IPv6 on
        forwarder linux): stored, and returned."""
        cal = self.exp.goodput.calibration
        linux = forwarders.get("linux")
        sut = self.session.testbed.sut(linux, linux.parse_options({}))
        ipv6 = catalogue.get("ipv6")
        sut.open()
        chosen, best = 1, 0.0
        try:
            sut.configure(ipv6)
            runner = make_runner("goodput")
            config = dataclasses.replace(self.exp.goodput, streams=cal.max_streams)
            with Steering(endpoints, self.tb, "ipv6"):
                runner.start(endpoints, config)
                try:
                    for n in range(1, cal.max_streams + 1):
                        values = []
                        for rep in range(1, cal.repetitions + 1):
                            sample = runner.run(endpoints, config, cal.duration_s,
                                                Variant(f"{n} streams", {"streams": n}))
                            self._store(CALIBRATION, Configuration("ipv6", None, 0, 1), n,
                                        rep, sample, {}, "goodput_mbps")
                            if not sample.ok:
                                raise StatefulError(f"calibration with {n} streams: "
                                                    f"{sample.reason}")
                            values.append(sample.metrics["goodput_mbps"])
                        mean = sum(values) / len(values)
                        self.progress(f"calibration: {n} streams: {mean:.0f} Mb/s")
                        if n > 1 and mean <= best * (1 + cal.growth_pct / 100):
                            break
                        if mean > best:
                            chosen, best = n, mean
                finally:
                    runner.stop(endpoints)
            sut.unconfigure(ipv6)
        finally:
            sut.close()
        self.store.add_stateful_sample(
            self.run_id, CALIBRATION, "ipv6", "linux", Variant(CHOSEN, {"streams": chosen}), 0,
            StatefulSample({"calibrated_streams": float(chosen), "goodput_mbps": best,
                            "growth_pct": float(cal.growth_pct)}),
            duration_s=cal.duration_s, primary_metric="goodput_mbps")
        self.progress(f"calibration: {chosen} streams saturate the path ({best:.0f} Mb/s; "
                      f"one more grows goodput by <= {cal.growth_pct:g} %)")
        return chosen

    # -- one configuration --------------------------------------------------------------
    def _configuration(self, endpoints: Endpoints, conf: Configuration, rep: int) -> bool:
        """Set up ``conf`` and run its repetition ``rep`` (each variant once); False when
        it is to be left out of the later rounds (it could not be set up, or its first
        repetition failed)."""
        session, beh = self.session, catalogue.get(conf.behavior)
        runner = make_runner(self.exp.kind)
        if conf.vnf_mode is not None:
            options = dataclasses.replace(session.options, vnf_mode=conf.vnf_mode)
            if conf.vnf_mode == "snat" and hasattr(options, "proxy"):
                options = dataclasses.replace(options, proxy=dataclasses.replace(
                    options.proxy, cache_nat_key=True))
            session.use_options(options)
        try:
            why = refusal(conf.behavior, self.tb, conf.segments, conf.chains, conf.vnf_mode)
            if why:   # known before the SUT is touched
                raise UnsupportedBehavior(conf.behavior, why)
            session.configure(beh)
            try:
                steering = Steering(endpoints, self.tb, conf.behavior, conf.segments,
                                    conf.chains, conf.segment_mode, conf.vnf_mode)
                with steering:
                    self.progress(f"{conf.label}: {steering.describe()}")
                    runner.start(endpoints, self.config)
                    try:
                        return self._repetition(endpoints, conf, runner, steering, rep)
                    finally:
                        runner.stop(endpoints)
            finally:
                session.unconfigure(beh)
        except UnsupportedBehavior as exc:
            self._skip(conf, "unsupported", exc.reason, rep)
        except (CfgError, VerificationError, StatefulError) as exc:
            self._skip(conf, "failed", str(exc), rep)
        return False

    def _repetition(self, endpoints: Endpoints, conf: Configuration, runner: Any,
                    steering: Steering, rep: int) -> bool:
        """Repetition ``rep`` of each of the runner's variants, stored; False when the
        first repetition failed (the others are then not run)."""
        sut = self.session.sut
        duration = float(self.config.duration_s)
        for variant in runner.variants(self.config):
            params = {**variant.params, "addresses": steering.addresses}
            variant = Variant(variant.label, params)
            self.session.testbed.keep_claim()
            before = sut.counters()
            entries = cache_entries(endpoints.sut, self.tb.sut.in_port.name) \
                if conf.behavior == "end_cache" and before is not None else None
            carried = steering.carry_counts()
            sample = runner.run(endpoints, self.config, duration, variant)
            counters: dict[str, Any] = {}
            if before is not None:
                after = sut.counters() or {}
                now = cache_entries(endpoints.sut, self.tb.sut.in_port.name) \
                    if entries is not None else None
                delta = {k: after[k] - before.get(k, 0) for k in after}
                counters = {"dataplane": {k: v for k, v in delta.items() if v},
                            "table_i": table_i(delta, now - entries if entries is not None
                                               and now is not None else None)}
            if carried is not None:   # packets whose extra SIDs the client marked visited
                now = steering.carry_counts() or {}
                counters["srh_carry"] = {k: now[k] - carried.get(k, 0) for k in now}
            self._store(self.exp.kind, conf, variant, rep, sample, counters,
                        runner.primary_metric)
            value = sample.metrics.get(runner.primary_metric)
            if not sample.ok and rep == 1:
                self.progress(f"{conf.label}: {sample.status}: {sample.reason} "
                              "(first repetition: the others are not run)")
                return False
            self.progress(f"{conf.label} {variant.label} rep {rep}: "
                          + (f"{runner.primary_metric} {value:.1f}" if sample.ok
                             and value is not None else f"{sample.status}: {sample.reason}")
                          + (f", table I {counters['table_i']}" if "table_i" in counters
                             else ""))
        return True

    def _store(self, kind: str, conf: Configuration, variant: Any, rep: int,
               sample: StatefulSample, counters: dict[str, Any], metric: str) -> None:
        label = variant.label if isinstance(variant, Variant) else f"{variant} streams"
        if not sample.ok and not sample.reason.strip():
            sample = dataclasses.replace(sample, reason=f"{sample.status}: the tool gave no "
                                                        "reason")
        streams = variant.params.get("streams") if isinstance(variant, Variant) else variant
        row = dict(behavior=conf.behavior, forwarder=self.exp.forwarder if kind != CALIBRATION
                   else "linux", packet_size=0, repetition=rep, kind=kind,
                   configuration=conf.label, segments=conf.segments, streams=streams,
                   variant=label, status=sample.status, reason=sample.reason,
                   metric=metric, value=sample.metrics.get(metric),
                   metrics=dict(sample.metrics), counters=counters, detail=dict(sample.detail))
        # One stored configuration per behavior x (VNF mode, segments, chains) x variant:
        # the store, report and compare group samples by (kind, behavior, variant).
        params = dict(variant.params) if isinstance(variant, Variant) else {"streams": streams}
        params.pop("addresses", None)
        params.update(vnf_mode=conf.vnf_mode, segments=conf.segments, chains=conf.chains,
                      segment_mode=conf.segment_mode)
        stored = Variant(f"{conf.setting}; {label}" if conf.setting else label, params)
        self.store.add_stateful_sample(
            self.run_id, kind, conf.behavior, row["forwarder"], stored, rep, sample,
            duration_s=float(self.config.duration_s), primary_metric=metric,
            counters=counters or None)
        self.result.rows.append(row)
        if kind != CALIBRATION:
            self._stored[conf] = self._stored.get(conf, 0) + 1
            self.sample_done()

    def _skip(self, conf: Configuration, status: str, reason: str, rep: int = 1) -> None:
        """Store why ``conf`` could not be set up: as repetition 0 in the first round (the
        configuration refused), else as the repetition it cost."""
        self.progress(f"{conf.label}: {status}: {reason}")
        self._store(self.exp.kind, conf, Variant("-", {}), 0 if rep == 1 else rep,
                    StatefulSample({}, status, reason), {}, "goodput_mbps"
                    if self.exp.kind == "goodput" else "requests_per_s")


__all__ = ["StatefulPlan", "StatefulRows", "Configuration", "configurations", "CALIBRATION",
           "CHOSEN", "planned_samples"]
