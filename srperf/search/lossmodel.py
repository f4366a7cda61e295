"""Where a loss threshold is crossed, fitted to every trial's loss ratio (not just pass/fail).

Used by the ``lossfit`` search (:mod:`srperf.search.lossfit`).  Rates in pps,
durations in seconds, thresholds in percent, ``exceed_ratio`` a fraction.

What one trial says (threshold model)
    A SUT that forwards at most K pps loses ``1 - K / r`` of a load r above K
    and nothing below.  A trial at r that received R pps (``received /
    duration_s``) read K = R, so *its* crossing of threshold t, the load at
    which it would have lost exactly t, is::

        y = r * (1 - loss) / (1 - t)                      (the implied crossing)

    * a trial that lost more than t (bad) gives y exactly: an **exact** reading;
    * a trial that lost at most t (good) but at least :data:`EXACT_SHARE` of t
      also gives y exactly (it is above its capacity, just not by enough);
    * any other good trial says its crossing is **at least** y (y >= r).  It
      is not read as exact: a few packets lost to scheduling noise far below
      the capacity would otherwise look like a crossing just above r;
    * a trial that received nothing says only that its crossing is **below** r.

    The bounds hold for any SUT whose forwarding rate does not fall when the
    load grows (no receive livelock): then a good trial's crossing is >= y and
    a bad trial's is <= y; the threshold model makes the bad one exact.

Model of the readings
    Per trial crossings vary (capacity noise, drift): ln c is logistic with
    scale s around ln m.  The load where a trial exceeds t with probability
    e (the *crossing*, the quantity MLR's exceed-ratio rule brackets and
    :mod:`srperf.search.estimate` fits from pass/fail alone) is
    ``c = m * exp(s * logit(e))``.  In the slope form of
    :mod:`srperf.search.estimate`, with b = 1 / s::

        P(c_i <= x) = sigmoid(logit(e) + b * ln(x / c))

    Exact readings contribute the density, the others the tail probability
    (censored data).  Every trial is one reading whatever its duration: the
    spread between trials comes from the SUT's capacity moving over seconds,
    not from counting packets.  A weak Gaussian prior on b (standard deviation
    :data:`PRIOR_SD_SLOPE`) keeps the fit finite when all readings agree (a
    noiseless SUT).

Interval
    95 % profile likelihood on c, with the likelihood-ratio cut taken from
    Student's t with ``n_exact - 1`` degrees of freedom instead of the normal
    (``n * ln(1 + t^2 / (n - 1))``, exact for a normal sample): with a handful
    of readings the scale is itself uncertain and the plain chi-squared cut
    gives intervals that are too narrow.  An end beyond the lowest or highest
    reading is open (None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from srperf.drivers.base import TrialResult

if TYPE_CHECKING:
    import numpy as np

EXACT_SHARE = 0.25
"""A good trial that lost at least this share of the threshold reads exactly."""
EXACT, AT_LEAST, AT_MOST = 0, 1, 2
"""Kinds of reading: the trial's crossing is y, is >= y, is <= y."""
PRIOR_SD_SLOPE = 2000.0
"""Prior standard deviation of b = 1 / s (per unit of ln rate), as in
:mod:`srperf.search.estimate`: allows a spread of crossings of 0.05 %."""
MIN_READINGS = 1
"""Fewest usable trials a fit is made from (at least one of them exact)."""
COARSE_POINTS = 81
"""Candidate crossings the profile likelihood is first evaluated on."""
ZOOM_POINTS = 21
"""Candidates per zoom step around the best point and each interval end."""
ZOOM_STEPS = 4
"""Zoom steps (each narrows the spacing ten-fold)."""
GRID_MARGIN = 0.25
"""Candidates reach this share of the readings' span beyond the lowest and highest."""
MIN_MARGIN = 0.002
"""... and at least this far (ln rate), so agreeing readings still get a closed interval."""
NEWTON_STEPS = 60
"""Newton steps on b per candidate crossing."""
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086)
"""Student's t 97.5 % quantiles for 1..20 degrees of freedom."""


@dataclass(frozen=True)
class Reading:
    """What one usable trial says about its own crossing of one threshold."""

    implied_pps: float
    """y, pps (see the module docstring)."""
    kind: int
    """EXACT, AT_LEAST or AT_MOST."""
    weight: float
    """Weight of the reading in the likelihood (1: every trial counts the same)."""


@dataclass(frozen=True)
class LossFit:
    """The fitted crossing of one threshold and its 95 % interval (pps)."""

    crossing_pps: float
    """Load where a trial loses more than the threshold with probability e."""
    ci_low_pps: float | None
    """Lower end of the 95 % interval (None: open below)."""
    ci_high_pps: float | None
    """Upper end of the 95 % interval (None: open above)."""
    scale: float
    """Fitted s: spread of the trials' ln crossings (logistic scale; its
    standard deviation is s * pi / sqrt(3)), dimensionless."""
    n_readings: int
    """Usable trials fitted."""
    n_exact: int
    """Of them, exact readings."""

    def log_width(self) -> float:
        """ln(high / low) of the interval; inf when an end is open."""
        if self.ci_low_pps is None or self.ci_high_pps is None:
            return math.inf
        return math.log(self.ci_high_pps / self.ci_low_pps)


def implied_crossing(trial: TrialResult, threshold_pct: float) -> tuple[float, int]:
    """(y in pps, kind) of one usable trial for ``threshold_pct`` % (module docstring)."""
    t = threshold_pct / 100.0
    if trial.received <= 0:
        return trial.rate_pps, AT_MOST
    y = trial.rate_pps * (1.0 - trial.loss_ratio) / (1.0 - t)
    bad = trial.lost * 100.0 > trial.intended * threshold_pct
    near = t > 0 and trial.loss_ratio >= EXACT_SHARE * t
    return y, (EXACT if bad or near else AT_LEAST)


def readings(trials: Sequence[TrialResult], threshold_pct: float) -> list[Reading]:
    """The readings of the usable trials (warm-up trials must be left out by the caller)."""
    usable = [t for t in trials if t.usable and t.duration_s > 0 and t.rate_pps > 0]
    if not usable:
        return []
    out = []
    for t in usable:
        y, kind = implied_crossing(t, threshold_pct)
        out.append(Reading(y, kind, 1.0))
    return out


def lr_cut(n_exact: float) -> float:
    """Log-likelihood drop that bounds the 95 % interval with ``n_exact`` exact readings.

    ``n/2 * ln(1 + t^2 / (n - 1))`` with t Student's 97.5 % quantile on n - 1
    degrees of freedom (the likelihood-ratio form of the t interval); 1.92, the
    chi-squared value, as n grows.
    """
    n = max(2.0, n_exact)
    df = n - 1.0
    if df <= len(_T975):
        lo = int(math.floor(df))
        hi = min(lo + 1, len(_T975))
        frac = df - lo
        tq = _T975[lo - 1] * (1 - frac) + _T975[hi - 1] * frac
    else:  # Cornish-Fisher expansion around the normal quantile
        z = 1.959964
        tq = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    return 0.5 * n * math.log1p(tq * tq / df)


def _profile(x: np.ndarray, kind: np.ndarray, w: np.ndarray, centres: np.ndarray,
             target_logit: float) -> tuple[np.ndarray, np.ndarray]:
    """Best penalised log-likelihood over b > 0, and that b, for each candidate ln crossing.

    z = logit(e) + b (x - centre); the log-likelihood of every kind of reading
    is concave in b, so Newton's method (kept positive) converges.
    """
    import numpy as np   # here, not at import: a command that searches nothing does without
    prior = 1.0 / PRIOR_SD_SLOPE ** 2
    exact = (kind == EXACT)[None, :]
    at_least = (kind == AT_LEAST)[None, :]
    d = x[None, :] - centres[:, None]
    n_exact = float((w * (kind == EXACT)).sum())
    spread = float(np.std(x)) if x.size > 1 else 0.0
    b = np.full(centres.shape[0], 1.0 / max(spread, 1e-3))
    for _ in range(NEWTON_STEPS):
        z = np.clip(target_logit + b[:, None] * d, -35.0, 35.0)
        p = 1.0 / (1.0 + np.exp(-z))
        # d/db: exact: 1/b + (1 - 2p) d; at least (log(1-p)): -p d; at most (log p): (1-p) d
        g_each = np.where(exact, (1.0 - 2.0 * p) * d, np.where(at_least, -p * d, (1.0 - p) * d))
        h_each = np.where(exact, 2.0, 1.0) * p * (1.0 - p) * d * d
        grad = (w * g_each).sum(axis=1) + n_exact / b - prior * b
        hess = -(w * h_each).sum(axis=1) - n_exact / (b * b) - prior
        step = -grad / hess
        new = b + step
        new = np.where(new <= 0, 0.5 * b, new)
        done = np.all(np.abs(new - b) <= 1e-7 * (1.0 + b))
        b = new
        if done:
            break
    z = np.clip(target_logit + b[:, None] * d, -35.0, 35.0)
    log_p = -np.logaddexp(0.0, -z)
    log_q = -np.logaddexp(0.0, z)
    ll_each = np.where(exact, log_p + log_q, np.where(at_least, log_q, log_p))
    ll = (w * ll_each).sum(axis=1) + n_exact * np.log(b) - 0.5 * prior * b * b
    return ll, b


def fit_crossing(trials: Sequence[TrialResult], threshold_pct: float,
                 exceed_ratio: float = 0.5) -> LossFit | None:
    """Fit the crossing of ``threshold_pct`` % (pps) to the usable trials given.

    None when there is nothing to fit: fewer than :data:`MIN_READINGS` usable
    trials, or no bad trial with a reading (everything passed, or lost all).
    """
    if not 0.0 < exceed_ratio < 1.0:
        raise ValueError(f"exceed_ratio {exceed_ratio!r} is outside (0, 1)")
    rs = readings(trials, threshold_pct)
    n_exact = sum(1 for r in rs if r.kind == EXACT)
    if len(rs) < MIN_READINGS or n_exact == 0:
        return None
    import numpy as np

    x = np.log(np.array([r.implied_pps for r in rs]))
    kind = np.array([r.kind for r in rs])
    w = np.array([r.weight for r in rs])
    target = math.log(exceed_ratio / (1.0 - exceed_ratio))
    lo_x, hi_x = float(x.min()), float(x.max())
    margin = max(GRID_MARGIN * (hi_x - lo_x), MIN_MARGIN)
    lo_x, hi_x = lo_x - margin, hi_x + margin
    grid = np.linspace(lo_x, hi_x, COARSE_POINTS)
    ll, _ = _profile(x, kind, w, grid, target)
    cut = lr_cut(float((w * (kind == EXACT)).sum()))
    # zoom in on the best point
    best_x, best_ll = float(grid[int(np.argmax(ll))]), float(ll.max())
    half = grid[1] - grid[0]
    for _ in range(ZOOM_STEPS):
        pts = np.clip(np.linspace(best_x - half, best_x + half, ZOOM_POINTS), lo_x, hi_x)
        vals, _ = _profile(x, kind, w, pts, target)
        i = int(np.argmax(vals))
        if vals[i] > best_ll:
            best_x, best_ll = float(pts[i]), float(vals[i])
        half *= 2.0 / (ZOOM_POINTS - 1)
    # each end: the last grid point inside the interval and the first outside, then zoom
    inside = ll >= best_ll - cut
    brackets: list[tuple[float, float] | None] = []
    below = np.nonzero(~inside & (grid < best_x))[0]
    above = np.nonzero(~inside & (grid > best_x))[0]
    brackets.append(None if below.size == 0 else (float(grid[below[-1]]), best_x))
    brackets.append(None if above.size == 0 else (best_x, float(grid[above[0]])))
    for _ in range(ZOOM_STEPS):
        todo = [br for br in brackets if br is not None]
        if not todo:
            break
        pts = np.concatenate([np.linspace(a, b, ZOOM_POINTS) for a, b in todo])
        vals, _ = _profile(x, kind, w, pts, target)
        vals = vals.reshape(len(todo), ZOOM_POINTS)
        pts = pts.reshape(len(todo), ZOOM_POINTS)
        k = 0
        for j, br in enumerate(brackets):
            if br is None:
                continue
            ok = vals[k] >= best_ll - cut
            if j == 0:  # outside on the left, inside on the right
                first_in = int(np.argmax(ok))
                brackets[j] = (float(pts[k][max(first_in - 1, 0)]), float(pts[k][first_in]))
            else:
                last_in = ZOOM_POINTS - 1 - int(np.argmax(ok[::-1]))
                brackets[j] = (float(pts[k][last_in]),
                               float(pts[k][min(last_in + 1, ZOOM_POINTS - 1)]))
            k += 1
    low = None if brackets[0] is None else math.exp(brackets[0][1])
    high = None if brackets[1] is None else math.exp(brackets[1][0])
    b_best = float(_profile(x, kind, w, np.array([best_x]), target)[1][0])
    return LossFit(crossing_pps=math.exp(best_x), ci_low_pps=low, ci_high_pps=high,
                   scale=1.0 / b_best, n_readings=len(rs), n_exact=n_exact)


__all__ = ["AT_LEAST", "AT_MOST", "EXACT", "LossFit", "Reading", "fit_crossing",
           "implied_crossing", "lr_cut", "readings"]
