"""Paired, interleaved A/B comparison: the statistics (pure; no traffic).

Design (issue 48).  A and B are measured alternately in blocks whose order is drawn at
random, ABBA or BAAB.  Within a block the two A and the two B figures are measured
close together, so the host's slow drift (another tenant, thermal, a noisy neighbour)
hits both alike, and a linear drift across the block cancels exactly in ABBA.  Each
block gives one ratio, the geometric mean of its B figures over that of its A figures;
the comparison is the geometric mean of the block ratios with a Student t interval on
the log scale over blocks.

Why t, not a bootstrap: the blocks are few (5-30) and independent, and a log ratio of
rates is close to normal (a product of many small multiplicative disturbances); a
percentile bootstrap of a handful of blocks is too narrow (it cannot see tails it has
not sampled; at n = 5 its coverage is well under 95 %) while t is exact for normal
log ratios and robust enough otherwise.  The A/A test in tests/test_results_paired.py
checks the false-positive rate this gives.

Why the per-block figure is a fixed-load figure (MRR, the received rate at one offered
load near both PDRs, or its loss): a PDR is the lower bound of a search bracket, so two
searches of the same thing often return the same grid point; its noise is hidden in
the grid and its ratio would be 1.0 or one grid step, never in between.  A received
rate at a fixed offered load is a continuous figure with all its noise visible, and one
trial takes a fixed time, so a block's cost is known in advance.

Sequential rule: after each block (from :attr:`StopRule.min_blocks`, default 8, on) the
comparison stops when the interval's half-width on the ratio is at most the requested
width (e.g. 1 %), or when the time budget is spent; :attr:`PairedResult.stop_reason`
says which.  Stopping on the width, not on significance, leaves the estimate unbiased
(for normal data the sample variance is independent of the sample mean), but it does
stop more often when the sample spread happens to be small, so the interval's coverage
falls a little below nominal: in simulation (tests/test_results_paired.py, A/A, 3 %
noise) the false-positive rate was 8.3 % when the rule could stop from 3 blocks, 6.6 %
from 5, 6.2 % from 8 and 5.9 % from 10.  Hence the default of 8; a fixed number of
blocks (``max_blocks = min_blocks``) is exactly nominal.

The minimal detectable difference (:func:`minimal_detectable_pct`) is the true
difference this number of blocks at this noise would detect with 80 % power at 95 %:
(t_{0.975} + t_{0.80}) * s / sqrt(n) on the log scale.  Differences under it are not
resolved at this budget on this testbed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

from srperf.results.stats import t_quantile

MIN_BLOCKS = 3
"""Fewer blocks give no interval worth a verdict: "not enough evidence"."""
ORDERS = ("ABBA", "BAAB")
SIGNIFICANT, NOT_SIGNIFICANT, NOT_ENOUGH = "different", "not_resolved", "not_enough_evidence"
WIDTH_REACHED, BUDGET_SPENT, BLOCKS_SPENT = "width_reached", "budget_spent", "max_blocks"
GENERATOR_BEHIND = "blocks_dropped"
"""Stopped because :data:`MAX_DROPPED_IN_A_ROW` blocks in a row were dropped."""


def block_orders(n: int, rng: random.Random) -> list[str]:
    """``n`` block orders, each ABBA or BAAB drawn from ``rng``."""
    return [rng.choice(ORDERS) for _ in range(n)]


def block_log_ratio(order: str, figures: Sequence[float]) -> float:
    """log(B / A) of one block: mean log of its B figures minus mean log of its A
    figures, ``figures`` in the order of ``order`` (e.g. "ABBA").  Every figure must be
    > 0 (a received rate); a block with a 0 has no ratio (ValueError)."""
    if len(order) != len(figures) or set(order) != {"A", "B"}:
        raise ValueError(f"block order {order!r} does not match {len(figures)} figures")
    if any(not f > 0 for f in figures):
        raise ValueError(f"block {order} has a figure <= 0: {list(figures)}")
    la = [math.log(f) for o, f in zip(order, figures) if o == "A"]
    lb = [math.log(f) for o, f in zip(order, figures) if o == "B"]
    return sum(lb) / len(lb) - sum(la) / len(la)


@dataclass(frozen=True)
class PairedResult:
    """The comparison of B with A over blocks.  Ratios are B / A; ``*_pct`` are
    100 * (ratio - 1)."""

    n_blocks: int
    ratio: float
    low: float
    high: float
    sd_log: float
    mdd_pct: float
    """Minimal detectable difference, % (80 % power at 95 %)."""
    status: str
    """``different`` (interval excludes 1), ``not_resolved``, ``not_enough_evidence``."""
    stop_reason: str = ""
    confidence: float = 0.95
    log_ratios: tuple[float, ...] = field(default=())

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.ratio - 1.0)

    @property
    def low_pct(self) -> float:
        return 100.0 * (self.low - 1.0)

    @property
    def high_pct(self) -> float:
        return 100.0 * (self.high - 1.0)

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width on the ratio, % (the sequential rule's figure)."""
        return 50.0 * (self.high - self.low)

    def describe(self) -> str:
        """One line for a person: the ratio, its interval, the verdict and the MDD."""
        if self.status == NOT_ENOUGH:
            return (f"B/A {self.ratio:.4f} from {self.n_blocks} blocks: not enough evidence "
                    f"(fewer than {MIN_BLOCKS} blocks, or no spread)")
        verdict = ("B differs from A" if self.status == SIGNIFICANT
                   else "no difference resolved")
        return (f"B/A {self.ratio:.4f} ({self.change_pct:+.2f} %), "
                f"{100 * self.confidence:g} % interval [{self.low_pct:+.2f}, "
                f"{self.high_pct:+.2f}] % over {self.n_blocks} blocks: {verdict}; "
                f"at this budget on this testbed, differences under {self.mdd_pct:.1f} % "
                f"are not resolved" + (f" (stopped: {self.stop_reason})"
                                       if self.stop_reason else ""))


def minimal_detectable_pct(sd_log: float, n: int, confidence: float = 0.95,
                           power: float = 0.8) -> float:
    """The smallest true difference (%) that ``n`` blocks of log-ratio standard deviation
    ``sd_log`` detect with ``power`` at ``confidence`` (two-sided t); NaN below 2 blocks."""
    if n < 2 or math.isnan(sd_log):
        return math.nan
    df = n - 1
    k = t_quantile(0.5 + confidence / 2, df) + t_quantile(power, df)
    return 100.0 * (math.exp(k * sd_log / math.sqrt(n)) - 1.0)


def summarize(log_ratios: Sequence[float], confidence: float = 0.95,
              stop_reason: str = "") -> PairedResult:
    """The geometric-mean ratio of the blocks' ``log_ratios`` with its t interval."""
    xs = [float(x) for x in log_ratios]
    n = len(xs)
    if n == 0:
        return PairedResult(0, math.nan, math.nan, math.nan, math.nan, math.nan, NOT_ENOUGH,
                            stop_reason, confidence)
    mean = math.fsum(xs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else math.nan
    if n < MIN_BLOCKS or not sd > 0:
        return PairedResult(n, math.exp(mean), math.nan, math.nan, sd, math.nan, NOT_ENOUGH,
                            stop_reason, confidence, tuple(xs))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    low, high = math.exp(mean - half), math.exp(mean + half)
    status = SIGNIFICANT if (high < 1.0 or low > 1.0) else NOT_SIGNIFICANT
    return PairedResult(n, math.exp(mean), low, high, sd,
                        minimal_detectable_pct(sd, n, confidence), status, stop_reason,
                        confidence, tuple(xs))


@dataclass(frozen=True)
class StopRule:
    """Stop when the interval's half-width on the ratio is at most ``width_pct`` (from
    ``min_blocks`` blocks on; see the module docstring for why 8), or the budget
    (seconds, or ``max_blocks``) is spent."""

    width_pct: float = 1.0
    budget_s: float = 600.0
    min_blocks: int = 8
    max_blocks: int = 1000

    def __post_init__(self) -> None:
        if not self.width_pct > 0:
            raise ValueError(f"width_pct must be > 0, not {self.width_pct!r}")
        if not self.budget_s > 0:
            raise ValueError(f"budget_s must be > 0, not {self.budget_s!r}")
        if self.min_blocks < MIN_BLOCKS or self.max_blocks < self.min_blocks:
            raise ValueError(f"need {MIN_BLOCKS} <= min_blocks <= max_blocks, not "
                             f"{self.min_blocks}, {self.max_blocks}")

    def decide(self, log_ratios: Sequence[float], elapsed_s: float,
               block_s: float = 0.0, confidence: float = 0.95) -> str:
        """Why to stop now ("" to go on).  ``block_s`` is the last block's time: a block
        that would end past the budget is not started."""
        n = len(log_ratios)
        if n >= self.min_blocks:
            r = summarize(log_ratios, confidence)
            if r.status != NOT_ENOUGH and r.half_width_pct <= self.width_pct:
                return WIDTH_REACHED
        if elapsed_s + block_s > self.budget_s:
            return BUDGET_SPENT
        if n >= self.max_blocks:
            return BLOCKS_SPENT
        return ""


Measure = Callable[[str, int, int], float]
"""``measure(side, block, slot)``: the figure (> 0) of configuration "A" or "B"; it may
raise :class:`BlockUnusable` to drop the block it is in."""
MAX_DROPPED_IN_A_ROW = 5


class BlockUnusable(Exception):
    """A trial gave no figure for a reason that does not depend on its side (the
    generator's CPU stalled): the block is dropped and the comparison goes on."""


@dataclass
class Dropped:
    """Blocks dropped, and the last reason."""

    count: int = 0
    in_a_row: int = 0
    reasons: list[str] = field(default_factory=list)


def run_paired(measure: Measure, rule: StopRule, rng: random.Random,
               clock: Callable[[], float], confidence: float = 0.95,
               on_block: Callable[[int, str, list[float], float], None] | None = None,
               dropped: Dropped | None = None) -> PairedResult:
    """Measure blocks (random ABBA/BAAB) until ``rule`` says stop; ``clock()`` gives
    seconds (a monotonic clock, or a simulated one in tests).  A block in which
    ``measure`` raises :class:`BlockUnusable` is dropped (counted in ``dropped``; its
    time counts against the budget); after :data:`MAX_DROPPED_IN_A_ROW` in a row it stops
    with the blocks it has (``stop_reason`` :data:`GENERATOR_BEHIND`).
    Whether a block is dropped must not depend on its sides' figures, or the ratio is
    biased: only the generator's own failures qualify."""
    start = clock()
    logs: list[float] = []
    block_s = 0.0
    dropped = dropped if dropped is not None else Dropped()
    while True:
        why = rule.decide(logs, clock() - start, block_s, confidence)
        if why:
            return summarize(logs, confidence, why)
        t0 = clock()
        order = rng.choice(ORDERS)
        try:
            figures = [measure(side, len(logs) + 1, slot) for slot, side in enumerate(order)]
        except BlockUnusable as exc:
            dropped.count += 1
            dropped.in_a_row += 1
            dropped.reasons.append(str(exc))
            if dropped.in_a_row >= MAX_DROPPED_IN_A_ROW:
                return summarize(logs, confidence, GENERATOR_BEHIND)
            block_s = clock() - t0
            continue
        dropped.in_a_row = 0
        logs.append(block_log_ratio(order, figures))
        block_s = clock() - t0
        if on_block is not None:
            on_block(len(logs), order, figures, logs[-1])


__all__ = ["GENERATOR_BEHIND", "BlockUnusable", "Dropped", "MAX_DROPPED_IN_A_ROW", "BLOCKS_SPENT", "BUDGET_SPENT", "MIN_BLOCKS", "NOT_ENOUGH", "NOT_SIGNIFICANT",
           "ORDERS", "PairedResult", "SIGNIFICANT", "StopRule", "WIDTH_REACHED",
           "block_log_ratio", "block_orders", "minimal_detectable_pct", "run_paired",
           "summarize"]
