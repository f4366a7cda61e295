"""SRPerf's PDR finder (Algorithm 1 of the SRPerf paper), one bisection per threshold.

lowBound = min, upBound = max; while upBound - lowBound > accuracy: measure at
the midpoint; if the delivery ratio received / intended is below
1 - threshold the midpoint becomes the upper bound, otherwise the lower bound.

Additions, each documented where it happens:

* The paper advises repeating trials whose delivery ratio is close to the
  threshold.  ``settings.repeat_near_threshold`` trials in all are run at such a
  rate and the majority decides (see :func:`srperf.search.common.measure_rate`);
  ``repeat_near_threshold = 1`` is exactly SRPerf's one trial per rate.
* Algorithm 1 never measures min or max.  When the bisection ends with the
  lower bound still at min (or the upper still at max) that edge rate is
  measured once, so that "loss even at min" (``below_min``) and "no loss at
  max" (``at_max``) are reported as such instead of as a number.
* Unusable trials (generator-limited, inconsistent counters) are retried and
  never decide; a rate the generator cannot offer becomes an upper bound
  flagged as the generator's, and the goal's status says so.
* ``settings.early_stop`` (an experiment's ``search.early_stop``, on by default):
  a trial ends as soon as the frames it certainly lost (refused at the SUT's
  port, counted by the generator during the trial) exceed
  :func:`srperf.search.common.stop_lost`: the whole trial would then have failed,
  and would not have been near the threshold where that makes the rate be
  measured again.  Algorithm 1 takes the same course and reaches the same bounds
  as with whole trials; a failing trial far above the answer costs a fraction of
  its duration (on the virtual testbed ``make run`` took 0.77x the wall time of
  whole trials, ``bench/make_run.py --modes new,whole``).
* ``settings.bisect_start = "mrr"`` (an informed start; the default ``"range"`` is
  Algorithm 1): most of Algorithm 1's trials halve a range far wider than the
  answer's neighbourhood.  One short *probe* at max (``initial_trial_duration_s``,
  marked ``extra["probe"]``, never deciding anything) tells where the SUT is: an
  overloaded SUT delivers about its capacity, so the knee is
  ``K = min(received / elapsed / (1 - t), offered rate)``.  The first full trial
  goes to ``K - step`` (``step = max(accuracy, START_STEP x K)``, or to max when
  the probe passed there).  If it fails, the probe was wrong and Algorithm 1 takes
  over on [min, that rate] (worst case: the probe and one trial more than
  Algorithm 1).  While trials pass, the next goes up from the last by a step that
  doubles each time (never beyond max), until one fails; then Algorithm 1 bisects
  between the two.  Every bound is a measured full-duration trial decided as
  above: the answer has the same meaning and the same accuracy.  On the model SUT
  with a hard knee it takes about 60 % of Algorithm 1's trial time; on the shared
  virtual testbed, whose loss at 0.5 % comes from the host's stalls (a plateau of
  a few % from about half the probe's delivered rate up), the probe misleads and
  it cost more (bench/make_run.py), which is why ``quick`` keeps ``range``.
* ``settings.bisect_start = "short"`` (a short-trial first phase, MLRsearch's idea
  of shorter trials in the preceding phases): Algorithm 1 runs first with
  trials of :data:`SHORT_SHARE` x the trial duration, one per rate, marked
  ``extra["probe"]`` and never deciding anything, until the bracket is
  :data:`SHORT_WIDTH` accuracies wide.  The full-duration phase starts at that
  bracket's lower rate and gallops both ways (a step of half the short bracket,
  doubling) until a passing and a failing full trial bound the answer, then
  bisects as Algorithm 1.  Unlike one probe it bisects: a plateau of loss from
  the host's stalls moves its bracket by a step or two, not to half the rate.
  A short trial's loss is lower than a full one's (the queues hold a larger share
  of its excess), so a wrong bracket costs full trials, never the answer: every
  bound is a full-duration trial decided as above.  On the model SUT it takes
  0.65-0.78x Algorithm 1's trial time (bench/search_b1.py); on the shared virtual
  testbed 0.2 s trials passed at 1.32 Mpps where 1 s trials passed at 0.87 Mpps,
  and it cost more (bench/make_run.py), so ``quick`` keeps ``range`` here too.
"""

from __future__ import annotations

import logging

from srperf.drivers.base import TrialResult
from srperf.search.base import (GoalResult, Measure, SearchAlgorithm, SearchResult,
                                SearchSettings, exceeds)
from srperf.search.common import (RateVerdict, TrialBudgetExceeded, TrialLog, edge_goal,
                                  measure_rate, unmeasurable_goal)

log = logging.getLogger(__name__)

SHORT_SHARE = 0.2
"""``bisect_start = "short"``: duration of a first-phase trial, as a share of the trial
duration (0.2 s of a 1 s trial: 160,000 frames at 800 kpps)."""
SHORT_WIDTH = 4.0
"""``bisect_start = "short"``: the first phase stops when its bracket is this many
accuracies wide (two halvings are left to the full-duration trials)."""

START_STEP = 0.02
"""``bisect_start = "mrr"``: the first step from the probe's knee, as a share of it
(at least the accuracy).  Two steps, 4 % of the rate, is about the spread of the
virtual testbed's capacity from one trial to the next."""

SRPERF_TRIAL_DURATION_S = 10.0
SRPERF_ACCURACY_PPS = 500.0
SRPERF_MIN_RATE_PPS = 100_000.0


class BisectSearch(SearchAlgorithm):
    """SRPerf Algorithm 1: plain bisection in pps, one threshold at a time."""

    name = "bisect"

    @classmethod
    def srperf_settings(cls, duration_scale: float = 1.0, *,
                        thresholds_pct: tuple[float, ...] = (0.5,),
                        max_rate_pps: float = SearchSettings.max_rate_pps,
                        accuracy_pps: float = SRPERF_ACCURACY_PPS,
                        **overrides: object) -> SearchSettings:
        """The settings of the SRPerf paper, durations multiplied by ``duration_scale``.

        10 s trials, accuracy 500 pps, min 100 kpps, one trial per rate, no
        repeats.  (SRPerf also ran a discarded 10 s warm-up before every trial;
        that is not reproduced: ``warmup_duration_s`` is one warm-up per search.)
        """
        if not duration_scale > 0:
            raise ValueError(f"duration_scale {duration_scale!r} must be > 0")
        values: dict[str, object] = dict(
            thresholds_pct=tuple(thresholds_pct),
            min_rate_pps=SRPERF_MIN_RATE_PPS,
            max_rate_pps=max_rate_pps,
            accuracy_pps=accuracy_pps,
            trial_duration_s=SRPERF_TRIAL_DURATION_S * duration_scale,
            initial_trial_duration_s=SRPERF_TRIAL_DURATION_S * duration_scale,
            repeat_near_threshold=1,
            warmup_duration_s=0.0,
        )
        values.update(overrides)
        return SearchSettings(**values)  # type: ignore[arg-type]

    def run(self, measure: Measure) -> SearchResult:
        s = self.settings
        trials = TrialLog(measure, s, self.name)
        goals: list[GoalResult] = []
        note = ""
        try:
            trials.warmup()
            probe = self._probe(trials) if s.bisect_start == "mrr" else None
            for t in s.thresholds_pct:
                goals.append(self._bisect(trials, t, probe))
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
            for t in s.thresholds_pct[len(goals):]:
                goals.append(GoalResult(t, None, None, "undecided", None, note))
        return trials.result(goals, note)

    def _measure(self, trials: TrialLog, rate: float, t: float) -> RateVerdict:
        s = self.settings
        return measure_rate(trials, rate, s.trial_duration_s, (t,), s.repeat_near_threshold,
                            s.near_factor, s.early_stop)

    def _probe(self, trials: TrialLog) -> TrialResult:
        """The informed start's short trial at max (it places the bracket only)."""
        s = self.settings
        return trials.run(s.max_rate_pps, min(s.initial_trial_duration_s, s.trial_duration_s),
                          probe=True)

    def _knee(self, probe: TrialResult, t: float) -> float | None:
        """Where the probe says threshold ``t`` is crossed, pps (None: it cannot say)."""
        s = self.settings
        if not probe.counters_consistent or probe.elapsed_s <= 0 or probe.intended == 0:
            return None
        if probe.usable and probe.loss_ratio * 100.0 <= t:
            return s.max_rate_pps  # kept up with max: the bracket starts there
        delivered = probe.received / probe.elapsed_s / (1.0 - t / 100.0)
        offered = probe.offered_rate_pps if probe.generator_limited else s.max_rate_pps
        knee = min(delivered, offered)
        return min(max(knee, s.min_rate_pps), s.max_rate_pps) if knee > 0 else None

    def _bisect(self, trials: TrialLog, t: float, probe: TrialResult | None = None
                ) -> GoalResult:
        s = self.settings
        low, up = s.min_rate_pps, s.max_rate_pps
        low_verdict: RateVerdict | None = None
        up_verdict: RateVerdict | None = None
        up_measured = False
        knee = None if probe is None else self._knee(probe, t)
        start: tuple[float, float, bool] | None = None
        if knee is not None:
            step = max(s.accuracy_pps, START_STEP * knee)
            start = (knee - step if knee < s.max_rate_pps else s.max_rate_pps, step, False)
        elif s.bisect_start == "short":
            start = self._short_phase(trials, t)
        if start is not None:
            low, up, low_verdict, up_verdict = self._gallop(trials, t, *start)
            up_measured = up_verdict is not None
            if low_verdict is not None and low >= s.max_rate_pps:
                return edge_goal(t, "at_max", s, conditional=_conditional(low_verdict, t))
            if up_verdict is not None and up <= s.min_rate_pps:
                if up_verdict.passed[t] is None:
                    return unmeasurable_goal(t, s, None, s.min_rate_pps, up_verdict.trials)
                return edge_goal(t, "below_min", s)
        while up - low > s.accuracy_pps:
            rate = 0.5 * (low + up)
            verdict = self._measure(trials, rate, t)
            passed = verdict.passed[t]
            if passed:
                low, low_verdict = rate, verdict
            else:
                up, up_measured, up_verdict = rate, True, verdict
        if low_verdict is None:
            verdict = self._measure(trials, s.min_rate_pps, t)
            if verdict.passed[t] is None:
                return unmeasurable_goal(t, s, None, s.min_rate_pps, verdict.trials)
            if not verdict.passed[t]:
                return edge_goal(t, "below_min", s)
            low_verdict = verdict
        if not up_measured:
            verdict = self._measure(trials, s.max_rate_pps, t)
            if verdict.passed[t]:
                return edge_goal(t, "at_max", s, conditional=_conditional(verdict, t))
            up_verdict = verdict
        if up_verdict is not None and up_verdict.passed[t] is None:
            return unmeasurable_goal(t, s, low, up, up_verdict.trials)
        return GoalResult(t, low, up, "ok", _conditional(low_verdict, t))

    def _short_phase(self, trials: TrialLog, t: float) -> tuple[float, float, bool]:
        """``bisect_start = "short"``: Algorithm 1 with short trials down to a bracket
        :data:`SHORT_WIDTH` accuracies wide; returns where the full phase starts, its
        first step and True (it gallops both ways).  An unusable short trial (the
        generator could not offer the rate) ends the phase as a failure would."""
        s = self.settings
        duration = SHORT_SHARE * s.trial_duration_s
        low, up = s.min_rate_pps, s.max_rate_pps
        while up - low > SHORT_WIDTH * s.accuracy_pps:
            rate = 0.5 * (low + up)
            trial = trials.run(rate, duration, probe=True)
            if trial.usable and not exceeds(trial, t):
                low = rate
            else:
                up = rate
                if not trial.usable:
                    break
        # the gallop doubles the step before its first move: the second full trial
        # goes to the short bracket's upper rate
        return low, max(0.5 * s.accuracy_pps, 0.5 * (up - low)), True

    def _gallop(self, trials: TrialLog, t: float, rate: float, step: float, descend: bool
                ) -> tuple[float, float, RateVerdict | None, RateVerdict | None]:
        """The bracket of an informed start (module docstring): full trials from ``rate``,
        up by ``step`` (doubling) while they pass; when the first fails, down the same
        way if ``descend``, else back to Algorithm 1 on [min, rate]; the step doubles
        before each move.  Returns (low, up, their verdicts; None where that side is
        still the search range's edge)."""
        s = self.settings
        low, up = s.min_rate_pps, s.max_rate_pps
        low_verdict: RateVerdict | None = None
        up_verdict: RateVerdict | None = None
        while True:
            rate = min(max(rate, s.min_rate_pps), s.max_rate_pps)
            verdict = self._measure(trials, rate, t)
            if verdict.passed[t]:
                low, low_verdict = rate, verdict
            else:
                up, up_verdict = rate, verdict
            if low_verdict is not None and up_verdict is not None:
                return low, up, low_verdict, up_verdict
            if low >= s.max_rate_pps or up <= s.min_rate_pps:
                return low, up, low_verdict, up_verdict
            if verdict.passed[t] is None:
                return low, up, low_verdict, up_verdict  # unmeasurable here: _bisect says so
            if low_verdict is None and not descend:
                # the first trial at or below the knee failed: the probe was wrong (loss
                # that does not come from capacity, e.g. stalls of a busy host); Algorithm 1
                # takes over on [min, up], one probe and one trial more than it alone
                return low, up, low_verdict, up_verdict
            step *= 2.0
            rate = rate + step if verdict.passed[t] else rate - step


def _conditional(verdict: RateVerdict, t: float) -> float | None:
    """Rate x (1 - worst loss ratio of the passing trials there), pps."""
    loss = verdict.worst_passing_loss(t)
    return None if loss is None else verdict.rate_pps * (1.0 - loss)
