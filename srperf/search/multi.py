"""One bisection for several loss thresholds at once, sharing every trial.

Each rate measured is judged against every threshold (with the same
repeat-near-threshold majority rule as :mod:`srperf.search.bisect`): a rate
whose loss stays within threshold t is a lower bound candidate for goal t,
otherwise an upper bound candidate.  A goal's upper bound is the lowest
failing rate and its lower bound the highest passing rate below it (a pass
above a failure, a "loss inversion", is ignored: conservative).  The next rate
is the midpoint of the widest goal interval still wider than
``accuracy_pps``; min and max stand in for missing bounds, and are measured
themselves only when a goal's interval closes on them (to tell ``below_min``
and ``at_max`` apart from a real answer).
"""

from __future__ import annotations

from srperf.search.base import GoalResult, Measure, SearchAlgorithm, SearchResult
from srperf.search.common import (RateVerdict, TrialBudgetExceeded, TrialLog, edge_goal,
                                  measure_rate, unmeasurable_goal)


class MultiSearch(SearchAlgorithm):
    """Shared-trial bisection for several thresholds (NDR and PDRs together)."""

    name = "multi"

    def run(self, measure: Measure) -> SearchResult:
        s = self.settings
        trials = TrialLog(measure, s, self.name)
        verdicts: dict[float, RateVerdict] = {}
        note = ""
        try:
            trials.warmup()
            while (rate := self._next_rate(verdicts)) is not None:
                verdicts[rate] = measure_rate(trials, rate, s.trial_duration_s, s.thresholds_pct,
                                              s.repeat_near_threshold, s.near_factor,
                                              s.early_stop)
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
        goals = [self._goal(verdicts, t, note) for t in s.thresholds_pct]
        return trials.result(goals, note)

    @staticmethod
    def _bounds(verdicts: dict[float, RateVerdict], t: float
                ) -> tuple[float | None, float | None]:
        """(highest passing rate below the lowest failing one, lowest failing rate)."""
        hi = min((r for r, v in verdicts.items() if v.passed[t] is not True), default=None)
        lo = max((r for r, v in verdicts.items()
                  if v.passed[t] is True and (hi is None or r < hi)), default=None)
        return lo, hi

    def _next_rate(self, verdicts: dict[float, RateVerdict]) -> float | None:
        s = self.settings
        widest: tuple[float, float] | None = None
        edge: float | None = None
        for t in s.thresholds_pct:
            lo, hi = self._bounds(verdicts, t)
            lo_eff = s.min_rate_pps if lo is None else lo
            hi_eff = s.max_rate_pps if hi is None else hi
            width = hi_eff - lo_eff
            if width > s.accuracy_pps:
                if widest is None or width > widest[0]:
                    widest = (width, 0.5 * (lo_eff + hi_eff))
            elif edge is None:
                if lo is None and s.min_rate_pps not in verdicts:
                    edge = s.min_rate_pps
                elif hi is None and s.max_rate_pps not in verdicts:
                    edge = s.max_rate_pps
        if widest is not None:
            return widest[1]
        return edge

    def _goal(self, verdicts: dict[float, RateVerdict], t: float, note: str) -> GoalResult:
        s = self.settings
        lo, hi = self._bounds(verdicts, t)
        if hi is not None and verdicts[hi].passed[t] is None:
            return unmeasurable_goal(t, s, lo, hi, verdicts[hi].trials)
        if lo is None:
            if hi is not None and hi <= s.min_rate_pps:
                return edge_goal(t, "below_min", s)
            return GoalResult(t, None, hi, "undecided", None, note or "no passing rate measured")
        if hi is None:
            if lo >= s.max_rate_pps:
                loss = verdicts[lo].worst_passing_loss(t)
                return edge_goal(t, "at_max", s, conditional=lo * (1.0 - (loss or 0.0)))
            return GoalResult(t, lo, None, "undecided", None, note or "no failing rate measured")
        if hi - lo > s.accuracy_pps:
            return GoalResult(t, lo, hi, "undecided", None, note or "interval still too wide")
        loss = verdicts[lo].worst_passing_loss(t)
        return GoalResult(t, lo, hi, "ok", lo * (1.0 - (loss or 0.0)))
