"""Names of search goals and nightly test cases, spelled one way everywhere.

CI servers keep a test's history by its name, so a JUnit case must be named the
same way every night, whatever produced it (a comparison, a first run, a run
that measured nothing): ``end 64B PDR@0.5%``, ``end 64B NDR``.  The report
tables, the CLI and the JUnit file all use :func:`goal_name`.
"""

from __future__ import annotations

import math

FIGURE_STATUSES = ("ok", "at_max", "mrr")
"""Search goal statuses that carry a figure (a rate the SUT was measured at)."""


def goal_name(threshold_pct: float) -> str:
    """``NDR`` for a 0 % threshold, else ``PDR@<threshold>%`` (no space: ``PDR@0.5%``)."""
    return "NDR" if threshold_pct == 0 else f"PDR@{threshold_pct:g}%"


def case_name(behavior: str, packet_size: int, threshold_pct: float | None = None) -> str:
    """A JUnit case: ``end 64B PDR@0.5%``; without a threshold (a behavior with no
    search: unsupported, failed verification) ``end 64B``."""
    if threshold_pct is None or (isinstance(threshold_pct, float)
                                 and math.isnan(threshold_pct)):
        return f"{behavior} {int(packet_size)}B"
    return f"{behavior} {int(packet_size)}B {goal_name(threshold_pct)}"


def interval_text(low: float | None, high: float | None, digits: int = 1) -> str:
    """An interval, one way in the CLI and the HTML report: ``700.1–777.6``; open
    above ``≥ 777.6``; open below ``≤ 777.6``; unknown ``-``.  NaN counts as open."""
    def known(v: float | None) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v))

    if known(low) and known(high):
        return f"{low:.{digits}f}–{high:.{digits}f}"
    if known(low):
        return f"≥ {low:.{digits}f}"
    if known(high):
        return f"≤ {high:.{digits}f}"
    return "-"


__all__ = ["FIGURE_STATUSES", "case_name", "goal_name", "interval_text"]
