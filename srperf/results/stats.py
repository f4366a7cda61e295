"""Statistics of repeated measurements, without scipy.

* :func:`describe`: mean, sample standard deviation, CV = stdev / mean (in %),
  and the half-width of the 95 % confidence interval of the mean with Student's
  t for n - 1 degrees of freedom (the SRPerf paper's Tables II-V).
* :func:`welch_diff`: the difference of two means with its Welch interval, optionally
  widened by each value's own uncertainty (a PDR's search bracket).
* :func:`evidence_problem`: why two samples cannot carry a verdict (fewer than
  :data:`MIN_EVIDENCE_N` values a side, or zero variance), else None.
* :func:`bootstrap_ratio`: a percentile bootstrap interval of the ratio of two means.

Values are in whatever unit they come in (the reports use kpps); percentages
are called ``*_pct``.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import Sequence


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t with ``df`` (> 0, may be fractional) degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Inverse of :func:`t_cdf` (bisection to 1e-10, cached), e.g. ``t_quantile(0.975, 2)`` = 4.303."""
    if not 0.0 < p < 1.0 or df <= 0:
        return math.nan
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-10 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def t95(n: int) -> float:
    """Two-sided 95 % Student t quantile for the mean of ``n`` samples (NaN below 2)."""
    return t_quantile(0.975, n - 1) if n >= 2 else math.nan


@dataclass(frozen=True)
class Description:
    """Statistics of n repetitions, in the unit of the values.

    ``cv_pct`` = 100 * sample stdev / mean; ``ci95`` = t(0.975, n-1) * stdev / sqrt(n)
    (half-width); ``ci95_pct`` = 100 * ci95 / mean, as the SRPerf paper prints it.
    Statistics that need two values are NaN for n = 1.
    """

    n: int
    mean: float
    std: float
    cv_pct: float
    ci95: float
    ci95_pct: float
    minimum: float
    maximum: float


def describe(values: Sequence[float]) -> Description:
    """Mean, sample stdev, CV and CI95 of ``values`` (NaNs dropped)."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Description(0, *(math.nan,) * 7)
    mean = math.fsum(xs) / n
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else math.nan
    ci = t95(n) * std / math.sqrt(n) if n > 1 else math.nan
    return Description(n, mean, std,
                       100.0 * std / mean if n > 1 and mean else math.nan,
                       ci, 100.0 * ci / mean if n > 1 and mean else math.nan,
                       min(xs), max(xs))


@dataclass(frozen=True)
class Difference:
    """A change from baseline to current: ``current - baseline`` with its 95 % CI.

    ``delta`` and the bounds are in the unit of the values; ``*_pct`` are relative
    to the baseline mean.  ``method`` says how the interval was made.
    """

    delta: float
    low: float
    high: float
    delta_pct: float
    low_pct: float
    high_pct: float
    method: str


MIN_EVIDENCE_N = 3
"""Fewer values than this on a side of a comparison: "not enough evidence", never a verdict."""
NOT_ENOUGH_EVIDENCE = "not_enough_evidence"
"""The status of a comparison whose evidence cannot carry a regression or an improvement."""


def evidence_problem(baseline: Sequence[float], current: Sequence[float]) -> str | None:
    """Why ``baseline`` against ``current`` is not enough evidence for a verdict, or None.

    Too few repetitions (< :data:`MIN_EVIDENCE_N` on a side) or a side with zero sample
    variance (identical values: the spread was not seen, e.g. two searches ending on the
    same grid point) -- an interval from them is certainty built from a search grid.
    """
    b, c = describe(baseline), describe(current)
    if min(b.n, c.n) < MIN_EVIDENCE_N:
        return (f"not enough evidence: fewer than {MIN_EVIDENCE_N} repetitions a side "
                f"(baseline {b.n}, current {c.n})")
    zero = [name for name, d in (("baseline", b), ("current", c)) if d.std == 0]
    if zero:
        return (f"not enough evidence: zero variance in the {' and '.join(zero)} "
                f"(identical values; the spread was not observed)")
    return None


def _own_variance(halfwidths: Sequence[float] | None) -> float:
    """Mean variance of each value's own uncertainty: a value known only to lie in
    [x - h, x + h] (uniformly) has variance h^2 / 3."""
    hs = [float(h) for h in (halfwidths or ()) if h is not None and not math.isnan(float(h))]
    return math.fsum(h * h for h in hs) / (3.0 * len(hs)) if hs else 0.0


def welch_diff(baseline: Sequence[float], current: Sequence[float],
               confidence: float = 0.95, baseline_halfwidths: Sequence[float] | None = None,
               current_halfwidths: Sequence[float] | None = None) -> Difference:
    """Welch's interval for mean(current) - mean(baseline) (unequal variances).

    ``*_halfwidths`` give each value's own uncertainty, e.g. half the width of the search
    bracket a PDR came from ((upper - lower) / 2, same unit as the values).  Each is
    carried into its side as the variance of a value uniform in its bracket, h^2 / 3,
    added to the sample variance: a side's variance is s^2 + mean(h_i^2) / 3, so that
    identical PDRs from one grid point still give an interval as wide as the grid.
    With a single repetition on either side the interval is unknown (NaN bounds).
    """
    b, c = describe(baseline), describe(current)
    delta = c.mean - b.mean
    if b.n < 2 or c.n < 2:
        low = high = math.nan
    else:
        vb = (b.std ** 2 + _own_variance(baseline_halfwidths)) / b.n
        vc = (c.std ** 2 + _own_variance(current_halfwidths)) / c.n
        se = math.sqrt(vb + vc)
        if se == 0:
            low = high = delta
        else:
            df = (vb + vc) ** 2 / ((vb ** 2 / (b.n - 1)) + (vc ** 2 / (c.n - 1)))
            half = t_quantile(0.5 + confidence / 2, df) * se
            low, high = delta - half, delta + half
    scale = 100.0 / b.mean if b.mean else math.nan
    return Difference(delta, low, high, delta * scale, low * scale, high * scale, "welch")


def bootstrap_ratio(baseline: Sequence[float], current: Sequence[float],
                    resamples: int = 2000, confidence: float = 0.95,
                    seed: int = 0) -> Difference:
    """Percentile bootstrap over repetitions of mean(current) / mean(baseline) - 1.

    Each side is resampled with replacement; ``*_pct`` is the relative change
    and ``delta``/``low``/``high`` the same interval times the baseline mean.
    Seeded, so a report shows the same interval every time it is made.
    """
    b = [float(x) for x in baseline if not math.isnan(float(x))]
    c = [float(x) for x in current if not math.isnan(float(x))]
    mb, mc = sum(b) / len(b), sum(c) / len(c)
    point = 100.0 * (mc / mb - 1.0)
    if len(b) < 2 or len(c) < 2:
        low = high = math.nan
    else:
        rng = random.Random(seed)
        ratios = []
        for _ in range(resamples):
            sb = sum(rng.choices(b, k=len(b))) / len(b)
            sc = sum(rng.choices(c, k=len(c))) / len(c)
            ratios.append(100.0 * (sc / sb - 1.0))
        ratios.sort()
        alpha = (1.0 - confidence) / 2
        low = ratios[int(math.floor(alpha * (resamples - 1)))]
        high = ratios[int(math.ceil((1 - alpha) * (resamples - 1)))]
    return Difference(mc - mb, low * mb / 100, high * mb / 100, point, low, high, "bootstrap")
