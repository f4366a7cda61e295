"""Drive FD.io CSIT's MLRsearch 1.2.1 (PyPI ``MLRsearch``) through our ``measure``.

Settings map one to one: each threshold becomes a ``SearchGoal`` with
``loss_ratio = t / 100``, ``exceed_ratio``, ``relative_width``,
``initial_trial_duration``, ``final_trial_duration = trial_duration_s``,
``duration_sum = max(duration_sum_s, trial_duration_s)`` and
``preceding_targets = preceding_phases``; ``fail_fast`` is off so a PDR below the
min load is reported rather than raised.  Our trial becomes a
``MeasurementResult`` with ``intended_count = intended``, ``offered_count =
sent + refused`` and ``forwarding_count = received`` (1.2.1's name), so its loss
ratio is lost / intended, as ours.

MLRsearch has no notion of an unusable trial.  The adapter re-runs an unusable
trial up to :data:`~srperf.search.common.UNUSABLE_RETRIES` times; if none is
usable it reports the trial to MLRsearch as all packets lost (so that the
search moves below it) and remembers the load as unmeasurable.  A goal whose
relevant upper bound is such a load gets status ``generator_limited`` (or
``undecided`` when the trials failed for another reason, e.g. inconsistent
counters): that number is never presented as the SUT's.
"""

from __future__ import annotations

import logging

from srperf.drivers.base import TrialResult
from srperf.search.base import GoalResult, Measure, SearchAlgorithm, SearchResult
from srperf.search.common import (UNUSABLE_RETRIES, TrialBudgetExceeded, TrialLog, edge_goal,
                                  unmeasurable_goal)

log = logging.getLogger(__name__)

SEARCH_DURATION_MAX_S = 7 * 24 * 3600.0
"""MLRsearch's wall-clock limit; ours is ``max_trials`` instead."""


class MlrSearchAdapter(SearchAlgorithm):
    """CSIT MLRsearch 1.2.1 as a SearchAlgorithm."""

    name = "mlrsearch"

    def run(self, measure: Measure) -> SearchResult:
        import MLRsearch  # deferred: only this algorithm needs the package

        s = self.settings
        trials = TrialLog(measure, s, self.name)
        limited_loads: dict[float, list[TrialResult]] = {}
        goals = {
            t: MLRsearch.SearchGoal(
                loss_ratio=t / 100.0,
                exceed_ratio=s.exceed_ratio,
                relative_width=s.relative_width,
                initial_trial_duration=min(s.initial_trial_duration_s, s.trial_duration_s),
                final_trial_duration=s.trial_duration_s,
                duration_sum=max(s.duration_sum_s, s.trial_duration_s),
                preceding_targets=max(s.preceding_phases, 1),
                fail_fast=False,
            )
            for t in s.thresholds_pct
        }
        config = MLRsearch.Config()
        config.goals = list(goals.values())
        config.min_load = s.min_rate_pps
        config.max_load = s.max_rate_pps
        config.search_duration_max = SEARCH_DURATION_MAX_S
        config.warmup_duration = s.warmup_duration_s or None

        class _Measurer(MLRsearch.AbstractMeasurer):
            def measure(self, intended_duration: float, intended_load: float
                        ) -> "MLRsearch.MeasurementResult":
                warmup = not trials.trials and s.warmup_duration_s > 0
                trial: TrialResult | None = None
                failed: list[TrialResult] = []
                for _ in range(1 if warmup else UNUSABLE_RETRIES):
                    trial = trials.run(intended_load, intended_duration,
                                       **({"warmup": True} if warmup else {}))
                    if trial.usable:
                        break
                    failed.append(trial)
                assert trial is not None
                if not trial.usable and not warmup:
                    limited_loads.setdefault(intended_load, []).extend(failed)
                    return MLRsearch.MeasurementResult(
                        intended_duration=intended_duration, intended_load=intended_load,
                        intended_count=trial.intended, offered_count=trial.intended,
                        forwarding_count=0)
                return MLRsearch.MeasurementResult(
                    intended_duration=intended_duration, intended_load=intended_load,
                    intended_count=trial.intended, offered_count=trial.offered,
                    forwarding_count=trial.received,
                    offered_duration=trial.elapsed_s if trial.elapsed_s > 0 else intended_duration)

        note = ""
        try:
            found = MLRsearch.MultipleLossRatioSearch(config).search(
                measurer=_Measurer(), debug=log.debug)
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
            found = None
        except RuntimeError as exc:
            note = f"MLRsearch stopped: {exc}"
            found = None
        results = []
        for t, goal in goals.items():
            if found is None:
                results.append(GoalResult(t, None, None, "undecided", None, note))
                continue
            results.append(self._goal(t, found[goal], limited_loads))
        return trials.result(results, note)

    def _goal(self, t: float, res: object, limited_loads: dict[float, list[TrialResult]]
              ) -> GoalResult:
        s = self.settings
        lo = res.relevant_lower_bound  # type: ignore[attr-defined]
        hi = res.relevant_upper_bound  # type: ignore[attr-defined]
        lo_pps = float(lo) if lo is not None else None
        hi_pps = float(hi) if hi is not None else None
        cond = res.conditional_throughput  # type: ignore[attr-defined]
        cond_pps = float(cond) if cond is not None else None
        if hi_pps is not None:
            for load, failed in limited_loads.items():
                if abs(hi_pps - load) <= 1e-9 * load:
                    return unmeasurable_goal(t, s, lo_pps, hi_pps, failed)
        if lo_pps is None:
            if hi_pps is not None and hi_pps <= s.min_rate_pps * (1 + 1e-9):
                return edge_goal(t, "below_min", s)
            return GoalResult(t, None, hi_pps, "undecided", None, "MLRsearch found no lower bound")
        if hi_pps is None:
            if lo_pps >= s.max_rate_pps * (1 - 1e-9):
                return edge_goal(t, "at_max", s, conditional=cond_pps)
            return GoalResult(t, lo_pps, None, "undecided", None, "MLRsearch found no upper bound")
        return GoalResult(t, lo_pps, hi_pps, "ok", cond_pps)
