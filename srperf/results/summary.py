"""Summaries over repetitions: mean, CV, CI95, range (pandas)."""

from __future__ import annotations

import math

import pandas as pd

from srperf.imix import size_label
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
        for (beh, size, thr), grp in searches.groupby(["behavior", "packet_size",
                                                       "threshold_pct"], sort=False):
            ok = grp[grp["status"].isin(["ok", "at_max"])]
            values = ok["lower_pps"].dropna() / 1000.0
            n = len(values)
            mean = values.mean() if n else math.nan
            std = values.std(ddof=1) if n > 1 else math.nan
            width = ((ok["upper_pps"] - ok["lower_pps"]) / 1000.0).mean() if n else math.nan
            statuses = ", ".join(f"{s} x{c}" for s, c in grp["status"].value_counts().items())
            notes = [x for x in grp.get("note", pd.Series(dtype=str)).fillna("") if x]
            passing = grp["lower_pps"].dropna()
            estimates = (grp["estimate_pps"].dropna() / 1000.0 if "estimate_pps" in grp
                         else pd.Series(dtype=float))
            rows.append({
                "behavior": beh, "packet_size": size, "threshold_pct": thr, "n": n,
                "mean_kpps": mean, "std_kpps": std,
                "cv_pct": 100.0 * std / mean if n > 1 and mean else math.nan,
                "ci95_kpps": t95(n) * std / math.sqrt(n) if n > 1 else math.nan,
                "min_kpps": values.min() if n else math.nan,
                "median_kpps": values.median() if n else math.nan,
                "max_kpps": values.max() if n else math.nan,
                "mean_width_kpps": width,
                "median_estimate_kpps": (estimates.median() if len(estimates) else math.nan),
                "status": statuses,
                "reason": "" if n else (notes[0] if notes else "") + (
                    f" (highest passing rate seen: {passing.max() / 1000:.1f} kpps)"
                    if len(passing) else ""),
            })
    if outcomes is not None and not outcomes.empty:
        measured = {(r["behavior"], r["packet_size"]) for r in rows}
        for _, o in outcomes.drop_duplicates(["behavior", "packet_size", "status"]).iterrows():
            if o["status"] == "measured" or (o["behavior"], o["packet_size"]) in measured:
                continue
            rows.append({"behavior": o["behavior"], "packet_size": o["packet_size"],
                         "threshold_pct": math.nan, "n": 0, "status": o["status"],
                         "reason": o["reason"]})
    return pd.DataFrame(rows)


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
