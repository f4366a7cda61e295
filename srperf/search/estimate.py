"""A point estimate of the rate where a loss threshold is crossed, from all trials.

A bound-based search reports the highest load its decision rule accepted; on a
noisy SUT that bound moves with every unlucky trial near the answer.  This
module uses every usable trial of a search at once instead (the idea of CSIT's
PLRsearch, with a much smaller model).  Rates in pps.

Model
    A trial at rate r is *bad* for threshold t when it lost more than t % of
    its packets (:func:`srperf.search.base.exceeds`).  The probability of a
    bad trial is logistic in the log of the rate, written around the crossing
    rate c where it equals the exceed ratio e::

        P(bad | r) = 1 / (1 + exp(-(logit(e) + b * ln(r / c))))

    fitted by maximum likelihood, each trial weighted by its duration relative
    to the longest one (a 0.5 s trial is half the evidence of a 1 s one), with
    a weak Gaussian prior on the slope b (standard deviation
    :data:`PRIOR_SD_SLOPE`) so that a perfectly separated set of trials still
    has a finite fit.  With e = 0.5, c is the rate where half of the trial time
    loses more than t: the quantity the MLR decision rule brackets (see
    :mod:`srperf.search.mlr`), estimated from all loads rather than from the two
    that happen to be the bounds.

Interval
    A profile-likelihood 95 % interval: every c (on a log-spaced grid across
    the rates tried, refined around the estimate and both ends) whose best
    fit, over b, has a log-likelihood within ``chi2(1, 0.95) / 2 = 1.92`` of the
    best fit overall.  Where the trials are perfectly separated the interval is
    the gap between the highest good and the lowest bad rate, as it should
    be.  An end of the interval that reaches the lowest or highest rate tried
    is open (None): the trials do not bound the answer on that side.  The
    interval describes the estimate given these trials, not the drift of the
    SUT from one search to the next; repeated searches measure that.

No estimate (None) when the trials do not straddle the answer: fewer than
:data:`MIN_TRIALS` usable trials, no bad or no good trial, a best fit whose
slope does not increase with rate, or a crossing outside the rates tried.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from srperf.drivers.base import TrialResult
from srperf.search.base import exceeds

if TYPE_CHECKING:
    import numpy as np

MIN_TRIALS = 4
"""Fewest usable trials an estimate is made from."""
PRIOR_SD_SLOPE = 2000.0
"""Prior standard deviation of b (log-odds per unit of ln rate): wide enough
for a transition only 0.1 % of the rate wide."""
COARSE_POINTS = 101
"""Candidate crossings the likelihood is first profiled on (log-spaced)."""
FINE_POINTS = 21
"""Candidates across two coarse steps around the best point and each interval end."""
LL_DROP_95 = 1.920729
"""Half the 95 % quantile of chi-squared with one degree of freedom."""
MAX_ITERATIONS = 100
"""Newton steps per candidate crossing."""


@dataclass(frozen=True)
class CrossingEstimate:
    """Where the share of bad trial time crosses the exceed ratio (rates in pps)."""

    rate_pps: float
    """The maximum-likelihood crossing rate."""
    ci_low_pps: float | None
    """Lower end of the 95 % interval (None: not bounded by the trials below)."""
    ci_high_pps: float | None
    """Upper end of the 95 % interval (None: not bounded by the trials above)."""
    n_trials: int
    """Usable trials the fit used."""
    slope: float
    """Fitted b at the estimate: log-odds of a bad trial per unit of ln(rate)."""


def _profile(x: np.ndarray, y: np.ndarray, w: np.ndarray, centres: np.ndarray,
             target_logit: float) -> tuple[np.ndarray, np.ndarray]:
    """Best penalised log-likelihood and slope for each candidate crossing.

    Batched one-dimensional Newton's method on b for z = logit(e) + b (x - c):
    the log-likelihood is concave in b, so it converges from b = 0.
    """
    import numpy as np   # here, not at import: a command that searches nothing does without
    prior = 1.0 / PRIOR_SD_SLOPE ** 2
    d = x[None, :] - centres[:, None]          # (candidates, trials)
    b = np.zeros(centres.shape[0])
    for _ in range(MAX_ITERATIONS):
        z = np.clip(target_logit + b[:, None] * d, -35.0, 35.0)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = (w * (y - p) * d).sum(axis=1) - prior * b
        hess = (w * p * (1.0 - p) * d * d).sum(axis=1) + prior
        step = grad / hess
        b = b + step
        if np.all(np.abs(step) <= 1e-6 * (1.0 + np.abs(b))):
            break
    z = np.clip(target_logit + b[:, None] * d, -35.0, 35.0)
    # log p = -log(1 + e^-z), log(1 - p) = -log(1 + e^z)
    ll = -(w * (y * np.logaddexp(0.0, -z) + (1.0 - y) * np.logaddexp(0.0, z))).sum(axis=1)
    return ll - 0.5 * prior * b * b, b


def crossing_estimate(trials: Sequence[TrialResult], threshold_pct: float,
                      exceed_ratio: float = 0.5) -> CrossingEstimate | None:
    """Estimate the rate (pps) where P(loss > ``threshold_pct`` %) = ``exceed_ratio``.

    Uses every usable trial given (callers leave out warm-up trials).
    """
    if not 0.0 < exceed_ratio < 1.0:
        raise ValueError(f"exceed_ratio {exceed_ratio!r} is outside (0, 1)")
    usable = [t for t in trials if t.usable and t.duration_s > 0 and t.rate_pps > 0]
    if len(usable) < MIN_TRIALS:
        return None
    import numpy as np

    x = np.log(np.array([t.rate_pps for t in usable]))
    y = np.array([1.0 if exceeds(t, threshold_pct) else 0.0 for t in usable])
    if y.min() == y.max():
        return None
    # A trial stopped early is certain evidence of a bad whole trial: its weight
    # is the duration it was asked for.
    durations = np.array([t.planned_duration_s for t in usable])
    w = durations / durations.max()
    lo_x, hi_x = float(x.min()), float(x.max())
    if hi_x <= lo_x:
        return None
    target = math.log(exceed_ratio / (1.0 - exceed_ratio))
    coarse = np.linspace(lo_x, hi_x, COARSE_POINTS)
    ll, slopes = _profile(x, y, w, coarse, target)
    best = int(np.argmax(ll))
    inside = np.nonzero(ll >= ll[best] - LL_DROP_95)[0]
    # refine around the best point and both ends of the interval
    step = coarse[1] - coarse[0]
    extra = np.concatenate([np.linspace(coarse[i] - step, coarse[i] + step, FINE_POINTS)
                            for i in {best, int(inside[0]), int(inside[-1])}])
    extra = np.clip(extra, lo_x, hi_x)
    ll_extra, slopes_extra = _profile(x, y, w, extra, target)
    fine = np.concatenate([coarse, extra])
    order = np.argsort(fine, kind="stable")
    fine = fine[order]
    ll = np.concatenate([ll, ll_extra])[order]
    slopes = np.concatenate([slopes, slopes_extra])[order]
    best = int(np.argmax(ll))
    if slopes[best] <= 0 or best in (0, len(fine) - 1):
        return None
    inside = np.nonzero(ll >= ll[best] - LL_DROP_95)[0]
    first, last = int(inside[0]), int(inside[-1])
    # the profile is unimodal in practice; a hole would only widen the interval
    low = None if first == 0 else math.exp(float(fine[first]))
    high = None if last == len(fine) - 1 else math.exp(float(fine[last]))
    return CrossingEstimate(rate_pps=math.exp(float(fine[best])), ci_low_pps=low,
                            ci_high_pps=high, n_trials=len(usable), slope=float(slopes[best]))


__all__ = ["CrossingEstimate", "crossing_estimate", "MIN_TRIALS"]
