"""Paired, interleaved A/B measurement on one testbed in one sitting (issue 48).

A and B are two behaviors measured through one :class:`MeasurementSession` (the same
trial machinery as ``srperf run``: ``session.measure_fn`` stores every trial).  Blocks
of four trials in random ABBA/BAAB order each give one ratio B/A of received rates at
one common offered load; :mod:`srperf.results.paired` does the statistics and the
sequential stopping.

The figure per trial is the received rate at an offered load above both PDRs (by
default 1.1 times the larger of one search of each side): there both sides are
saturated, so the received rate is each side's forwarding capacity (the MRR), a
continuous figure whose noise is all visible.  Below a side's PDR the received rate
equals the offered load and would hide the difference; a PDR itself hides its noise in
the search grid (two searches often end on the same grid point).
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
from srperf.results import paired
from srperf.results.store import TrialKey
from srperf.search.base import SearchSettings

log = logging.getLogger(__name__)
TRIAL_ATTEMPTS = 3
"""Attempts of a trial that is not usable (a stalled generator) before the comparison
stops; a figure is only ever taken from a usable trial."""


@dataclass(frozen=True)
class AbConfig:
    """What ``srperf ab`` compares and how long it may take."""

    a: str
    b: str
    packet_size: int = 64
    load_pps: float | None = None
    """Common offered load; None: ``load_factor`` x the larger PDR of one search a side."""
    load_factor: float = 1.1
    trial_s: float = 1.0
    width_pct: float = 1.0
    budget_s: float = 600.0
    min_blocks: int = 8
    max_blocks: int = 1000
    seed: int = 0

    def rule(self) -> paired.StopRule:
        return paired.StopRule(self.width_pct, self.budget_s, self.min_blocks, self.max_blocks)


@dataclass
class AbOutcome:
    """The comparison and how it was made."""

    config: AbConfig
    load_pps: float
    pdrs_pps: dict[str, float] = field(default_factory=dict)
    result: paired.PairedResult | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def detail(self) -> dict[str, Any]:
        """What is stored with the run (``comparisons.detail``)."""
        r = self.result
        return {"kind": "paired_ab", "config": dataclasses.asdict(self.config),
                "load_pps": self.load_pps, "pdrs_pps": self.pdrs_pps, "blocks": self.blocks,
                "figure": "received rate at the common offered load (pps)",
                "result": None if r is None else {
                    "n_blocks": r.n_blocks, "ratio": r.ratio, "low": r.low, "high": r.high,
                    "sd_log": r.sd_log, "mdd_pct": r.mdd_pct, "status": r.status,
                    "stop_reason": r.stop_reason, "confidence": r.confidence}}


class AbError(SrperfError):
    """A paired comparison that cannot go on (a generator-limited trial...)."""


def run_ab(session: Any, cfg: AbConfig, settings: SearchSettings, algorithm: str,
           say: Callable[[str], None] = log.info,
           clock: Callable[[], float] = time.monotonic) -> AbOutcome:
    """Measure ``cfg.a`` against ``cfg.b`` on the open ``session``."""
    from srperf.behaviors import catalogue

    beh = {"A": catalogue.get(cfg.a), "B": catalogue.get(cfg.b)}
    fw = session.forwarder.name
    seq = [0]

    def key(side: str, rep: int) -> TrialKey:
        seq[0] += 1
        return TrialKey(beh[side].name, fw, cfg.packet_size, rep, seq[0])

    for side in "AB":
        session.configure(beh[side])
        try:
            session.verify(beh[side], cfg.packet_size)
        finally:
            session.unconfigure(beh[side])
    pdrs: dict[str, float] = {}
    load = cfg.load_pps
    if load is None:
        for side in "AB":
            session.configure(beh[side])
            try:
                session.prepare(beh[side], cfg.packet_size)
                res = session.search(beh[side], settings, algorithm, key(side, 0))
            finally:
                session.unconfigure(beh[side])
            lows = [g.lower_bound_pps for g in res.goals if g.lower_bound_pps]
            if not lows:
                raise AbError(f"{beh[side].name}: the search found no rate "
                              f"({', '.join(g.status for g in res.goals)}); give --load")
            pdrs[beh[side].name] = float(lows[0])
        load = cfg.load_factor * max(pdrs.values())
        say(f"PDRs {', '.join(f'{k} {v / 1e3:.1f} kpps' for k, v in pdrs.items())}: common "
            f"offered load {load / 1e3:.1f} kpps ({cfg.load_factor:g} x the larger)")
    outcome = AbOutcome(cfg, float(load), pdrs)

    def measure(side: str, block: int, slot: int) -> float:
        b = beh[side]
        session.configure(b)
        try:
            session.prepare(b, cfg.packet_size)
            for attempt in range(1, TRIAL_ATTEMPTS + 1):   # every attempt is stored
                trial = session.measure_fn(b, key(side, block))(load, cfg.trial_s)
                if trial.usable and trial.received_rate_pps > 0:
                    break
                log.warning("%s: trial %d of block %d not usable (%s); again", b.name,
                            attempt, block, trial.note if hasattr(trial, "note") else "")
        finally:
            session.unconfigure(b)
        if not trial.usable or not trial.received_rate_pps > 0:
            why = "generator limited" if trial.generator_limited else "nothing received"
            raise AbError(f"{b.name}: the trial at {load:.0f} pps in block {block} was not "
                          f"usable ({why}); lower --load")
        return float(trial.received_rate_pps)

    def on_block(n: int, order: str, figures: list[float], log_ratio: float) -> None:
        outcome.blocks.append({"block": n, "order": order, "received_pps": figures,
                               "log_ratio": log_ratio})
        r = paired.summarize([x["log_ratio"] for x in outcome.blocks])
        width = f", interval +-{r.half_width_pct:.2f} %" if r.status != paired.NOT_ENOUGH else ""
        say(f"block {n} {order}: B/A {math.exp(log_ratio):.4f}{width}")

    outcome.result = paired.run_paired(measure, cfg.rule(), random.Random(cfg.seed), clock,
                                       on_block=on_block)
    return outcome


__all__ = ["AbConfig", "AbError", "AbOutcome", "run_ab"]
