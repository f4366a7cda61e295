"""srperf's default search: multiple loss ratios, short trials first, exceed-ratio rule.

The ideas come from FD.io CSIT's MLRsearch (several goals in one search,
short trials before long ones, a tolerated share of failing trial time,
bisection in log space, a first guess from the forwarding rate at max load);
this is an independent, smaller implementation.  Rates in pps, durations in s.

Phases
    ``preceding_phases`` coarse phases, then the final one.  Phase k of n
    (k = 0 first) has duration sum ``D_k = d0 * (D / d0) ** (k / n)``, trial
    duration ``min(d, D_k)`` and log width ``W * 2 ** (n - k)``, where d0 =
    ``initial_trial_duration_s``, d = ``trial_duration_s``, D = ``duration_sum_s``
    and W = ``-ln(1 - relative_width)``.  So the first phase decides a load with
    one short trial, and intermediate trials are as long as final ones when
    possible (then they count in the final phase too).  The final phase is
    (d, D, W).  A goal moves to the next phase once its interval is narrow enough
    in the current one; the interval it ended with becomes the *hints* of the
    next phase.

Decision rule (one load, one goal with loss threshold t, one phase)
    Only usable trials count.  A trial is *bad* when its loss ratio exceeds t.
    Trials at least as long as the phase's trial duration are *long*:
    ``G`` = seconds of good long trials, ``B_long`` = seconds of bad long trials.
    Shorter trials never prove a lower bound, but their bad seconds count
    against the load (loss does not shrink when a trial gets longer), after
    cancelling against good short seconds at the tolerated ratio:
    ``B = B_long + max(0, B_short - G_short * e / (1 - e))``, e = ``exceed_ratio``.
    With ``T = max(duration_sum_s, G + B)``:

    * **lower bound** when ``G >= (1 - e) * T``: even if every missing second up
      to the duration sum were bad, the bad share would stay within ``e``;
    * **upper bound** when ``B > e * T``: even if every missing second were good,
      the bad share would exceed ``e`` (a share exactly ``e`` is tolerated);
    * otherwise undecided; an undecided load with some good long seconds and no
      bad time at all is *provisional*: it steers the search like a lower bound
      but is never reported before validation (below).

    With e = 0.5, a 10 s duration sum (the default) and 1 s trials, 5 good
    trials make a lower bound and 6 bad ones an upper bound, with early
    stopping; with a duration sum of one trial, one trial decides.

Bounds and the next load
    For a goal, the upper bound is the lowest load classified upper (or a load
    the generator could not offer: >= 3 unusable trials and more unusable than
    usable ones), the lower bound the highest load classified lower or
    provisional below it (a good load above a bad one, loss inversion, is
    ignored: conservative).  A goal is done in a phase when
    ``ln(hi / lo) <= W_k``, when max is a lower bound (``at_max``) or min an
    upper bound (``below_min``).  Otherwise its next load is, in order:

    1. the load it is accumulating trials on, while still undecided there;
    2. *halve*: when the hints are wider than W_k, their split point;
    3. *refine*: the hint on the side still missing a bound (the upper hint when
       there is a lower bound but no upper one, and vice versa);
    4. *extend*: ``lo * exp(step)`` up (``hi * exp(-step)`` down) when the bounds
       have left the hinted interval on that side and that is closer than the
       split point; the step starts at W_k and doubles each time an extension
       moves the bound again; clipped to [min, max];
    5. *bisect*: the log-space split point, placed so that the interval halves
       in whole powers of two of W_k.

    The goal in the earliest phase nominates (ties: lowest threshold); every
    trial counts for every goal.

Start
    One trial at max with the first phase's duration.  A SUT forwarding R pps
    (received / duration) loses exactly t at ``R / (1 - t)``; the first lower
    hint of each goal is half a final width below that knife edge (clipped to
    [min, max)), or max itself when max already passes.  When the generator
    could not offer max (a generator-limited trial at O pps), the hint is half
    a final width below ``min(R / (1 - t), O)``: the search starts where the
    generator can still pace instead of stepping down to it.

Validation
    Once every goal is done, the reported rate of each goal (its final lower
    bound) must be a definite lower bound that would stay one even if
    ``validation_trials`` more final-duration trials all failed.  Until it is,
    final-duration trials marked ``extra["validation"] = True`` are run there;
    they join the evidence, so a rate that fails validation stops being a lower
    bound and the search resumes below it.  (A validation trial that could not
    change the answer is not run: with the defaults, a rate with at least 5 good
    final trials, more good than bad, stays a lower bound after one more bad
    trial; a 5-5 tie does not.)

Re-check after a far inversion
    A usable trial that passed a goal at ``INVERSION_RATIO`` x its upper bound or
    more is not noise around the answer: the SUT changed during the search (on a
    VM, a stretch of seconds in which even low rates lose).  Before reporting,
    the upper bound then gets more final-duration trials, marked
    ``extra["recheck"] = True``, until it holds ``RECHECK_SUMS`` duration sums of
    final trials or stops being an upper bound; in that case the search goes on
    above it.  Inversions within the noise (closer than ``INVERSION_RATIO``)
    are ignored, as before: conservative.

Result
    Per goal: bounds of the final phase; conditional throughput = lower bound x
    (1 - q), q the loss ratio at the (1 - e) quantile of the final-duration
    trial seconds there sorted by loss (<= t by the rule).  The note lists the
    validation trials' losses.
"""

from __future__ import annotations

import dataclasses
import logging
import math

from srperf.drivers.base import TrialResult
from srperf.search.base import GoalResult, Measure, SearchAlgorithm, SearchResult, SearchSettings
from srperf.search.common import (TrialBudgetExceeded, TrialLog, beyond_generator_in, edge_goal,
                                  exceeds, unmeasurable_goal)
from srperf.search.loads import (_EPS, LIMITED, LOWER, PROVISIONAL, UNDECIDED, UPPER,
                                 ForcedLimits, GoalState, LoadRecord, Phase, build_phases)
from srperf.util.wording import count

log = logging.getLogger(__name__)

INVERSION_RATIO = 1.1
"""A pass at this multiple of the upper bound or above triggers a re-check of the bound."""
RECHECK_SUMS = 2.0
"""Final trial time a re-checked upper bound may reach, in duration sums."""


class MlrSearch(SearchAlgorithm):
    """Multiple-loss-ratio search with short trials first (the default search)."""

    name = "mlr"

    def __init__(self, settings: SearchSettings) -> None:
        super().__init__(settings)
        self.phases = build_phases(settings)

    # -- evidence ---------------------------------------------------------------------------

    def _record(self, rate: float) -> LoadRecord:
        rec = self._loads.get(rate)
        if rec is None:
            rec = self._loads[rate] = LoadRecord(rate)
        return rec

    def _trial(self, rate: float, duration: float, **flags: object) -> TrialResult:
        trial = self._log.run(rate, duration, **flags)
        record = self._record(rate)
        record.add(trial)
        self._limits.record(record, beyond_generator_in(self._log, trial))
        return trial

    def _status(self, rate: float, t: float, phase: Phase) -> str:
        rec = self._loads.get(rate)
        if rec is None:
            return UNDECIDED
        return rec.classify(t, phase, self.settings.exceed_ratio)

    def _bounds(self, t: float, phase: Phase) -> tuple[float | None, float | None, bool]:
        """(lower bound, upper bound, upper bound is a generator limit)."""
        lo: float | None = None
        for rate in sorted(self._loads):
            st = self._status(rate, t, phase)
            if st in (UPPER, LIMITED):
                return lo, rate, st == LIMITED
            if st in (LOWER, PROVISIONAL):
                lo = rate
        return lo, None, False

    # -- choosing loads ---------------------------------------------------------------------

    def _done(self, lo: float | None, hi: float | None, phase: Phase) -> bool:
        s = self.settings
        if lo is not None and lo >= s.max_rate_pps:
            return True
        if hi is not None and hi <= s.min_rate_pps:
            return True
        return (lo is not None and hi is not None
                and math.log(hi / lo) <= phase.log_width * (1 + _EPS))

    def _split(self, lo: float, hi: float, width: float) -> float:
        """Log-space split point: the upper part is the largest power-of-two multiple of
        ``width`` below the span, so halving reaches ``width`` in the fewest steps."""
        span = math.log(hi / lo)
        m = max(1, math.ceil(math.log2(span / width) - _EPS))
        upper_part = width * 2 ** (m - 1)
        if upper_part >= span:
            return math.sqrt(lo * hi)
        return hi * math.exp(-upper_part)

    def _unclassified(self, rate: float | None, lo: float | None, hi: float | None, t: float,
                      phase: Phase) -> bool:
        """True when ``rate`` lies strictly between the bounds and is still undecided."""
        return (rate is not None and (lo is None or rate > lo * (1 + _EPS))
                and (hi is None or rate < hi * (1 - _EPS))
                and self._status(rate, t, phase) == UNDECIDED)

    def _next_load(self, g: GoalState) -> float | None:
        """The next load for goal ``g`` in its phase, or None when the phase is done."""
        s = self.settings
        phase = self.phases[g.phase_index]
        t = g.threshold_pct
        lo, hi, _ = self._bounds(t, phase)
        if self._done(lo, hi, phase):
            return None
        if g.pending is not None:
            if self._unclassified(g.pending, lo, hi, t, phase):
                return g.pending
            st = self._status(g.pending, t, phase)
            if g.pending_dir == "up" and st in (LOWER, PROVISIONAL):
                g.step_up *= 2.0
            elif g.pending_dir == "down" and st in (UPPER, LIMITED):
                g.step_down *= 2.0
            g.pending = None
        a, b = g.hint_lo, g.hint_hi
        w = phase.log_width
        cand: float | None = None
        direction = "hint"
        if a is not None and b is not None and math.log(b / a) > w * (1 + _EPS):
            middle = self._split(a, b, w)
            if self._unclassified(middle, lo, hi, t, phase):
                cand, direction = middle, "halve"
        if cand is None:
            if lo is None and hi is None:
                cand = a if a is not None else (b if b is not None else s.max_rate_pps)
            elif hi is None and self._unclassified(b, lo, hi, t, phase):
                cand = b
            elif lo is None and self._unclassified(a, lo, hi, t, phase):
                cand = a
        if cand is None:
            if hi is None:
                assert lo is not None
                cand, direction = min(s.max_rate_pps, lo * math.exp(g.step_up)), "up"
            elif lo is None:
                cand, direction = max(s.min_rate_pps, hi * math.exp(-g.step_down)), "down"
            else:
                cand, direction = self._split(lo, hi, w), "bisect"
                above = b if b is not None else a
                below = a if a is not None else b
                if above is not None and lo >= above * (1 - _EPS):
                    up = lo * math.exp(g.step_up)
                    if up < cand:
                        cand, direction = up, "up"
                elif below is not None and hi <= below * (1 + _EPS):
                    down = hi * math.exp(-g.step_down)
                    if down > cand:
                        cand, direction = down, "down"
        g.pending, g.pending_dir = cand, direction
        return cand

    def _advance(self, g: GoalState) -> bool:
        """Move ``g`` to its next phase; False when it is already in the final one."""
        if g.phase_index + 1 >= len(self.phases):
            return False
        lo, hi, _ = self._bounds(g.threshold_pct, self.phases[g.phase_index])
        g.phase_index += 1
        w = self.phases[g.phase_index].log_width
        g.hint_lo, g.hint_hi = lo, hi
        g.step_up = g.step_down = w
        g.pending, g.pending_dir = None, ""
        return True

    # -- the search -------------------------------------------------------------------------

    def run(self, measure: Measure) -> SearchResult:
        s = self.settings
        self._log = TrialLog(measure, s, self.name)
        self._loads: dict[float, LoadRecord] = {}
        self._limits = ForcedLimits()
        first = self.phases[0]
        goals = [GoalState(t, 0, None, None, first.log_width, first.log_width)
                 for t in sorted(s.thresholds_pct)]
        validated: dict[float, list[TrialResult]] = {}
        note = ""
        try:
            self._log.warmup()
            self._start(goals)
            while True:
                rate, goal = self._choose(goals)
                if rate is not None and goal is not None:
                    self._trial(rate, self.phases[goal.phase_index].duration_s)
                    continue
                todo = self._to_validate(goals, validated)
                if not todo:
                    recheck = self._to_recheck(goals)
                    if not recheck:
                        retry = self._retry_limits(goals)
                        if not retry:
                            break
                        for r in retry:
                            self._trial(r, s.trial_duration_s)
                        continue
                    for r in recheck:
                        self._trial(r, s.trial_duration_s, recheck=True)
                    continue
                for r in todo:
                    validated.setdefault(r, []).append(
                        self._trial(r, s.trial_duration_s, validation=True))
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
        results = {g.threshold_pct: self._goal(g, validated, note) for g in goals}
        return self._log.result([results[t] for t in s.thresholds_pct], note)

    def _retry_limits(self, goals: list[GoalState]) -> list[float]:
        """Loads taken for beyond the generator on one trial that would end a goal
        ``generator_limited``: they get their retries first (:class:`ForcedLimits`)."""
        final = self.phases[-1]
        todo: list[float] = []
        for g in goals:
            lo, hi, limited = self._bounds(g.threshold_pct, final)
            r = self._limits.retry(self._loads, lo, hi, limited, final.log_width)
            if r is not None and r not in todo:
                todo.append(r)
        return todo

    def _to_validate(self, goals: list[GoalState], validated: dict[float, list[TrialResult]]
                     ) -> list[float]:
        """Reported rates that still need a validation trial.

        A reported rate needs one while it is not a definite lower bound, or
        while fewer than ``validation_trials`` were run there and the missing
        ones, were they all to fail, would change its verdict.
        """
        final = self.phases[-1]
        todo: list[float] = []
        for g in goals:
            lo, _, _ = self._bounds(g.threshold_pct, final)
            if lo is None or lo in todo:
                continue
            if self._needs_validation(lo, g.threshold_pct, len(validated.get(lo, []))):
                todo.append(lo)
        return todo

    def _to_recheck(self, goals: list[GoalState]) -> list[float]:
        """Upper bounds with a far inversion above them that may take more trials."""
        final = self.phases[-1]
        todo: list[float] = []
        for g in goals:
            _, hi, limited = self._bounds(g.threshold_pct, final)
            if hi is None or limited or hi in todo:
                continue
            far_pass = bool(self._far_passes(g.threshold_pct, hi))
            spent = sum(tr.duration_s for tr in self._loads[hi].trials
                        if tr.duration_s >= final.duration_s * (1.0 - _EPS))
            if far_pass and spent < RECHECK_SUMS * final.duration_sum_s * (1.0 - _EPS):
                todo.append(hi)
        return todo

    def _needs_validation(self, rate: float, t: float, done: int) -> bool:
        s = self.settings
        final = self.phases[-1]
        rec = self._loads[rate]
        if rec.classify(t, final, s.exceed_ratio) != LOWER:
            return True
        missing = s.validation_trials - done
        if missing <= 0:
            return False
        return rec.classify(t, final, s.exceed_ratio, missing * final.duration_s) != LOWER

    def _start(self, goals: list[GoalState]) -> None:
        """Trial at max; first lower hints from its forwarding rate.

        A SUT forwarding R pps loses exactly t at R / (1 - t): that is a knife
        edge, so the hint is placed half a final width below it.
        """
        s = self.settings
        trial = self._trial(s.max_rate_pps, self.phases[0].duration_s)
        half_width = 0.5 * self.phases[-1].log_width
        if not trial.usable:
            if not (trial.counters_consistent and trial.elapsed_s > 0):
                return
            # The generator could not offer max: the SUT forwarded R of the
            # O pps it got.  It loses t at R / (1 - t) at most, and nothing
            # above O has been measured: hint just below the smaller.
            received = trial.received / trial.elapsed_s
            for g in goals:
                a = min(received / (1.0 - g.threshold_pct / 100.0), trial.offered_rate_pps)
                g.hint_lo = min(max(a * math.exp(-half_width), s.min_rate_pps),
                                s.max_rate_pps)
            return
        forwarded = trial.received / trial.duration_s
        for g in goals:
            if not exceeds(trial, g.threshold_pct):
                g.hint_lo = s.max_rate_pps
                continue
            a = forwarded / (1.0 - g.threshold_pct / 100.0) * math.exp(-half_width)
            a = min(a, s.max_rate_pps * math.exp(-self.phases[0].log_width))
            g.hint_lo = max(a, s.min_rate_pps)

    def _choose(self, goals: list[GoalState]) -> tuple[float | None, GoalState | None]:
        """Next (load, goal): the goal in the earliest phase nominates; advances phases."""
        while True:
            active = []
            for g in goals:
                phase = self.phases[g.phase_index]
                lo, hi, _ = self._bounds(g.threshold_pct, phase)
                if not (phase.final and self._done(lo, hi, phase)):
                    active.append(g)
            if not active:
                return None, None
            g = min(active, key=lambda x: (x.phase_index, x.threshold_pct))
            rate = self._next_load(g)
            if rate is not None:
                return rate, g
            if not self._advance(g):  # pragma: no cover - final phase done is filtered above
                return None, None

    def _goal(self, g: GoalState, validated: dict[float, list[TrialResult]], note: str
              ) -> GoalResult:
        s = self.settings
        t = g.threshold_pct
        final = self.phases[-1]
        if g.phase_index < len(self.phases) - 1:
            lo, hi, _ = self._bounds(t, self.phases[g.phase_index])
            return GoalResult(t, None, None, "undecided", None,
                              note or f"stopped in phase {g.phase_index} (bounds {lo}, {hi})")
        lo, hi, limited = self._bounds(t, final)
        if lo is not None and self._status(lo, t, final) != LOWER:
            return GoalResult(t, None, hi, "undecided", None,
                              note or f"{lo:.0f} pps not validated as a lower bound")
        if limited:
            assert hi is not None
            return unmeasurable_goal(t, s, lo, hi, self._loads[hi].unusable)
        if hi is not None and hi <= s.min_rate_pps:
            return edge_goal(t, "below_min", s)
        if lo is None or (hi is None and lo < s.max_rate_pps) or not self._done(lo, hi, final):
            return GoalResult(t, lo, hi, "undecided", None, note or "bounds not narrow enough")
        rec = self._loads[lo]
        q = rec.quantile_loss(t, final, s.exceed_ratio)
        cond = None if q is None else lo * (1.0 - q)
        vnote = "; ".join(x for x in (_validation_note(validated.get(lo), t, s),
                                      self._recheck_note(t, hi)) if x)
        if hi is None:
            base = edge_goal(t, "at_max", s, conditional=cond)
            return dataclasses.replace(base, note="; ".join(x for x in (base.note, vnote) if x))
        return GoalResult(t, lo, hi, "ok", cond, vnote)

    def _far_passes(self, t: float, hi: float) -> list[float]:
        """Rates (pps) of usable trials that passed ``t`` at INVERSION_RATIO x ``hi`` or above."""
        return [tr.rate_pps for tr in self._log.trials
                if tr.usable and tr.rate_pps >= INVERSION_RATIO * hi and not exceeds(tr, t)]

    def _recheck_note(self, t: float, hi: float | None) -> str:
        rechecks = [tr for tr in self._log.trials if tr.extra.get("recheck")]
        if not rechecks:
            return ""
        passes = [] if hi is None else self._far_passes(t, hi)
        seen = f"; a trial passed at {max(passes):.0f} pps" if passes else ""
        return (f"{count(len(rechecks), 're-check trial')} after a loss inversion (the SUT "
                f"changed during the search){seen}")


def _validation_note(trials: list[TrialResult] | None, t: float, settings: SearchSettings
                     ) -> str:
    if not trials:
        if settings.validation_trials == 0:
            return ""
        return (f"validation: not run, the rate stays a lower bound even if "
                f"{count(settings.validation_trials, 'more final trial')} failed")
    usable = [tr for tr in trials if tr.usable]
    if not usable:
        return "validation: no usable trial (generator-limited)"
    failed = [tr for tr in usable if exceeds(tr, t)]
    losses = ", ".join(f"{100.0 * tr.loss_ratio:.4g} %" for tr in usable)
    if not failed:
        return f"validation passed (loss {losses})"
    return (f"validation: {len(failed)} of {count(len(usable), 'trial')} above {t:g} % (loss {losses});"
            " the rate stays a lower bound by the exceed-ratio rule")


__all__ = ["LIMITED", "LOWER", "PROVISIONAL", "UNDECIDED", "UPPER", "ForcedLimits", "GoalState",
           "LoadRecord", "MlrSearch", "Phase", "build_phases"]
