"""``lossfit``: a search that reads how much each trial lost, not only whether it passed.

Rates in pps, durations in seconds, thresholds in percent.  Widths are in ln
rate: W = ``-ln(1 - relative_width)`` (the goal width, as in :mod:`srperf.search.mlr`).

Why
    A search that reads pass/fail only (MLRsearch, ``mlr``, ``bisect``) learns
    about one bit per trial; on a SUT whose capacity varies by sigma from trial
    to trial it cannot locate the crossing better than about sigma /
    sqrt(trials).  A trial that lost packets above its capacity also says *what*
    that capacity was (:mod:`srperf.search.lossmodel`): one trial above the
    crossing pins it on a steady SUT, a dozen do on a noisy one.

What is reported (per goal, threshold t)
    * ``lower_bound_pps``: MLR's relevant lower bound, unchanged semantics: a
      load whose final-duration trials (``trial_duration_s``) passed by the
      exceed-ratio rule over ``duration_sum_s``
      (:meth:`srperf.search.mlr.LoadRecord.classify`; as MLRsearch, without
      ``mlr``'s ``validation_trials`` margin), with no upper-bound load below it.
      The loss fit only chooses *where* that load is; it never makes one pass.
    * ``upper_bound_pps``: the lower of the fit's 95 % upper end and the lowest
      load classified as an upper bound by the same rule.
    * ``conditional_throughput_pps``: MLRsearch's, from the final trials at the
      lower bound (lower bound x (1 - q), q the loss at the (1 - e) quantile of
      their trial seconds), so results compare with CSIT's.
    * ``estimate_pps`` / ``estimate_low_pps`` / ``estimate_high_pps``: the loss
      fit's crossing and its 95 % interval.

Trial placement (one goal at a time, lowest threshold first; trials are shared)
    1. Start: one trial at max, ``initial_trial_duration_s`` long.
    2. *Probe* while the fit is missing or loose (fewer than :data:`MIN_EXACT`
       exact readings, or its 95 % interval wider than :data:`PLACE_WIDTHS` W):
       a short trial (``initial_trial_duration_s``) at the fit's 95 % upper
       end, at most :data:`PROBE_SPREADS` fitted spreads above the crossing
       (clipped to [min, max] and below any load the generator could not
       offer).  Above the crossing most trials lose, and a trial that loses
       gives an exact reading.
    3. *Candidate*: final-duration trials at ``L = max(c * exp(-CANDIDATE_OFFSET
       * W), low)`` (c the fitted crossing, low the interval's lower end; kept
       below any upper-bound load and above the current lower bound) until the
       decision rule classifies it.  Their losses join the fit.  A candidate
       the fit has left behind (more than :data:`ABANDON_ABOVE` W above c, or
       more than :data:`ACCEPT_WIDTHS` W below it) is given up undecided.
    4. Done when a lower bound L exists and either

       * ``ln(high / L) <= W``: the interval from the reported value to the
         fit's 95 % upper end is narrower than the goal width (a steady SUT), or
       * the 95 % interval is wider than W (trial-to-trial noise), within
         :data:`NOISE_WIDTHS` W, and L is at most :data:`ACCEPT_WIDTHS` W below
         c: the crossing's standard error is then about one goal width, which
         no number of trials within a duration sum could shrink much.

       A lower bound above the fit's upper end (a lucky pass) takes more final
       trials, up to ``duration_sum_s`` of them, before it is accepted.
       Otherwise: probe while the interval is too wide, else place a new
       candidate (up when L is too far below c, down when L turned out an
       upper bound: half a goal width below it, twice as far after each
       candidate in a row that failed, halving once a lower bound is below).
    5. A load that fails by the rule more than :data:`CONTRADICTED_WIDTHS` W
       below c contradicts the threshold model (a soft knee: loss grows
       gradually, so readings far above the knee put c too high); the goal then
       places candidates as ``mlr`` does (steps down doubling, then halving).
       ``lo`` and ``hi`` of MLR's own rule within W of each other also end a goal.
    Without a fit (nothing lost more than t yet, or every loss was total) the
    goal brackets in log space like ``mlr``: probes halve the span between the
    highest load that passed and the lowest that failed or that the generator
    could not offer; once it is narrower than W the load that passed becomes
    the candidate (at max: ``at_max``; at min failing: ``below_min``).

Costs (bench/search_b1.py, model SUT): about 0.5-0.65x MLRsearch 1.2.1's trial
seconds at 0-2 % capacity noise with a hard knee, for the same goal settings;
the constants below were chosen on that bench (error <= 0.5 % and cost <=
0.7x at each noise).  On a soft knee (``--smoothing 0.01``/``0.03``) the
threshold model is wrong near the knee: on a steady SUT lossfit then costs
more than MLRsearch (the steps down in 4. and 5. are what it pays), which is
one reason it is not the default search.  The other: on the virtual testbed
(bench/search_b2.py, a shared 2-vCPU host) the crossings of successive trials
spread by several percent, far more than the goal width, and lossfit then
spends its probes narrowing an interval that the drift keeps wide (86 trial-s
for ipv6 where mlr took 25.5 in the same sitting).  A later B2 sitting (2026-11-26, shared host,
``--behaviors ipv6 --max-rate 1000000 --no-bisect``, 4 interleaved repeats, no
generator-limited trial in any search): lossfit took 0.79x mlr's trial seconds
(118.4 against 149.2 per search) but reported 684-860 kpps (mean 803.3, CV 10.2 %)
where mlr reported 624-762 (mean 695.0, CV 8.8 %), a median 1.20x higher; there
the loss at 0.5 % came from host stalls (2-4 % lost in about half the trials over
a wide band of rates), the threshold model put the crossing at 920-1000 kpps,
and lossfit's lower bound followed whichever trials happened to pass.  After the
generator's rest after loss (``tester.options.rest_s``), B2 on End (``--behaviors end
--max-rate 1500000 --no-bisect``, 4 interleaved repeats, 2026-11-26): lossfit took 4.0x
mlr's trial seconds (124.0 against 30.8 per search, 55-215 per search) for a median PDR
1.01x mlr's, with less spread (CV 1.9 % against 4.7 %).

Statuses are those of the other searches (:class:`srperf.search.base.GoalResult`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

from srperf.drivers.base import TrialResult
from srperf.search.base import GoalResult, Measure, SearchAlgorithm, SearchResult, SearchSettings
from srperf.search.common import (TrialBudgetExceeded, TrialLog,
                                  beyond_generator_in, edge_goal, exceeds, unmeasurable_goal)
from srperf.search.lossmodel import LossFit, fit_crossing
from srperf.search.loads import (LIMITED, LOWER, UPPER, ForcedLimits, LoadRecord, Phase,
                                 build_phases)

log = logging.getLogger(__name__)

MIN_EXACT = 3
"""Exact readings the fit needs before a candidate is placed."""
PLACE_WIDTHS = 5.0
"""A candidate is placed once the fit's 95 % interval is within this many goal widths."""
NOISE_WIDTHS = 5.0
"""A noisy goal stops once its 95 % interval is within this many goal widths
(half-width about 2 W: the crossing's standard error about one goal width)."""
PROBE_SPREADS = 2.0
"""Probes go no further above the crossing than this many fitted spreads
(standard deviations of the trials' ln crossings, at least one goal width)."""
CANDIDATE_OFFSET = 0.1
"""A candidate goes this many goal widths below the fitted crossing, or at the
fit's 95 % lower end if that is closer (a steady SUT)."""
ACCEPT_WIDTHS = 1.25
"""A noisy goal's lower bound must be within this many goal widths below the fit."""
ABANDON_ABOVE = 0.5
"""A candidate still undecided is given up once it lies this many goal widths above
the fitted crossing (it would most likely end an upper bound after 6 more seconds)."""
CONTRADICTED_WIDTHS = 1.0
"""An upper bound this many goal widths below the fitted crossing contradicts the
threshold model: the goal then places candidates as ``mlr`` would."""
_EPS = 1e-9


@dataclass
class Goal:
    """Where one goal's search stands."""

    threshold_pct: float
    candidate: float | None = None
    """The load being made a lower bound (final trials), pps."""
    done: bool = False
    fit: LossFit | None = None
    failures: int = 0
    """Candidates in a row that ended upper bounds."""
    descents: int = 0
    """Steps taken down from an upper bound the fit did not expect (see ``_descend``)."""


class LossFitSearch(SearchAlgorithm):
    """Trials placed by a fit of every trial's loss ratio; MLR's lower-bound semantics."""

    name = "lossfit"

    def __init__(self, settings: SearchSettings) -> None:
        super().__init__(settings)
        self.final: Phase = build_phases(settings)[-1]
        self.width = self.final.log_width
        self.probe_s = min(settings.initial_trial_duration_s, settings.trial_duration_s)

    # -- evidence ---------------------------------------------------------------------------

    def _trial(self, rate: float, duration: float, **flags: object) -> TrialResult:
        trial = self._log.run(rate, duration, **flags)
        rec = self._loads.setdefault(rate, LoadRecord(rate))
        rec.add(trial)
        self._limits.record(rec, beyond_generator_in(self._log, trial))
        return trial

    def _status(self, rate: float, t: float) -> str:
        """MLR's classification of ``rate`` for ``t`` % by the final-phase rule."""
        rec = self._loads.get(rate)
        if rec is None:
            return "undecided"
        return rec.classify(t, self.final, self.settings.exceed_ratio)

    def _bounds(self, t: float) -> tuple[float | None, float | None, bool]:
        """MLR's relevant bounds: (highest lower bound below the lowest upper one, that upper
        bound, whether the upper one is a load the generator could not offer)."""
        lo: float | None = None
        for rate in sorted(self._loads):
            st = self._status(rate, t)
            if st in (UPPER, LIMITED):
                return lo, rate, st == LIMITED
            if st == LOWER:
                lo = rate
        return lo, None, False

    def _fit(self, t: float) -> LossFit | None:
        trials = [tr for tr in self._log.trials if not tr.extra.get("warmup")]
        return fit_crossing(trials, t, self.settings.exceed_ratio)

    def _limited_below(self) -> float | None:
        """The lowest load the generator could not offer, pps."""
        return min((r for r, rec in self._loads.items() if rec.limited), default=None)

    # -- placement --------------------------------------------------------------------------

    def _clip(self, rate: float) -> float:
        s = self.settings
        limit = self._limited_below()
        if limit is not None:
            rate = min(rate, limit * math.exp(-self.width))
        return min(max(rate, s.min_rate_pps), s.max_rate_pps)

    def _stop(self, lo: float | None, t: float, fit: LossFit) -> bool:
        """True when ``lo`` is a lower bound precise enough (module docstring, step 4)."""
        if lo is None or self._status(lo, t) != LOWER:
            return False
        if fit.ci_high_pps is None:
            return False
        high = fit.ci_high_pps
        if lo > high * (1 + _EPS):  # passed above the fit: accepted once fully tested
            return self._final_seconds(lo) >= self.final.duration_sum_s * (1 - _EPS)
        if math.log(high / lo) <= self.width * (1 + _EPS):
            return True
        return self._placed_for_noise(lo, fit) and \
            fit.log_width() <= NOISE_WIDTHS * self.width * (1 + _EPS)

    def _placed_for_noise(self, lo: float, fit: LossFit) -> bool:
        """True when the interval is wider than the goal width (a noisy SUT) and ``lo`` is
        no more than :data:`ACCEPT_WIDTHS` goal widths below the fitted crossing."""
        return (fit.ci_low_pps is not None and fit.log_width() > self.width * (1 + _EPS)
                and not self._below(lo, fit, ACCEPT_WIDTHS))

    def _misplaced(self, rate: float, fit: LossFit | None) -> bool:
        """True when the fit has moved so far that a candidate at ``rate`` is no longer worth
        finishing: more than :data:`ABANDON_ABOVE` goal widths above the fitted crossing (it
        would most likely become an upper bound) or too far below to be accepted."""
        if fit is None or fit.n_exact < MIN_EXACT:
            return False
        return (rate > fit.crossing_pps * math.exp(ABANDON_ABOVE * self.width)
                or self._below(rate, fit, ACCEPT_WIDTHS))

    def _final_seconds(self, rate: float) -> float:
        """Seconds of usable final-duration trials at ``rate``."""
        rec = self._loads.get(rate)
        if rec is None:
            return 0.0
        return sum(tr.duration_s for tr in rec.trials
                   if tr.duration_s >= self.final.duration_s * (1 - _EPS))

    def _below(self, rate: float, fit: LossFit, widths: float) -> bool:
        """True when ``rate`` is more than ``widths`` goal widths below the fitted crossing."""
        return rate < fit.crossing_pps * math.exp(-widths * self.width) * (1 - _EPS)

    def _probe(self, fit: LossFit) -> float:
        """A load just above the crossing (module docstring, step 2)."""
        spread = max(fit.scale * math.pi / math.sqrt(3.0), self.width)
        far = fit.crossing_pps * math.exp(PROBE_SPREADS * spread)
        if fit.ci_high_pps is not None:
            far = min(far, fit.ci_high_pps)
        return self._clip(far)

    def _next(self, g: Goal) -> tuple[float, float] | None:
        """(rate, duration) of the next trial for ``g``, or None when ``g`` is done."""
        s = self.settings
        t = g.threshold_pct
        lo, hi, limited = self._bounds(t)
        retry = self._limits.retry(self._loads, lo, hi, limited, self.width)
        if retry is not None:
            return retry, self.final.duration_s
        if (lo is not None and lo >= s.max_rate_pps * (1 - _EPS)) or \
                (hi is not None and hi <= s.min_rate_pps * (1 + _EPS)):
            return None
        fit = g.fit = self._fit(t)
        if g.candidate is not None:
            st = self._status(g.candidate, t)
            if st not in (LOWER, UPPER, LIMITED) and (hi is None or g.candidate < hi) \
                    and (g.descents or g.failures or not self._misplaced(g.candidate, fit)):
                return g.candidate, self.final.duration_s
            g.failures = g.failures + 1 if st == UPPER else 0
            g.candidate = None
        if lo is not None and hi is not None and math.log(hi / lo) <= self.width * (1 + _EPS):
            return None  # MLR's own bracket is as narrow as the goal width
        if fit is None:
            return self._bracket(g, lo, hi)
        if self._stop(lo, t, fit):
            return None
        if hi is not None and hi < fit.crossing_pps * math.exp(-CONTRADICTED_WIDTHS * self.width):
            return self._descend(g, lo, hi)
        loose = fit.n_exact < MIN_EXACT or fit.log_width() > PLACE_WIDTHS * self.width
        if loose:
            return self._probe(fit), self.probe_s
        if lo is not None and fit.ci_high_pps is not None and lo > fit.ci_high_pps:
            return lo, self.final.duration_s  # more evidence where the fit doubts a pass
        if lo is not None and self._placed_for_noise(lo, fit):
            return self._probe(fit), self.probe_s  # lo is placed well: the fit is too loose
        # a new candidate: just below the crossing, below any upper bound, above lo
        cand = fit.crossing_pps * math.exp(-CANDIDATE_OFFSET * self.width)
        if fit.ci_low_pps is not None:
            cand = max(cand, fit.ci_low_pps)
        if hi is not None:
            # below an upper bound: half a width, doubling with each candidate in a row that
            # ended an upper bound (a loss curve softer than the threshold model's)
            cand = min(cand, hi * math.exp(-0.5 * self.width * 2.0 ** g.failures))
            if lo is not None and cand <= lo * (1 + _EPS) \
                    and math.log(hi / lo) > self.width * (1 + _EPS):
                cand = math.sqrt(lo * hi)
        cand = self._clip(cand)
        if lo is not None and cand <= lo * (1 + _EPS):
            # nothing between lo and what the fit allows: lo is all there is; tighten the fit
            if fit.log_width() > NOISE_WIDTHS * self.width:
                return self._probe(fit), self.probe_s
            return None
        g.candidate = cand
        return cand, self.final.duration_s

    def _descend(self, g: Goal, lo: float | None, hi: float) -> tuple[float, float]:
        """Candidates as ``mlr`` places them when a load below the fitted crossing failed by the
        exceed-ratio rule (the loss curve is not the threshold model's, e.g. a soft knee):
        steps down from ``hi`` doubling from one goal width, then log-space halving."""
        if lo is None:
            cand = hi * math.exp(-self.width * 2.0 ** g.descents)
            g.descents += 1
        else:
            cand = math.sqrt(lo * hi)
        g.candidate = self._clip(max(cand, self.settings.min_rate_pps))
        return g.candidate, self.final.duration_s

    def _bracket(self, g: Goal, lo: float | None, hi: float | None) -> tuple[float, float] | None:
        """Log-space bracketing when there is no fit (module docstring, last paragraph)."""
        s = self.settings
        t = g.threshold_pct
        usable = [tr for tr in self._log.trials if tr.usable and not tr.extra.get("warmup")]
        bad = [tr.rate_pps for tr in usable if exceeds(tr, t)]
        limit = self._limited_below()
        tops = bad + ([limit] if limit is not None else []) + ([hi] if hi is not None else [])
        top = min(tops, default=None)
        good = [tr.rate_pps for tr in usable if not exceeds(tr, t)
                and (top is None or tr.rate_pps < top)]
        if top is None:  # nothing failed: prove max
            g.candidate = s.max_rate_pps
            return g.candidate, self.final.duration_s
        bottom = max(good, default=None)
        if bottom is None:
            if top <= s.min_rate_pps * (1 + _EPS):
                g.candidate = s.min_rate_pps
                return g.candidate, self.final.duration_s
            hint = self._hint(t)
            if hint is not None and hint < top * (1 - _EPS):
                return hint, self.probe_s
            bottom = s.min_rate_pps
            if math.log(top / bottom) <= self.width * (1 + _EPS):
                g.candidate = bottom
                return bottom, self.final.duration_s
        if math.log(top / bottom) > self.width * (1 + _EPS):
            return math.sqrt(top * bottom), self.probe_s
        if lo is not None and lo >= bottom * (1 - _EPS):
            return None
        g.candidate = bottom
        return bottom, self.final.duration_s

    def _hint(self, t: float) -> float | None:
        """Where a generator-limited first trial says the SUT could be, pps (as ``mlr``)."""
        for tr in self._log.trials:
            if tr.extra.get("warmup") or tr.usable:
                continue
            if tr.counters_consistent and tr.elapsed_s > 0:
                received = tr.received / tr.elapsed_s
                return self._clip(min(received / (1.0 - t / 100.0), tr.offered_rate_pps)
                                  * math.exp(-0.5 * self.width))
        return None

    # -- the search -------------------------------------------------------------------------

    def run(self, measure: Measure) -> SearchResult:
        s = self.settings
        self._log = TrialLog(measure, s, self.name)
        self._loads: dict[float, LoadRecord] = {}
        self._limits = ForcedLimits()
        goals = [Goal(t) for t in sorted(s.thresholds_pct)]
        note = ""
        try:
            self._log.warmup()
            self._trial(s.max_rate_pps, self.probe_s)
            while True:
                active = [g for g in goals if not g.done]
                if not active:
                    break
                g = active[0]
                step = self._next(g)
                if step is None:
                    g.done = True
                    continue
                self._trial(*step)
        except TrialBudgetExceeded:
            note = f"trial budget of {s.max_trials} reached"
        results = {g.threshold_pct: self._goal(g, note) for g in goals}
        return self._log.result([results[t] for t in s.thresholds_pct], note)

    def _goal(self, g: Goal, note: str) -> GoalResult:
        s = self.settings
        t = g.threshold_pct
        lo, hi, limited = self._bounds(t)
        fit = self._fit(t)
        if note and not g.done:
            return GoalResult(t, None, None, "undecided", None, note)
        if limited:
            assert hi is not None
            if lo is None or fit is None or fit.ci_high_pps is None or fit.ci_high_pps >= hi:
                return unmeasurable_goal(t, s, lo, hi, self._loads[hi].unusable)
            hi = None  # the fit bounds the answer below the load the generator could not offer
        if hi is not None and hi <= s.min_rate_pps * (1 + _EPS):
            return edge_goal(t, "below_min", s)
        if lo is None or self._status(lo, t) != LOWER:
            return GoalResult(t, None, hi, "undecided", None,
                              note or "no load passed by the exceed-ratio rule")
        q = self._loads[lo].quantile_loss(t, self.final, s.exceed_ratio)
        cond = None if q is None else lo * (1.0 - q)
        if lo >= s.max_rate_pps * (1 - _EPS):
            return edge_goal(t, "at_max", s, conditional=cond)
        upper = hi
        if fit is not None and fit.ci_high_pps is not None and fit.ci_high_pps >= lo:
            upper = fit.ci_high_pps if upper is None else min(upper, fit.ci_high_pps)
        if upper is None:  # the fit doubts the pass at lo: the lowest failure above it
            upper = min((tr.rate_pps for tr in self._log.trials if tr.usable
                         and tr.rate_pps > lo and exceeds(tr, t)), default=None)
        if upper is None or upper < lo:
            return GoalResult(t, lo, upper, "undecided", cond,
                              note or "the trials do not bound the answer from above")
        result = GoalResult(t, lo, upper, "ok", cond, _fit_note(fit))
        if fit is None:
            return result
        return dataclasses.replace(result, estimate_pps=fit.crossing_pps,
                                   estimate_low_pps=fit.ci_low_pps,
                                   estimate_high_pps=fit.ci_high_pps)


def _fit_note(fit: LossFit | None) -> str:
    if fit is None:
        return "no loss-ratio fit (no trial lost more than the threshold)"
    return (f"loss fit: {fit.n_readings} trials, {fit.n_exact} exact readings, "
            f"spread {100 * fit.scale * math.pi / math.sqrt(3.0):.2f} %")
