"""Paired, interleaved A/B measurement on one testbed in one sitting (issue 48).

A and B are two *sides*, each a behavior on a forwarder with its options and,
optionally, a change of the SUT (:mod:`srperf.measure.sut_change`): two behaviors, two
forwarders, two settings of one forwarder, or one behavior with and without an nftables
rule set or a sysctl.  Both are measured through one :class:`MeasurementSession` (the same
trial machinery as ``srperf run``: ``session.measure_fn`` stores every trial).  Blocks of
four trials in random ABBA/BAAB order each give one ratio B/A of received rates at one
common offered load; :mod:`srperf.results.paired` does the statistics and the sequential
stopping.

The figure per trial is the rate the SUT forwarded while it was overloaded: the offered
load is above both sides' capacities (by default 1.1 times the larger received rate of
one probe trial a side at the testbed's maximum rate), so the received rate is each
side's forwarding capacity (the MRR), a continuous figure whose noise is all visible.
A trial counts only if it *saturated* the SUT: at least :data:`SATURATION_MARGIN` of what
was offered was not received.  Then the generator's own pacing does not matter (a
generator a few per cent short of the asked rate still overloads the SUT), so a
generator-limited trial that saturated is used, its figure being received packets per
second of the time the generator was offering (:func:`offering_s`).  A trial that did
not saturate measured the generator, not the SUT: it is never used.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from srperf.errors import SrperfError
from srperf.measure import sut_change as sc
from srperf.results import paired
from srperf.results.store import TrialKey
from srperf.search.base import SearchSettings

log = logging.getLogger(__name__)
TRIAL_ATTEMPTS = 3
"""Attempts of a trial that is not usable before the comparison stops; a figure is only
ever taken from a usable trial."""
TRIAL_ATTEMPTS_SLIPPED = 3
"""Attempts of a trial whose generator fell behind (see :data:`MAX_SLIP`) before its
block is dropped (:class:`srperf.results.paired.BlockUnusable`): on a shared host a
stall of the generator's CPU is common and says nothing about the sides."""
SATURATION_MARGIN = 0.01
"""A trial saturated the SUT when it lost at least this share of what was offered."""
MAX_SLIP = 0.5
"""A trial whose generator took more than this share longer than asked is not used
(after :data:`TRIAL_ATTEMPTS_SLIPPED` attempts its block is dropped).  Below it the
figure leaves the slipped time out (:func:`offering_s`), which holds up: measured here,
End.X trials that took 25-33 % longer gave 740-781 kpps against 716-852 from trials on
time; End trials that took 30-70 % longer gave 1020-1083 against 1186-1217 kpps (the
load that stalled the generator slowed the SUT too: noise, which the pairing and the
interval carry, not a bias of one side)."""
LOAD_FROM = ("probe", "search")


@dataclass(frozen=True)
class AbSide:
    """One side of the comparison: a behavior on a forwarder with its options, on the SUT
    as it is or with ``sut_change`` applied."""

    behavior: str
    forwarder: str = "linux"
    options: dict[str, Any] = field(default_factory=dict)
    """The forwarder's experiment ``options`` for this side."""
    sut_change: sc.SutChange | None = None
    testbed: str | None = None
    """This side's own testbed (two kernel targets side by side); None: the
    comparison's testbed, shared with the other side."""

    def label(self) -> str:
        parts = [self.behavior]
        if self.testbed is not None:
            parts.append(f"on testbed {self.testbed}")
        if self.forwarder != "linux":
            parts.append(f"on {self.forwarder}")
        if self.options:
            parts.append("with " + ", ".join(f"options.{k}={v}" for k, v in
                                             sorted(_flat(self.options).items())))
        if self.sut_change is not None:
            parts.append(f"+ SUT change {self.sut_change.name}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"behavior": self.behavior, "forwarder": self.forwarder,
                "options": self.options, "sut_change": None if self.sut_change is None else
                {"name": self.sut_change.name, "apply": self.sut_change.apply,
                 "undo": self.sut_change.undo or None}, "testbed": self.testbed}


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


@dataclass(frozen=True)
class AbConfig:
    """What ``srperf ab`` compares and how long it may take."""

    a: AbSide
    b: AbSide
    packet_size: int = 64
    load_pps: float | None = None
    """Common offered load; None: ``load_factor`` x the larger figure ``load_from`` found."""
    load_factor: float = 1.1
    load_from: str = "probe"
    """probe: one trial a side at ``probe_pps`` (default the search's maximum rate), its
    received rate; search: one search a side, its PDR."""
    probe_pps: float | None = None
    trial_s: float = 1.0
    width_pct: float = 1.0
    budget_s: float = 600.0
    min_blocks: int = 8
    max_blocks: int = 1000
    seed: int = 0

    def rule(self) -> paired.StopRule:
        return paired.StopRule(self.width_pct, self.budget_s, self.min_blocks, self.max_blocks)

    def as_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["a"], d["b"] = self.a.as_dict(), self.b.as_dict()
        return d


@dataclass
class AbOutcome:
    """The comparison and how it was made."""

    config: AbConfig
    load_pps: float
    pdrs_pps: dict[str, float] = field(default_factory=dict)
    """What chose the load, per side ("A"/"B"): the PDR (search) or the probe's received
    rate (probe)."""
    result: paired.PairedResult | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    generator_limited_used: int = 0
    """Trials the generator paced short of the load but that still saturated the SUT."""
    retried: int = 0
    """Trials measured again because one gave no figure (each one stored)."""
    dropped: paired.Dropped = field(default_factory=paired.Dropped)
    """Blocks dropped because the generator fell behind in one of their trials."""
    runs: dict[str, str] = field(default_factory=dict)
    """With two testbeds (one per side), each side's run id ("A"/"B")."""
    idle_sut: dict[str, dict[str, float]] = field(default_factory=dict)
    """With two testbeds: per side, the CPU seconds its SUT's process (the idle guest)
    used while the other side measured, and the wall seconds it waited (``cpu_s``,
    ``wall_s``)."""
    execution: dict[str, Any] = field(default_factory=lambda: {"mode": "native"})
    """How the SUT executed (the run environment's ``execution``: ``{"mode": "emulated",
    "how": "QEMU tcg"}`` on a kernel target under TCG, :mod:`srperf.results.emulation`)."""

    @property
    def emulated(self) -> bool:
        from srperf.results.emulation import EMULATED, mode

        return mode({"execution": self.execution}) == EMULATED

    def detail(self) -> dict[str, Any]:
        """What is stored with the run (``comparisons.detail``)."""
        r = self.result
        return {"kind": "paired_ab", "config": self.config.as_dict(),
                "execution": self.execution,
                "sides": {"A": self.config.a.label(), "B": self.config.b.label()},
                "load_pps": self.load_pps, "pdrs_pps": self.pdrs_pps,
                "load_from": self.config.load_from if self.config.load_pps is None else "given",
                "blocks": self.blocks,
                "figure": "received rate of a trial that saturated the SUT, at the common "
                          "offered load (received / the time the generator was offering, pps)",
                "generator_limited_used": self.generator_limited_used,
                "retried": self.retried, "blocks_dropped": self.dropped.count,
                "runs": self.runs, "idle_sut": self.idle_sut,
                "dropped_reasons": self.dropped.reasons[-10:],
                "result": None if r is None else {
                    "n_blocks": r.n_blocks, "ratio": r.ratio, "low": r.low, "high": r.high,
                    "sd_log": r.sd_log, "mdd_pct": r.mdd_pct, "status": r.status,
                    "stop_reason": r.stop_reason, "confidence": r.confidence}}


class AbError(SrperfError):
    """A paired comparison that cannot go on (a load below the SUT's capacity...)."""


def unusable_reason(trial: Any, margin: float = SATURATION_MARGIN,
                    max_slip: float = MAX_SLIP) -> str:
    """Why ``trial`` gives no figure ("" if it does): counters inconsistent, nothing
    received, the generator more than ``max_slip`` late, or less than ``margin`` of the
    offered packets lost (then the figure would be the generator's rate)."""
    if not trial.counters_consistent:
        return "counters inconsistent"
    if trial.received <= 0 or trial.offered <= 0:
        return "nothing received"
    if trial.duration_s > 0 and trial.elapsed_s > (1.0 + max_slip) * trial.duration_s:
        return (f"the generator fell behind: {trial.elapsed_s:.3f} s for a "
                f"{trial.duration_s:g} s trial")
    if trial.received > (1.0 - margin) * trial.offered:
        return (f"not saturated: the SUT received {trial.received} of {trial.offered} "
                f"offered; raise --load")
    return ""


def saturated_rate(trial: Any, margin: float = SATURATION_MARGIN,
                   max_slip: float = MAX_SLIP) -> float | None:
    """The SUT's forwarding rate in ``trial`` (received / :func:`offering_s`, pps) if the trial
    overloaded it with the generator on time (:func:`unusable_reason`), else None."""
    if unusable_reason(trial, margin, max_slip):
        return None
    busy = offering_s(trial)
    return trial.received / busy if busy > 0 else None


def offering_s(trial: Any) -> float:
    """Seconds the generator was offering in ``trial``: its elapsed time less the time its
    schedule slipped (xdpgen's ``slipped_ns``: while its CPU was stalled nothing was
    offered and the SUT idled), never below the asked duration's 95 %.  Measured here:
    trials that slipped 0.14-0.66 s gave 0.61-1.14 Mpps as received / elapsed against
    1.34-1.41 Mpps from trials on time; received / offering time gave 1.0-1.3."""
    elapsed = trial.elapsed_s if trial.elapsed_s > 0 else trial.duration_s
    slipped = trial.extra.get("slipped_ns") if isinstance(trial.extra, dict) else None
    if isinstance(slipped, (int, float)) and slipped > 0:
        elapsed = max(elapsed - slipped / 1e9, 0.95 * trial.duration_s)
    return elapsed


def measure_saturated(fn: Callable[[float, float], Any], rate: float, duration_s: float,
                      label: str) -> tuple[float | None, Any, str, int]:
    """Trials of ``fn`` (a session's measure function, each trial stored) until one gives
    a figure: up to :data:`TRIAL_ATTEMPTS`, or :data:`TRIAL_ATTEMPTS_SLIPPED` while the
    generator is what fell behind.  (figure or None, last trial, why not, attempts)."""
    why, trial, attempt = "", None, 0
    while True:
        attempt += 1
        trial = fn(rate, duration_s)
        why = unusable_reason(trial)
        if not why:
            return saturated_rate(trial), trial, "", attempt
        limit = TRIAL_ATTEMPTS_SLIPPED if why.startswith("the generator") else TRIAL_ATTEMPTS
        log.warning("%s: trial %d not usable (%s)%s", label, attempt, why,
                    "; again" if attempt < limit else "")
        if attempt >= limit:
            return None, trial, why, attempt


class _Sides:
    """Switches the open session between the two sides' forwarders, options and SUT
    changes; only what differs from the current side is redone.  With a session per
    side (two testbeds), each side is entered on its own."""

    def __init__(self, sessions: dict[str, Any], cfg: AbConfig, forwarders: dict[str, Any],
                 options: dict[str, Any]) -> None:
        from srperf.behaviors import catalogue

        self.sessions, self.cfg = sessions, cfg
        self.side = {"A": cfg.a, "B": cfg.b}
        self.beh = {s: catalogue.get(self.side[s].behavior) for s in "AB"}
        self.forwarders, self.options = forwarders, options
        self.current: str | None = None
        self.applied: sc.Applied | None = None

    def enter(self, s: str) -> Any:
        """Make the SUT side ``s`` and configure its behavior; return the behavior."""
        session = self.sessions[s]
        fw, opts = self.forwarders[s], self.options[s]
        if session.forwarder is not fw:
            session.use_forwarder(fw, opts)
        elif session.options != opts:
            session.use_options(opts)
        change = self.side[s].sut_change
        if change is not None:
            self.applied = sc.Applied(change, session.testbed.node("sut"))
        self.current = s
        try:
            session.configure(self.beh[s])
        except BaseException:
            self.leave()
            raise
        return self.beh[s]

    def leave(self) -> None:
        s, self.current = self.current, None
        try:
            if s is not None:
                self.sessions[s].unconfigure(self.beh[s])
        finally:
            applied, self.applied = self.applied, None
            if applied is not None:
                applied.remove()


def run_ab(session: Any, cfg: AbConfig, settings: SearchSettings, algorithm: str,
           forwarders: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
           say: Callable[[str], None] = log.info,
           clock: Callable[[], float] = time.monotonic,
           execution: dict[str, Any] | None = None,
           sessions: dict[str, Any] | None = None) -> AbOutcome:
    """Measure side ``cfg.a`` against ``cfg.b`` on the open ``session``; ``forwarders``
    and ``options`` per side ("A"/"B"; default: the session's); ``execution`` is how
    the SUT executes (stored with the result: an emulated figure says so).  ``sessions``
    ("A"/"B"): a session of its own per side, each on its testbed (two kernel targets
    booted side by side), instead of ``session`` for both."""
    sessions = sessions or {"A": session, "B": session}
    forwarders = forwarders or {s: sessions[s].forwarder for s in "AB"}
    options = options or {s: sessions[s].options for s in "AB"}
    sides = _Sides(sessions, cfg, forwarders, options)
    idle = _IdleSut(sessions) if sessions["A"] is not sessions["B"] else None
    seq = [0]

    def key(s: str, rep: int) -> TrialKey:
        seq[0] += 1
        return TrialKey(sides.beh[s].name, forwarders[s].name, cfg.packet_size, rep, seq[0])

    for s in "AB":
        b = sides.enter(s)
        try:
            sessions[s].verify(b, cfg.packet_size, again=True)
        finally:
            sides.leave()
    found: dict[str, float] = {}
    load = cfg.load_pps
    if load is None:
        for s in "AB":
            b = sides.enter(s)
            try:
                sessions[s].prepare(b, cfg.packet_size)
                found[s] = (_search(sessions[s], b, settings, algorithm, key(s, 0))
                            if cfg.load_from == "search" else
                            _probe(sessions[s], b, cfg.probe_pps or settings.max_rate_pps,
                                   cfg.trial_s, key(s, 0)))
            finally:
                sides.leave()
        load = cfg.load_factor * max(found.values())
        what = "PDRs" if cfg.load_from == "search" else "probe received rates"
        say(f"{what} {', '.join(f'{s} {v / 1e3:.1f} kpps' for s, v in found.items())}: "
            f"common offered load {load / 1e3:.1f} kpps ({cfg.load_factor:g} x the larger)")
    outcome = AbOutcome(cfg, float(load), found)
    if isinstance(execution, dict):
        outcome.execution = dict(execution)

    def measure(s: str, block: int, slot: int) -> float:
        b = sides.enter(s)
        try:
            sessions[s].prepare(b, cfg.packet_size)
            if idle is not None:
                idle.start(s)
            figure, trial, why, tries = measure_saturated(   # every attempt is stored
                sessions[s].measure_fn(b, key(s, block)), load, cfg.trial_s,
                f"side {s} ({b.name}), block {block}")
        finally:
            if idle is not None:
                idle.stop(outcome.idle_sut)
            sides.leave()
        outcome.retried += tries - 1
        if figure is not None:
            outcome.generator_limited_used += int(trial.generator_limited)
        if figure is None:
            text = (f"side {s} ({b.name}): the trial at {load:.0f} pps in block {block} was "
                    f"not usable: {why}")
            if why.startswith("the generator"):
                say(f"block {block} dropped: {why}")
                raise paired.BlockUnusable(text)
            raise AbError(text)
        return figure

    def on_block(n: int, order: str, figures: list[float], log_ratio: float) -> None:
        outcome.blocks.append({"block": n, "order": order, "received_pps": figures,
                               "log_ratio": log_ratio})
        r = paired.summarize([x["log_ratio"] for x in outcome.blocks])
        width = f", interval +-{r.half_width_pct:.2f} %" if r.status != paired.NOT_ENOUGH else ""
        say(f"block {n} {order}: B/A {math.exp(log_ratio):.4f}{width}")

    outcome.result = paired.run_paired(measure, cfg.rule(), random.Random(cfg.seed), clock,
                                       on_block=on_block, dropped=outcome.dropped)
    if outcome.result.stop_reason == paired.GENERATOR_BEHIND:
        say(f"stopped: {paired.MAX_DROPPED_IN_A_ROW} blocks in a row dropped, the last: "
            f"{outcome.dropped.reasons[-1]}; the result is of the blocks before")
    return outcome


class _IdleSut:
    """With a testbed per side: the CPU time the other side's SUT process (its idle
    guest) uses while one side measures (:func:`srperf.kernel.interleave.process_cpu_s`;
    nothing where the testbed has no SUT process)."""

    def __init__(self, sessions: dict[str, Any]) -> None:
        self.sessions = sessions
        self.began: tuple[str, float, float] | None = None

    def _cpu(self, s: str) -> float | None:
        from srperf.kernel.interleave import process_cpu_s

        pid_of = getattr(self.sessions[s].testbed, "sut_pid", None)
        return process_cpu_s(pid_of()) if pid_of is not None else None

    def start(self, measuring: str) -> None:
        other = "B" if measuring == "A" else "A"
        cpu = self._cpu(other)
        self.began = None if cpu is None else (other, cpu, time.monotonic())

    def stop(self, into: dict[str, dict[str, float]]) -> None:
        began, self.began = self.began, None
        if began is None:
            return
        other, cpu0, t0 = began
        cpu = self._cpu(other)
        if cpu is None:
            return
        acc = into.setdefault(other, {"cpu_s": 0.0, "wall_s": 0.0})
        acc["cpu_s"] += cpu - cpu0
        acc["wall_s"] += time.monotonic() - t0


def _search(session: Any, b: Any, settings: SearchSettings, algorithm: str,
            k: TrialKey) -> float:
    res = session.search(b, settings, algorithm, k)
    lows = [g.lower_bound_pps for g in res.goals if g.lower_bound_pps]
    if not lows:
        raise AbError(f"{b.name}: the search found no rate "
                      f"({', '.join(g.status for g in res.goals)}); give --load")
    return float(lows[0])


def _probe(session: Any, b: Any, rate: float, trial_s: float, k: TrialKey) -> float:
    figure, trial, why, _ = measure_saturated(session.measure_fn(b, k), rate, trial_s,
                                              f"{b.name}, probe")
    if figure is None:
        hint = ("the generator cannot offer more than the SUT forwards; a faster engine "
                "(tester.options.engine: xdp) or --load" if why.startswith("not saturated")
                else "--load, or a quieter host")
        raise AbError(f"{b.name}: the probe at {rate:.0f} pps gave no figure ({why}): {hint}")
    return figure


__all__ = ["AbConfig", "AbError", "AbOutcome", "AbSide", "LOAD_FROM", "SATURATION_MARGIN",
           "measure_saturated", "run_ab", "saturated_rate",
           "unusable_reason"]
