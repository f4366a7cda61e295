"""The evidence of a phased search, load by load: phases, the trials at each load and the
decision rule that classifies a load for a goal (lower, upper, undecided, provisional,
limited), and the loads forced to ``limited`` on one stall of the generator.

Shared by :mod:`srperf.search.mlr` (whose docstring states the phases and the
decision rule in full) and :mod:`srperf.search.lossfit`.  Rates in pps, durations in s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from srperf.drivers.base import TrialResult
from srperf.search.base import SearchSettings
from srperf.search.common import UNUSABLE_RETRIES, exceeds

LOWER, UPPER, UNDECIDED, LIMITED = "lower", "upper", "undecided", "limited"
PROVISIONAL = "provisional"
"""Not decided yet, but good long trials and no bad time so far: steers the
search like a lower bound, is never reported as one before validation."""
_EPS = 1e-9


@dataclass(frozen=True)
class Phase:
    """Trial duration (s), duration sum (s) and log width of one search phase."""

    duration_s: float
    duration_sum_s: float
    log_width: float
    final: bool


def build_phases(s: SearchSettings) -> list[Phase]:
    """The coarse phases then the final one (see the module docstring)."""
    final_w = -math.log1p(-s.relative_width)
    d0 = min(s.initial_trial_duration_s, s.trial_duration_s)
    d, big_d = s.trial_duration_s, max(s.duration_sum_s, s.trial_duration_s)
    n = s.preceding_phases
    phases = []
    for k in range(n):
        dsum = d0 * (big_d / d0) ** (k / n)
        phases.append(Phase(min(d, dsum), dsum, final_w * 2 ** (n - k), False))
    phases.append(Phase(d, big_d, final_w, True))
    return phases


@dataclass
class LoadRecord:
    """Every trial at one load (pps): usable ones, and unusable ones apart."""

    rate_pps: float
    trials: list[TrialResult] = field(default_factory=list)
    unusable: list[TrialResult] = field(default_factory=list)
    unusable_run: int = 0
    """Unusable trials since the last usable one."""

    def add(self, trial: TrialResult) -> None:
        if trial.usable:
            self.trials.append(trial)
            self.unusable_run = 0
        else:
            self.unusable.append(trial)
            self.unusable_run += 1

    @property
    def limited(self) -> bool:
        """True when this load could not be measured (a run of unusable trials)."""
        return self.unusable_run >= UNUSABLE_RETRIES

    def classify(self, t: float, phase: Phase, exceed_ratio: float,
                 extra_bad_s: float = 0.0) -> str:
        """LOWER, UPPER, PROVISIONAL, UNDECIDED or LIMITED for ``t`` % in ``phase``.

        ``extra_bad_s`` adds hypothetical bad long trial seconds (validation margin).
        """
        if self.limited:
            return LIMITED
        good_long = good_short = bad_short = 0.0
        bad_long = extra_bad_s
        for tr in self.trials:
            bad = exceeds(tr, t)
            if tr.duration_s >= phase.duration_s * (1.0 - _EPS):
                if bad:
                    bad_long += tr.duration_s
                else:
                    good_long += tr.duration_s
            elif bad:
                bad_short += tr.duration_s
            else:
                good_short += tr.duration_s
        e = exceed_ratio
        bad = bad_long + max(0.0, bad_short - good_short * e / (1.0 - e))
        total = max(phase.duration_sum_s, good_long + bad)
        if good_long >= (1.0 - e) * total * (1.0 - _EPS):
            return LOWER
        if bad > e * total * (1.0 + _EPS):
            return UPPER
        if good_long > 0 and bad == 0:
            return PROVISIONAL
        return UNDECIDED

    def quantile_loss(self, t: float, phase: Phase, exceed_ratio: float) -> float | None:
        """Loss ratio at the (1 - e) quantile of long trial seconds (missing seconds = loss 1)."""
        long = sorted((tr.loss_ratio, tr.duration_s) for tr in self.trials
                      if tr.duration_s >= phase.duration_s * (1.0 - _EPS))
        if not long:
            return None
        total = max(phase.duration_sum_s, sum(d for _, d in long))
        need = (1.0 - exceed_ratio) * total
        seen = 0.0
        for loss, dur in long:
            seen += dur
            if seen >= need * (1.0 - _EPS):
                return loss
        return 1.0


@dataclass
class GoalState:
    """Where one goal's search stands.

    ``hint_lo``/``hint_hi`` are the bounds the previous phase ended with (in the
    first phase ``hint_lo`` is the estimate from the forwarding rate at max).
    ``step_up``/``step_down`` are the current extension steps (log space).
    """

    threshold_pct: float
    phase_index: int = 0
    hint_lo: float | None = None
    hint_hi: float | None = None
    step_up: float = 0.0
    step_down: float = 0.0
    pending: float | None = None
    pending_dir: str = ""


class ForcedLimits:
    """Loads taken for beyond the generator on their first unusable trial (no retries,
    :func:`srperf.search.common.beyond_generator_in`), with the unusable run they really
    had, so that ``mlr`` and ``lossfit`` alike give such a load its remaining retries
    before a goal ends ``generator_limited`` on it.

    One stall of a generator on a busy host looks like a rate beyond it when nothing
    faster was paced yet; without this a goal could end ``generator_limited`` on one
    trial.  Retries happen only where they decide the goal (a lower bound within two
    goal widths below the load), at most :data:`UNUSABLE_RETRIES` unusable trials in all.
    """

    def __init__(self) -> None:
        self.runs: dict[float, int] = {}

    def record(self, rec: LoadRecord, beyond: bool) -> None:
        """After a trial at ``rec``: mark it limited at once when ``beyond``."""
        self.runs.pop(rec.rate_pps, None)
        if beyond:
            self.runs[rec.rate_pps] = rec.unusable_run
            rec.unusable_run = max(rec.unusable_run, UNUSABLE_RETRIES)

    def retry(self, loads: dict[float, LoadRecord], lo: float | None, hi: float | None,
              limited: bool, width: float) -> float | None:
        """The load (pps) worth another try before the goal ends on it, else None:
        ``hi`` when it is a forced limit with retries left and ``lo`` is within two goal
        widths (``width``, ln rate) below it; its real unusable run is restored."""
        if not limited or hi is None or hi not in self.runs:
            return None
        if len(loads[hi].unusable) >= UNUSABLE_RETRIES:
            return None
        if lo is None or math.log(hi / lo) > 2.0 * width * (1 + _EPS):
            return None
        loads[hi].unusable_run = self.runs.pop(hi)
        return hi


__all__ = ["LIMITED", "LOWER", "PROVISIONAL", "UNDECIDED", "UPPER", "ForcedLimits", "GoalState",
           "LoadRecord", "Phase", "build_phases"]
