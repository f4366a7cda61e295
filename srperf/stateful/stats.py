"""Mean, coefficient of variation and the interval of the mean over repetitions (the
rule for positive quantities of :mod:`srperf.results.positive`)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from srperf.results.positive import positive_interval


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
    """Lower end of the ``confidence`` interval of the mean (never below zero; None
    below :data:`srperf.results.positive.MIN_N` values: ``note`` says so)."""
    high: float | None
    confidence: float
    note: str = ""
    """Why there is no interval ("n too small (< 3)"), else empty."""


def spread(values: Sequence[float], confidence: float = 0.95) -> Spread | None:
    """The spread of ``values`` (None when there is none)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return None
    n, mean = len(vals), statistics.fmean(vals)
    sd = statistics.stdev(vals) if n > 1 else 0.0
    cv = 100.0 * sd / mean if mean else None
    ci = positive_interval(vals, confidence)
    if not ci.known:
        return Spread(n, mean, sd, cv, None, None, confidence, ci.note)
    return Spread(n, mean, sd, cv, ci.low, ci.high, confidence)


__all__ = ["Spread", "spread"]
