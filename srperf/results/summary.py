"""Summaries over repetitions: mean, CV, CI95, range (pandas)."""

from __future__ import annotations

import math
import statistics
from collections import Counter

import pandas as pd

from srperf.traffic.imix import size_label
from srperf.results.stats import t95  # noqa: F401  (Student t for any n; was a table)


def summarize(searches: pd.DataFrame, outcomes: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (behavior, packet size, threshold): statistics of the lower bounds.

    Columns (rates in kpps): n, mean_kpps, std_kpps, cv_pct, ci95_kpps (half-width,
    Student t), min_kpps, median_kpps, max_kpps, mean_width_kpps (search interval),
    median_estimate_kpps (median of the searches' fitted crossing estimates, see
    :mod:`srperf.search.estimate`; NaN where no search had one), statuses (e.g.
    ``ok x5``).  Behaviors that were not measured appear with their
    outcome status and reason and no numbers.
    """
    rows = []
    if not searches.empty:
        # Plain lists per group, not a pandas slice per group: a report of 10 runs x 20
        # behaviors x 10 repetitions summarizes 200 groups, and pandas' per-call cost
        # made this a quarter of the report's build time.
        groups: dict[tuple, list[dict]] = {}
        for rec in searches.to_dict("records"):
            key = (rec["behavior"], rec["packet_size"], rec["threshold_pct"])
            groups.setdefault(key, []).append(rec)
        for (beh, size, thr), grp in groups.items():
            rows.append(_group_row(beh, size, thr, grp))
    if outcomes is not None and not outcomes.empty:
        measured = {(r["behavior"], r["packet_size"]) for r in rows}
        for _, o in outcomes.drop_duplicates(["behavior", "packet_size", "status"]).iterrows():
            if o["status"] == "measured" or (o["behavior"], o["packet_size"]) in measured:
                continue
            rows.append({"behavior": o["behavior"], "packet_size": o["packet_size"],
                         "threshold_pct": math.nan, "n": 0, "status": o["status"],
                         "reason": o["reason"]})
    return pd.DataFrame(rows)


def _finite(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _group_row(beh: object, size: object, thr: object, grp: list[dict]) -> dict:
    """:func:`summarize`'s row for the searches of one behavior, size and threshold."""
    ok = [g for g in grp if g["status"] in ("ok", "at_max")]
    values = [g["lower_pps"] / 1000.0 for g in ok if _finite(g["lower_pps"])]
    n = len(values)
    mean = statistics.fmean(values) if n else math.nan
    std = statistics.stdev(values) if n > 1 else math.nan
    widths = [(g["upper_pps"] - g["lower_pps"]) / 1000.0 for g in ok
              if _finite(g["upper_pps"]) and _finite(g["lower_pps"])]
    width = statistics.fmean(widths) if n and widths else math.nan
    counts = Counter(g["status"] for g in grp)
    statuses = ", ".join(f"{st} x{c}" for st, c in counts.most_common())
    notes = [g.get("note") for g in grp if isinstance(g.get("note"), str) and g.get("note")]
    passing = [g["lower_pps"] for g in grp if _finite(g["lower_pps"])]
    estimates = [g["estimate_pps"] / 1000.0 for g in grp if _finite(g.get("estimate_pps"))]
    return {
        "behavior": beh, "packet_size": size, "threshold_pct": thr, "n": n,
        "mean_kpps": mean, "std_kpps": std,
        "cv_pct": 100.0 * std / mean if n > 1 and mean else math.nan,
        "ci95_kpps": t95(n) * std / math.sqrt(n) if n > 1 else math.nan,
        "min_kpps": min(values) if n else math.nan,
        "median_kpps": statistics.median(values) if n else math.nan,
        "max_kpps": max(values) if n else math.nan,
        "mean_width_kpps": width,
        "median_estimate_kpps": statistics.median(estimates) if estimates else math.nan,
        "status": statuses,
        "reason": "" if n else (notes[0] if notes else "") + (
            f" (highest passing rate seen: {max(passing) / 1000:.1f} kpps)"
            if passing else ""),
    }


def format_table(summary: pd.DataFrame) -> str:
    """A plain-text table for the terminal."""
    if summary.empty:
        return "(no results)"
    lines = [f"{'behavior':<16} {'size':>4} {'loss%':>5} {'n':>3} {'mean kpps':>10} "
             f"{'CV %':>6} {'CI95':>8} {'min':>8} {'max':>8}  status"]
    for _, r in summary.iterrows():
        if r.get("n", 0) and not math.isnan(r.get("mean_kpps", math.nan)):
            def f(x: float, w: int = 8, p: int = 1) -> str:
                return f"{x:>{w}.{p}f}" if not (isinstance(x, float) and math.isnan(x)) \
                    else f"{'-':>{w}}"
            lines.append(f"{r['behavior']:<16} {size_label(r['packet_size']):>4} "
                         f"{r['threshold_pct']:>5g} {int(r['n']):>3} {f(r['mean_kpps'], 10)} "
                         f"{f(r['cv_pct'], 6)} {f(r['ci95_kpps'])} {f(r['min_kpps'])} "
                         f"{f(r['max_kpps'])}  {r['status']}")
        else:
            thr = r.get("threshold_pct", math.nan)
            thr_text = "" if isinstance(thr, float) and math.isnan(thr) else f"{thr:g}"
            lines.append(f"{r['behavior']:<16} {size_label(r['packet_size']):>4} "
                         f"{thr_text:>5} {0:>3} "
                         f"{'-':>10} {'-':>6} {'-':>8} {'-':>8} {'-':>8}  "
                         f"{r['status']}: {r['reason']}")
    return "\n".join(lines)
