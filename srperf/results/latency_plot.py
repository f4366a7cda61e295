"""The HDR latency graph of a report, as CSIT draws it: latency (us; log-scaled here,
as a millisecond tail flattens the microseconds) against percentile on a log scale
(x = 1 / (1 - percentile), ticks 0 %, 90 %, 99 %, 99.9 % ...), one curve per load
(fraction of the PDR) of one behavior, and the generator's own latency over a plain
veth pair (the run's calibration, dashed) beside it.

It reads only what the store holds: each latency trial's HDR histogram
(``extra["latency"]["hdrh"]``, :func:`srperf.drivers.latency.percentile_curve`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from srperf.drivers.latency import percentile_curve
from srperf.results import frames
from srperf.results.plots import COLORS, png_data_uri, plt

CALIBRATION_PURPOSE = "latency_calibration"
MAX_NINES = 6
"""The x axis ends at 99.9999 % (six nines)."""


def _x(pct: float) -> float:
    return 1.0 / max(1.0 - pct / 100.0, 10.0 ** -MAX_NINES)


def _label(extra: dict[str, Any], rate_pps: float) -> str:
    frac = extra.get("pdr_fraction")
    return (f"{frac:.0%} PDR ({rate_pps / 1e3:.1f} kpps)" if frac is not None
            else f"{rate_pps / 1e3:.1f} kpps")


def percentile_png(curves: list[tuple[str, list[tuple[float, float]], bool]],
                   title: str) -> str:
    """PNG data URI: each curve (label, [(percentile %, latency us)], dashed)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    for i, (label, points, dashed) in enumerate(curves):
        pts = [(p, v) for p, v in points if p < 100.0 - 10.0 ** -MAX_NINES]
        if not pts:
            continue
        ax.plot([_x(p) for p, _ in pts], [v for _, v in pts], label=label,
                color=COLORS[i % len(COLORS)], linestyle="--" if dashed else "-",
                drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_yscale("log")   # a few milliseconds of tail would flatten microseconds
    ticks = [1.0] + [10.0 ** n for n in range(1, MAX_NINES + 1)]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["0%"] + [f"{100 - 10.0 ** (2 - n):.{max(n - 2, 0)}f}%"
                                 for n in range(1, MAX_NINES + 1)])
    ax.set_xlabel("percentile")
    ax.set_ylabel("one-way latency (us)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return png_data_uri(fig)


def graphs(trials: pd.DataFrame) -> list[dict[str, Any]]:
    """One graph per (run, behavior, packet size, repetition) with latency trials that
    carry a histogram: ``{"title", "png"}``."""
    if trials.empty or not trials["extra"].fillna("").str.contains('"hdrh"').any():
        return []
    rows = trials[trials["extra"].fillna("").str.contains('"hdrh"')].copy()
    rows["x"] = rows["extra"].map(frames.parse_json)
    calib: dict[str, list[tuple[str, list[tuple[float, float]], bool]]] = {}
    out: list[dict[str, Any]] = []
    is_cal = rows["x"].map(lambda e: e.get("purpose") == CALIBRATION_PURPOSE)
    for r in rows[is_cal].to_dict("records"):
        curve = percentile_curve(r["x"].get("latency") or {})
        if curve:
            calib.setdefault(r["run_id"], []).append(
                ("generator alone, " + _label(r["x"], r["rate_pps"]), curve, True))
    keys = ["run_id", "behavior", "packet_size", "repetition"]
    for key, grp in rows[~is_cal].groupby(keys, sort=True):
        curves = []
        for r in grp.sort_values("rate_pps").to_dict("records"):
            curve = percentile_curve(r["x"].get("latency") or {})
            if curve:
                curves.append((_label(r["x"], r["rate_pps"]), curve, False))
        if not curves:
            continue
        run_id, behavior, size, rep = key
        title = f"{behavior} {size} B rep {rep} (run {run_id})"
        out.append({"title": title,
                    "png": percentile_png(curves + calib.get(run_id, []), title)})
    return out


__all__ = ["graphs", "percentile_png"]
