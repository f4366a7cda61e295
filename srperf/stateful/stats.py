"""Mean, coefficient of variation and the t-distribution interval over repetitions."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from srperf.results.stats import t_quantile


@dataclass(frozen=True)
class Spread:
    """A metric over the repetitions of one configuration (in the metric's unit)."""

    n: int
    """Repetitions with a value."""
    mean: float
    stdev: float
    """Sample standard deviation (n - 1); 0 for one value."""
    cv_pct: float | None
    """stdev / mean, percent (None when the mean is 0)."""
    low: float | None
    """Lower end of the ``confidence`` interval of the mean (Student t; None for n < 2)."""
    high: float | None
    confidence: float


def spread(values: Sequence[float], confidence: float = 0.95) -> Spread | None:
    """The spread of ``values`` (None when there is none)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return None
    n, mean = len(vals), statistics.fmean(vals)
    sd = statistics.stdev(vals) if n > 1 else 0.0
    cv = 100.0 * sd / mean if mean else None
    if n < 2:
        return Spread(n, mean, sd, cv, None, None, confidence)
    half = t_quantile((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
    return Spread(n, mean, sd, cv, mean - half, mean + half, confidence)


__all__ = ["Spread", "spread"]
