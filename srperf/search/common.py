"""Helpers shared by the search algorithms: trial bookkeeping and trial verdicts.

Thresholds are in percent, rates in pps, durations in seconds.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
import time
from dataclasses import dataclass, field

from srperf.drivers.base import TrialResult, beyond_generator
from srperf.search.base import GoalResult, Measure, SearchResult, SearchSettings, exceeds
from srperf.search.estimate import crossing_estimate
from srperf.util.wording import count

log = logging.getLogger(__name__)

NDR_NEAR_LOSS = 1e-4
"""For NDR (threshold 0 %) a failing trial counts as "near" the threshold when
it lost no more than ``near_factor * NDR_NEAR_LOSS`` of its packets (a few
packets in ten thousand): a loss of that size is the kind scheduling jitter
causes, worth a second look."""

UNUSABLE_RETRIES = 3
"""Unusable trials (generator-limited or inconsistent counters) tolerated at one
rate before the rate is declared impossible to measure."""


def beyond_generator_in(trials: "TrialLog", trial: TrialResult) -> bool:
    """:func:`srperf.drivers.base.beyond_generator`, against the best rate paced
    by a usable trial of this search."""
    paced = max((t.rate_pps for t in trials.trials if t.usable), default=0.0)
    return beyond_generator(trial, paced)


class TrialBudgetExceeded(Exception):
    """Internal: the search reached ``settings.max_trials``."""


def is_near(trial: TrialResult, threshold_pct: float, near_factor: float) -> bool:
    """True when the trial's loss ratio is close to the threshold.

    For a threshold t > 0, "close" means loss in [t / near_factor, t * near_factor];
    a trial with no loss, or with far more loss, is not close (the SRPerf paper's
    advice: repeat only where the delivery ratio is near the threshold).  For NDR
    see :data:`NDR_NEAR_LOSS`.
    """
    loss = trial.loss_ratio
    t = threshold_pct / 100.0
    if t == 0.0:
        return 0.0 < loss <= near_factor * NDR_NEAR_LOSS
    return t / near_factor <= loss <= t * near_factor


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def mark(trial: TrialResult, **flags: object) -> TrialResult:
    """A copy of ``trial`` with ``flags`` added to its ``extra`` mapping."""
    return dataclasses.replace(trial, extra={**trial.extra, **flags})


class TrialLog:
    """Runs trials through ``measure`` and keeps every one of them, in order.

    Also runs the optional warm-up trial, enforces ``settings.max_trials`` and
    builds the :class:`SearchResult` with its wall time.
    """

    def __init__(self, measure: Measure, settings: SearchSettings, algorithm: str) -> None:
        self.measure = measure
        self.settings = settings
        self.algorithm = algorithm
        self.trials: list[TrialResult] = []
        self.started = time.monotonic()

    def run(self, rate_pps: float, duration_s: float, stop_lost: int | None = None,
            **flags: object) -> TrialResult:
        """One trial at ``rate_pps`` for ``duration_s``, which may stop early once more
        than ``stop_lost`` packets are certainly lost (None: never); flags go to
        ``extra``."""
        if len(self.trials) >= self.settings.max_trials:
            raise TrialBudgetExceeded()
        if stop_lost is None:
            trial = self.measure(rate_pps, duration_s)
        else:
            trial = self.measure(rate_pps, duration_s, stop_lost=stop_lost)
        if flags:
            trial = mark(trial, **flags)
        self.trials.append(trial)
        if not trial.usable:
            log.info("%s: trial at %.0f pps for %g s not usable (%s)", self.algorithm, rate_pps,
                     duration_s, trial.note or "generator-limited or inconsistent counters")
        else:
            log.debug("%s: %.0f pps %g s loss %.4f %%", self.algorithm, rate_pps, duration_s,
                      100.0 * trial.loss_ratio)
        return trial

    def warmup(self, rate_pps: float | None = None) -> None:
        """Run the warm-up trial if configured (at ``rate_pps``, default max rate).

        It is kept in the trial list, marked ``extra["warmup"] = True`` and never
        used in a decision.
        """
        if self.settings.warmup_duration_s > 0:
            rate = self.settings.max_rate_pps if rate_pps is None else rate_pps
            self.run(rate, self.settings.warmup_duration_s, warmup=True)

    @property
    def unusable(self) -> int:
        return sum(1 for t in self.trials if not t.usable)

    def result(self, goals: list[GoalResult], note: str = "") -> SearchResult:
        notes = [note] if note else []
        bad = self.unusable
        if bad:
            notes.append(f"{count(bad, 'trial')} excluded from decisions "
                         "(generator-limited or inconsistent counters)")
        goals = [self._with_estimate(g) for g in goals]
        return SearchResult(algorithm=self.algorithm, goals=goals, trials=list(self.trials),
                            wall_s=time.monotonic() - self.started, note="; ".join(notes))

    def _with_estimate(self, goal: GoalResult) -> GoalResult:
        """``goal`` with the crossing estimate of all trials, for goals with both bounds
        (a goal whose algorithm already set an estimate keeps its own)."""
        if goal.estimate_pps is not None:
            return goal
        if goal.status != "ok" or goal.lower_bound_pps is None or goal.upper_bound_pps is None:
            return goal

        trials = [t for t in self.trials if not t.extra.get("warmup")]
        est = crossing_estimate(trials, goal.threshold_pct, self.settings.exceed_ratio)
        if est is None:
            return goal
        return dataclasses.replace(goal, estimate_pps=est.rate_pps,
                                   estimate_low_pps=est.ci_low_pps,
                                   estimate_high_pps=est.ci_high_pps)


@dataclass
class RateVerdict:
    """What the usable trials at one rate say about each threshold.

    ``passed[t]`` is True/False by majority of the usable trials (a tie fails),
    or None when no usable trial could be run (the generator could not offer
    this rate).
    """

    rate_pps: float
    passed: dict[float, bool | None]
    trials: list[TrialResult] = field(default_factory=list)

    @property
    def limited(self) -> bool:
        return not any(t.usable for t in self.trials)

    def worst_passing_loss(self, threshold_pct: float) -> float | None:
        """Highest loss ratio among usable trials that passed ``threshold_pct``."""
        losses = [t.loss_ratio for t in self.trials
                  if t.usable and not exceeds(t, threshold_pct)]
        return max(losses) if losses else None


def stop_lost(intended: int, thresholds_pct: tuple[float, ...], near_factor: float,
              repeats: int, near: set[float]) -> int:
    """Most packets a trial of ``intended`` packets may certainly lose before its
    outcome in :func:`measure_rate` is settled, whatever the rest of it does.

    A trial that lost more than ``s * intended`` packets has a loss ratio above
    ``s``; so does the part of it that ran (it offered at most ``intended``).  For
    each threshold t (percent) ``s`` is the loss ratio above which the trial
    fails t (t / 100) and, when the rate would be measured again for a trial near
    t (``repeats`` > 1 and t not yet in ``near``), is also beyond near
    (:func:`is_near`: ``near_factor`` x t, or ``near_factor`` x
    :data:`NDR_NEAR_LOSS` for NDR).  The bound is the largest ``s`` of all
    thresholds: beyond it the trial, whole or stopped, fails every threshold
    and adds no threshold to ``near``, exactly as the whole trial would.
    """
    shares = []
    for t in thresholds_pct:
        share = t / 100.0
        if repeats > 1 and t not in near:
            share = near_factor * (share if share > 0 else NDR_NEAR_LOSS)
        shares.append(share)
    return math.floor(max(shares) * intended)


def measure_rate(trials: TrialLog, rate_pps: float, duration_s: float,
                 thresholds_pct: tuple[float, ...], repeats: int,
                 near_factor: float, early_stop: bool = False) -> RateVerdict:
    """Decide pass/fail at one rate for every threshold, repeating near a threshold.

    One usable trial decides, unless its loss is near one of the thresholds
    (:func:`is_near`): then up to ``repeats`` usable trials in all are run, stopping
    as soon as the majority of ``repeats`` is reached for every threshold the
    trials came near; each threshold is decided by the majority of all usable
    trials at the rate (a tie fails).  ``repeats = 1`` is one trial per rate.
    Unusable trials are retried up to :data:`UNUSABLE_RETRIES` times in all.
    With ``early_stop`` each trial may end once it lost more than
    :func:`stop_lost` packets for certain: the verdicts are those of whole trials.
    """
    usable: list[TrialResult] = []
    runs: list[TrialResult] = []
    near: set[float] = set()
    unusable = 0
    while True:
        if len(usable) >= repeats:
            break
        if usable and not near:
            break
        if usable and near:
            done = True
            for t in near:
                fails = sum(1 for tr in usable if exceeds(tr, t))
                passes = len(usable) - fails
                if passes * 2 <= repeats and fails * 2 < repeats:
                    done = False
            if done:
                break
        if unusable >= UNUSABLE_RETRIES:
            break
        bound = (stop_lost(round(rate_pps * duration_s), thresholds_pct, near_factor,
                           repeats, near) if early_stop else None)
        trial = trials.run(rate_pps, duration_s, stop_lost=bound)
        runs.append(trial)
        if not trial.usable:
            unusable += 1
            if beyond_generator_in(trials, trial):
                break  # retrying cannot help
            continue
        usable.append(trial)
        near.update(t for t in thresholds_pct if is_near(trial, t, near_factor))
    passed: dict[float, bool | None] = {}
    for t in thresholds_pct:
        if not usable:
            passed[t] = None
            continue
        fails = sum(1 for tr in usable if exceeds(tr, t))
        passed[t] = (len(usable) - fails) > fails
    return RateVerdict(rate_pps=rate_pps, passed=passed, trials=runs)


LIMIT_CAUSES = {
    "offer": "the generator could not offer {rate} pps",
    "queue": "the generator's TX queue ran full at {rate} pps",
    "receiver": ("everything was sent at {rate} pps but the tester's receive port missed "
                 "frames (receiver-limited, not the SUT)"),
}
"""Why a generator-limited trial says nothing about the SUT, by ``extra["limited_by"]``
(a list a driver fills; a trial without it could not offer its rate)."""


def limit_note(trials: list[TrialResult], upper: float, lower: float | None) -> str:
    """The note of a ``generator_limited`` goal: the real causes of its trials at
    ``upper`` pps (could not offer, TX queue full, receiver missed frames)."""
    causes: list[str] = []
    for t in trials:
        for cause in t.extra.get("limited_by") or ["offer"]:
            if cause not in causes:
                causes.append(cause)
    rate = f"{upper:.0f}"
    text = "; ".join(LIMIT_CAUSES.get(c, c).format(rate=rate) for c in causes)
    return (f"{text}: no SUT figure above the highest measured passing rate"
            + (f" {lower:.0f} pps" if lower is not None else ""))


def unmeasurable_goal(threshold_pct: float, settings: SearchSettings, lower: float | None,
                      upper: float, trials: list[TrialResult]) -> GoalResult:
    """The goal when the search could not get a usable trial at ``upper`` pps.

    Status ``generator_limited`` when the generator flagged its trials there,
    ``undecided`` otherwise (e.g. counters that did not add up); never a value.
    """
    bad = [t for t in trials if not t.usable]
    limited = [t for t in bad if t.generator_limited]
    if limited:
        return edge_goal(threshold_pct, "generator_limited", settings, lower, upper,
                         note=limit_note(limited, upper, lower))
    reasons = "; ".join(sorted({t.note for t in bad if t.note})) or "inconsistent counters"
    below = f" above {lower:.0f} pps" if lower is not None else ""
    return GoalResult(threshold_pct, lower, upper, "undecided", None,
                      f"no usable trial at {upper:.0f} pps ({reasons}): no SUT figure{below}")


def edge_goal(threshold_pct: float, status: str, settings: SearchSettings,
              lower: float | None = None, upper: float | None = None,
              conditional: float | None = None, note: str = "") -> GoalResult:
    """A GoalResult for the edge statuses, with a standard explanation."""
    if status == "below_min":
        note = note or (f"loss above {threshold_pct:g} % even at the minimum rate "
                        f"{settings.min_rate_pps:.0f} pps: the PDR is below the range searched")
        return GoalResult(threshold_pct, None, settings.min_rate_pps, "below_min", None, note)
    if status == "at_max":
        note = note or (f"no loss above {threshold_pct:g} % at the maximum rate "
                        f"{settings.max_rate_pps:.0f} pps: the SUT kept up with everything tried; "
                        "the value is the configured maximum, not the SUT's limit")
        return GoalResult(threshold_pct, settings.max_rate_pps, None, "at_max", conditional, note)
    if status == "generator_limited":
        note = note or (f"the generator could not offer {upper:.0f} pps: no SUT figure above "
                        f"the highest measured passing rate"
                        + (f" {lower:.0f} pps" if lower is not None else ""))
        return GoalResult(threshold_pct, lower, upper, "generator_limited", None, note)
    return GoalResult(threshold_pct, lower, upper, status, None, note)
