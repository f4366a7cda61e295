"""Max receive rate (MRR): offer one fixed rate and report what arrives.

``mrr_repeats`` trials of ``trial_duration_s`` at ``mrr_rate_pps`` (default
``max_rate_pps``).  The answer is the median received rate of the usable trials,
in pps (received packets / intended duration).

Representation: one :class:`GoalResult` per configured threshold (the MRR does
not depend on a threshold; every goal carries the same figures) with
``status = "mrr"``, ``lower_bound_pps = conditional_throughput_pps =`` the
median received rate and ``upper_bound_pps = None``; the note gives the offered
rate, the number of trials and the median loss.  When no trial was usable (the
generator could not offer the rate), the status is ``"generator_limited"`` and
no rate is reported.
"""

from __future__ import annotations

from srperf.search.base import GoalResult, Measure, SearchAlgorithm, SearchResult
from srperf.search.common import TrialBudgetExceeded, TrialLog, edge_goal, median
from srperf.util.wording import count


class MrrSearch(SearchAlgorithm):
    """Median received rate at a fixed offered rate (no search)."""

    name = "mrr"

    def run(self, measure: Measure) -> SearchResult:
        s = self.settings
        rate = s.mrr_rate_pps if s.mrr_rate_pps is not None else s.max_rate_pps
        trials = TrialLog(measure, s, self.name)
        note = ""
        try:
            trials.warmup(rate)
            for _ in range(s.mrr_repeats):
                trials.run(rate, s.trial_duration_s)
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
        usable = [t for t in trials.trials if t.usable and not t.extra.get("warmup")]
        goals: list[GoalResult] = []
        for t in s.thresholds_pct:
            if not usable:
                goals.append(edge_goal(t, "generator_limited", s, None, rate,
                                       note=f"no usable trial at {rate:.0f} pps: the generator "
                                            "could not offer it; no receive rate reported"))
                continue
            received = median([tr.received_rate_pps for tr in usable])
            loss = median([tr.loss_ratio for tr in usable])
            goals.append(GoalResult(
                t, received, None, "mrr", received,
                f"max receive rate: median of {count(len(usable), 'trial')} at {rate:.0f} pps offered, "
                f"median loss {100.0 * loss:.4g} % (independent of the loss threshold)"))
        return trials.result(goals, note)
