"""Intervals for a quantity that is never negative (goodput, requests/s, transfer rate).

A Student t interval ``mean ± t * s / sqrt(n)`` ignores that goodput cannot go below
zero: with two repetitions (t = 12.7) it reached "-10535.6-20370.9 Mb/s".  The one rule
used by the run's summary, the report (and so nightly) and compare for stateful metrics:

- below :data:`MIN_N` values there is no interval: "n too small";
- with every value above zero, the interval of the mean of a log-normal quantity (Cox's
  method, Olsson 2005): ``exp(m + s²/2 ± t(n-1) * sqrt(s²/n + s⁴/(2(n-1))))`` with m
  and s the mean and sample deviation of the logarithms.  It is above zero by
  construction, and close to the t interval when the spread is small;
- with a zero among the values (no log), a seeded percentile bootstrap of the mean,
  which stays within [min, max];
- a change between two runs (:func:`log_ratio`): Welch's interval on the logarithms,
  i.e. for the ratio of (geometric) means, so a change is never below -100 %.

Units: those of the values; ``*_pct`` are percent.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from srperf.results.stats import Difference, t_quantile

MIN_N = 3
"""Fewest values with which an interval is given (two give t = 12.7: no information)."""
TOO_SMALL = "n too small"
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class PositiveInterval:
    """The interval of the mean of positive values (NaN bounds with ``note``)."""

    n: int
    mean: float
    low: float
    high: float
    method: str
    """``log-normal`` (Cox), ``bootstrap``, or ``""`` when there is none."""
    note: str = ""
    """Why there is no interval (``n too small (< 3)``), else empty."""

    @property
    def known(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def text(self, fmt: str = "{:.1f}") -> str:
        """``low-high``, or the note."""
        if not self.known:
            return self.note or "-"
        return f"{fmt.format(self.low)}-{fmt.format(self.high)}"


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def positive_interval(values: Sequence[float | None],
                      confidence: float = 0.95) -> PositiveInterval:
    """The ``confidence`` interval of the mean of ``values`` (each >= 0): see the module."""
    xs = _clean(values)
    n = len(xs)
    mean = math.fsum(xs) / n if n else math.nan
    if any(x < 0 for x in xs):
        raise ValueError(f"a negative value among {xs}: not a positive quantity")
    if n < MIN_N:
        return PositiveInterval(n, mean, math.nan, math.nan, "",
                                f"{TOO_SMALL} (< {MIN_N})")
    if min(xs) > 0:
        logs = [math.log(x) for x in xs]
        m = math.fsum(logs) / n
        var = math.fsum((y - m) ** 2 for y in logs) / (n - 1)
        half = t_quantile(0.5 + confidence / 2, n - 1) * math.sqrt(
            var / n + var * var / (2 * (n - 1)))
        centre = m + var / 2
        return PositiveInterval(n, mean, math.exp(centre - half), math.exp(centre + half),
                                "log-normal")
    rng = random.Random(0)
    means = sorted(math.fsum(rng.choices(xs, k=n)) / n for _ in range(BOOTSTRAP_RESAMPLES))
    alpha = (1.0 - confidence) / 2
    return PositiveInterval(n, mean, means[int(math.floor(alpha * (BOOTSTRAP_RESAMPLES - 1)))],
                            means[int(math.ceil((1 - alpha) * (BOOTSTRAP_RESAMPLES - 1)))],
                            "bootstrap")


def log_ratio(baseline: Sequence[float], current: Sequence[float],
              confidence: float = 0.95) -> Difference | None:
    """Change of positive values from ``baseline`` to ``current``: the ratio of their
    geometric means, with Welch's interval on the logarithms (``*_pct`` = 100 * (ratio
    - 1), never below -100; ``delta``/``low``/``high`` that times the baseline mean).
    None when either side has fewer than :data:`MIN_N` values or a value <= 0."""
    b, c = _clean(baseline), _clean(current)
    if len(b) < MIN_N or len(c) < MIN_N or min(b + c) <= 0:
        return None
    lb, lc = [math.log(x) for x in b], [math.log(x) for x in c]
    mb, mc = math.fsum(lb) / len(lb), math.fsum(lc) / len(lc)
    vb = math.fsum((y - mb) ** 2 for y in lb) / (len(lb) - 1) / len(lb)
    vc = math.fsum((y - mc) ** 2 for y in lc) / (len(lc) - 1) / len(lc)
    d = mc - mb
    se = math.sqrt(vb + vc)
    if se == 0:
        lo = hi = d
    else:
        df = (vb + vc) ** 2 / (vb ** 2 / (len(lb) - 1) + vc ** 2 / (len(lc) - 1))
        half = t_quantile(0.5 + confidence / 2, df) * se
        lo, hi = d - half, d + half
    pct = [100.0 * (math.exp(x) - 1.0) for x in (d, lo, hi)]
    base = math.fsum(b) / len(b)
    return Difference(*(p * base / 100 for p in pct), *pct, "log-welch")


__all__ = ["PositiveInterval", "positive_interval", "log_ratio", "MIN_N", "TOO_SMALL"]
