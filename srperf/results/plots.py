"""The report's pictures.

* :func:`bars_png`: per behavior, one bar per run (mean PDR/NDR, kpps) with its
  CI95 as error bar; a behavior with no number shows its status as text
  (matplotlib, Agg, PNG as a data URI).
* :func:`search_panels`: for one search, the SRPerf paper's Figure 4 (received
  rate and delivery ratio against offered rate) and every trial on a rate-vs-loss
  plot with the threshold, the bounds, the crossing estimate and its interval
  (inline SVG, see :mod:`srperf.results.svgplot`).
"""

from __future__ import annotations

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from srperf.results.svgplot import Axis, SvgPlot  # noqa: E402

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
LOSS_FLOOR_PCT = 0.001
"""Loss plots are log-scaled; a trial with no loss is drawn at this floor (%)."""


def png_data_uri(fig: "plt.Figure") -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def bars_png(summary: pd.DataFrame, run_labels: dict[str, str], title: str) -> str:
    """Grouped bars: x behavior, one bar per run, height mean kpps, error CI95 kpps.

    ``summary`` is :func:`srperf.results.frames.summaries` for one packet size and
    threshold; rows without numbers are labelled with their status.
    """
    behaviors = list(dict.fromkeys(summary["behavior"]))
    runs = [r for r in run_labels if r in set(summary["run_id"])]
    n_runs = max(len(runs), 1)
    width = 0.8 / n_runs
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(behaviors) * max(1, n_runs / 3) + 2),
                                    3.6))
    top = summary["mean_kpps"].max() if "mean_kpps" in summary else math.nan
    top = top if isinstance(top, float) and math.isfinite(top) and top > 0 else 1.0
    for i, run in enumerate(runs):
        rows = summary[summary["run_id"] == run].set_index("behavior")
        xs, hs, es = [], [], []
        for j, beh in enumerate(behaviors):
            x = j - 0.4 + width * (i + 0.5)
            if beh not in rows.index:
                continue
            r = rows.loc[beh]
            r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
            mean = r.get("mean_kpps", math.nan)
            if r.get("n", 0) and isinstance(mean, float) and math.isfinite(mean):
                xs.append(x)
                hs.append(mean)
                ci = r.get("ci95_kpps", math.nan)
                es.append(ci if isinstance(ci, float) and math.isfinite(ci) else 0.0)
            else:
                ax.text(x, top * 0.02, str(r.get("status", "")).split(" x")[0], rotation=90,
                        ha="center", va="bottom", fontsize=7, color="#555")
        ax.bar(xs, hs, width * 0.95, yerr=es, capsize=2, color=COLORS[i % len(COLORS)],
               label=run_labels[run], error_kw={"elinewidth": 0.8})
    ax.set_xticks(range(len(behaviors)), behaviors, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("kpps (mean, CI95 bars)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if runs:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return png_data_uri(fig)


def search_panels(trials: pd.DataFrame, search: dict, threshold_pct: float) -> list[str]:
    """Two inline SVGs for one search: Figure 4 and rate vs loss with bounds."""
    usable = trials[(trials["generator_limited"] == 0)]
    limited = trials[(trials["generator_limited"] != 0)]
    offered = list(trials["offered_kpps"])
    xmax = max(offered + [1.0]) * 1.05
    xmin = 0.0
    rx_max = max(list(trials["received_kpps"].fillna(0)) + [1.0]) * 1.05
    fig4 = SvgPlot(Axis(xmin, xmax, label="offered rate, kpps"),
                   Axis(0, max(xmax, rx_max), label="received rate, kpps"),
                   title="received rate and delivery ratio",
                   y2=Axis(0, 105, label="delivery ratio, %"))
    fig4.line([0, xmax], [0, xmax], "#bbb", dash="3,3")
    tips = [f"{o:.1f} kpps: received {r:.1f} kpps, DR {100 * d:.3f} %" for o, r, d in
            zip(usable["offered_kpps"], usable["received_kpps"], usable["delivery_ratio"])]
    fig4.points(list(usable["offered_kpps"]), list(usable["received_kpps"]), COLORS[0],
                "received kpps", tips=tips)
    fig4.points(list(usable["offered_kpps"]), list(100 * usable["delivery_ratio"]), COLORS[1],
                "delivery ratio %", shape="triangle", right=True)
    if len(limited):
        fig4.points(list(limited["offered_kpps"]), list(limited["received_kpps"]), "#888",
                    "generator-limited", hollow=True)

    loss_pct = [max(100 * x, LOSS_FLOOR_PCT) for x in trials["loss_ratio"].fillna(0)]
    ymax = max(loss_pct + [threshold_pct * 10 if threshold_pct > 0 else 1.0, 1.0]) * 2
    lo_x = min(offered + [xmax]) * 0.9  # the loss plot zooms on the trials
    lp = SvgPlot(Axis(lo_x, xmax, label="offered rate, kpps"),
                 Axis(LOSS_FLOOR_PCT, ymax, log=True, label="loss, % (0 drawn at 0.001)"),
                 title="trials, bounds and estimate")
    est, est_lo, est_hi = (search.get(k) for k in ("estimate_pps", "estimate_low_pps",
                                                    "estimate_high_pps"))

    def k(v: object) -> float | None:
        return v / 1000.0 if isinstance(v, (int, float)) and math.isfinite(v) else None

    if k(est) is not None:
        lp.band(k(est_lo), k(est_hi), COLORS[4], "estimate 95 % interval")
        lp.vline(k(est), COLORS[4], "estimate", dash="4,2")
    lp.hline(max(threshold_pct, LOSS_FLOOR_PCT), "#d62728", f"threshold {threshold_pct:g} %",
             dash="2,2")
    lp.vline(k(search.get("lower_pps")), COLORS[2], "lower bound")
    lp.vline(k(search.get("upper_pps")), COLORS[3], "upper bound")
    mask = list(trials["generator_limited"] == 0)
    xs = list(trials["offered_kpps"])
    durations = list(trials["duration_s"])
    tips = [f"{x:.1f} kpps, {d:g} s: loss {100 * lr:.4f} %" for x, d, lr in
            zip(xs, durations, trials["loss_ratio"].fillna(0))]
    lp.points([x for x, m in zip(xs, mask) if m], [y for y, m in zip(loss_pct, mask) if m],
              COLORS[0], "trial", tips=[t for t, m in zip(tips, mask) if m])
    if not all(mask):
        lp.points([x for x, m in zip(xs, mask) if not m],
                  [y for y, m in zip(loss_pct, mask) if not m], "#888", "generator-limited",
                  hollow=True)
    return [fig4.render(), lp.render()]
