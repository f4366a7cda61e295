"""What the trend can see: per test, the smallest step that would be red (issue 48).

A nightly at a night-to-night CV of 8 % cannot see a 5 % regression on its own night,
and it should say so.  For one test this module asks the trend detector itself
(:func:`srperf.results.trend.group` and :func:`~srperf.results.trend.new_regression`,
the same settings) how large a step must be to turn it red, at the noise the test's
history shows:

- **noise**: the night-to-night coefficient of variation of the test's current jumpavg
  group (the standard deviation of its nights' averages over their mean); a group of
  fewer than 3 nights, or of identical ones, gives no noise figure and no answer ("not
  enough evidence", as everywhere else).
- **a stepped night**: the history as it is, then a night whose level is the current
  group's average moved by the step in the worse direction (lower for rates, higher
  for times), landing ``z`` = 0.84 standard deviations on the *better* side of that
  level: four stepped nights in five land worse than it, so a step found red here is
  red on at least about 80 % of such nights (assuming a worse night is never less red,
  which is how jumpavg's split behaves).  A night of several repetitions keeps the
  newest night's spread around its new level.  ``k`` stepped nights are not ``k``
  copies (identical nights would look noiseless to jumpavg): their mean lands
  0.84 / sqrt(k) standard deviations to the better side and they are spread as the
  k quantiles of a night's noise, the least visible first (:func:`night_offsets`).
- **own night**: the smallest step for which that night is red
  (:meth:`TestTrend.red_on`'s rule); **within k nights**: the smallest step for which
  one of ``k`` such nights in a row is red (``k`` defaults to the detector's
  ``confirm`` + 1: a group the next nights confirm is red up to ``confirm`` nights
  after its first).

Found by bisection to :data:`RESOLUTION_PCT`; a step not red even at
:data:`MAX_STEP_PCT` is reported as not visible.  These are properties of the
detector at this noise, computed, not measured; the noise is the measured part.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from srperf.results.trend import TestTrend, TrendSettings, group, new_regression

Z_80 = 0.8416
"""The stepped night lands this many standard deviations on the better side of its level
(the 80th percentile of a normal night)."""
RESOLUTION_PCT = 0.25
MAX_STEP_PCT = 90.0
MIN_NIGHTS = 3
HISTORY = 60
"""Only the newest this many nights enter the detector here (jumpavg's cost grows with
the square of the history; the answer depends on the current group and its neighbours)."""


@dataclass(frozen=True)
class StepVisibility:
    """The smallest step (%) the trend turns red, tonight and within ``k`` nights."""

    cv_pct: float
    """Night-to-night coefficient of variation of the current group, %."""
    nights: int
    """Nights the noise was estimated from."""
    own_night_pct: float | None
    """Smallest step red on its own night (None: not even at MAX_STEP_PCT)."""
    within_pct: float | None
    """Smallest step red within ``k`` nights."""
    k: int
    reason: str = ""
    """Why there is no figure ("" when there is)."""

    @property
    def known(self) -> bool:
        return not self.reason

    def short(self) -> str:
        """For a table cell: ``12.3 / 6.1 %`` (own night / within k nights)."""
        if not self.known:
            return "n/a"
        return f"{_pct(self.own_night_pct)} / {_pct(self.within_pct)}"

    def describe(self) -> str:
        if not self.known:
            return f"smallest visible step: not known ({self.reason})"
        return (f"smallest step red on its own night {_pct(self.own_night_pct)}, within "
                f"{self.k} nights {_pct(self.within_pct)} (night-to-night CV "
                f"{self.cv_pct:.2g} % over {self.nights} nights; smaller steps are not "
                f"seen)")

    def to_dict(self) -> dict[str, object]:
        return {"cv_pct": self.cv_pct, "nights": self.nights,
                "own_night_pct": self.own_night_pct, "within_pct": self.within_pct,
                "k": self.k, "reason": self.reason}


def _pct(x: float | None) -> str:
    return f">{MAX_STEP_PCT:g} %" if x is None else f"{x:.1f} %"


def _stepped(last: Sequence[float], level: float) -> list[float]:
    m = statistics.fmean(last)
    return [v - m + level for v in last]


def red_within(values: list[list[float]], nights: Sequence[list[float]], direction: int,
               settings: TrendSettings, before: list[Any] | None = None) -> bool:
    """True when one of ``nights``, appended in turn to ``values``, is red (the
    detector's rule, :func:`new_regression`); ``before``: ``values`` grouped already."""
    series = list(values)
    if before is None:
        before = group(series, direction, settings)
    for night in nights:
        series.append(night)
        now = group(series, direction, settings)
        if new_regression(now, before, len(series), settings.confirm) is not None:
            return True
        before = now
    return False


def night_offsets(k: int) -> list[float]:
    """Where ``k`` stepped nights land, in standard deviations of a night, better side
    positive: their mean :data:`Z_80` / sqrt(k) to the better side of the stepped level
    (so that the mean of k real nights lands worse with 80 % probability), spread as
    the k quantiles of a normal night, the least visible first."""
    nd = statistics.NormalDist()
    shift = Z_80 / math.sqrt(k)
    spread = [nd.inv_cdf((j + 0.5) / k) for j in range(k)] if k > 1 else [0.0]
    return [shift + q for q in sorted(spread, reverse=True)]


def smallest_step(values: list[list[float]], level: float, sd: float, direction: int,
                  k: int, settings: TrendSettings, upper_pct: float = MAX_STEP_PCT,
                  before: list[Any] | None = None) -> float | None:
    """The smallest step (%) for which a night at ``level`` moved by it (worse) and
    :data:`Z_80` x ``sd`` back turns red within ``k`` nights; None if not even at
    :data:`MAX_STEP_PCT` (``upper_pct``: a step likely red, tried first as the
    bisection's upper end)."""
    d = 1 if direction >= 0 else -1
    if before is None:
        before = group(values, direction, settings)

    offsets = night_offsets(k)

    def red(step_pct: float) -> bool:
        centre = level * (1.0 - d * step_pct / 100.0)
        nights = [_stepped(values[-1], centre + d * sd * z) for z in offsets]
        return red_within(values, nights, direction, settings, before)

    if upper_pct < MAX_STEP_PCT and not red(upper_pct):
        upper_pct = MAX_STEP_PCT
    if upper_pct >= MAX_STEP_PCT and not red(MAX_STEP_PCT):
        return None
    lo, hi = 0.0, upper_pct
    while hi - lo > RESOLUTION_PCT:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if red(mid) else (mid, hi)
    return hi   # a step found red (rounding it could leave the red side)


def visibility(t: TestTrend, k: int | None = None) -> StepVisibility:
    """What ``t``'s trend can see at the noise of its current group (computed once per
    trend and ``k``)."""
    k = t.settings.confirm + 1 if k is None else k
    cache = t.__dict__.setdefault("_visible_steps", {})
    if k not in cache:
        cache[k] = _visibility(t, k)
    return cache[k]


def _visibility(t: TestTrend, k: int) -> StepVisibility:
    cur = t.current
    pts = t.points
    if cur is None or t.key.direction == 0:
        return StepVisibility(math.nan, 0, None, None, k, "no figure" if cur is None
                              else "a figure without a better direction")
    means = [statistics.fmean(p.values) for p in pts[cur.first:cur.last + 1]]
    if len(means) < MIN_NIGHTS:
        return StepVisibility(math.nan, len(means), None, None, k,
                              f"not enough evidence: {len(means)} nights in the current "
                              f"group, fewer than {MIN_NIGHTS}")
    mean, sd = statistics.fmean(means), statistics.stdev(means)
    if not sd > 0 or not mean:
        return StepVisibility(math.nan, len(means), None, None, k,
                              "not enough evidence: identical nights, no noise seen")
    values = [list(p.values) for p in pts[-HISTORY:]]
    before = group(values, t.key.direction, t.settings)
    own = smallest_step(values, mean, sd, t.key.direction, 1, t.settings, before=before)
    # a step red on its own night is usually red within k nights: own is tried first as
    # the second search's upper end
    within = smallest_step(values, mean, sd, t.key.direction, k, t.settings,
                           MAX_STEP_PCT if own is None else own, before)
    return StepVisibility(100.0 * sd / abs(mean), len(means), own, within, k)


__all__ = ["MAX_STEP_PCT", "StepVisibility", "Z_80", "red_within", "smallest_step",
           "visibility"]
