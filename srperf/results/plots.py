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
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
import pandas as pd  # noqa: E402

from srperf.results.svgplot import Axis, SvgPlot  # noqa: E402

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
THRESHOLD_COLOR, UPPER_COLOR, LOWER_COLOR = "#d62728", "#8c564b", "#2ca02c"
"""Loss plot lines: the threshold, the upper and the lower bound (three colours)."""
UPPER_BOUND_STATUSES = ("ok", "below_min")
"""Goal statuses whose ``upper_pps`` is a rate where the SUT lost too much (a bound);
for ``generator_limited`` or ``undecided`` it is where no usable trial could be run."""
LOSS_FLOOR_PCT = 0.001
"""Loss plots are log-scaled; a trial with no loss is drawn at this floor (%)."""


def png_data_uri(fig: "plt.Figure") -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def bars_png(summary: pd.DataFrame, run_labels: dict[str, str], title: str,
             ylabel: str = "kpps (mean, CI95 bars)") -> str:
    """Grouped bars: x behavior, one bar per run, height mean kpps, error CI95 kpps.

    ``summary`` is :func:`srperf.results.frames.summaries` for one packet size and
    threshold; rows without numbers are labelled with their status.
    """
    behaviors = list(dict.fromkeys(summary["behavior"]))
    runs = [r for r in run_labels if r in set(summary["run_id"])]
    n_runs = max(len(runs), 1)
    width = 0.8 / n_runs
    # At most 16 x 4 inches at 80 dpi (1280 px wide): 200 bars still get 5 px each,
    # and drawing time grows with the canvas.
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.5 * len(behaviors)
                                                  * max(1, n_runs / 3) + 2)), 4.0))
    handles: list[Patch] = []  # one per run, also for a run with statuses only
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
                lo, hi = r.get("ci_low_kpps", math.nan), r.get("ci_high_kpps", math.nan)
                if isinstance(lo, float) and isinstance(hi, float) and math.isfinite(lo) \
                        and math.isfinite(hi):   # an interval not symmetric about the mean
                    es.append((mean - lo, hi - mean))
                else:
                    ci = ci if isinstance(ci, float) and math.isfinite(ci) else 0.0
                    es.append((ci, ci))
            else:
                ax.text(x, top * 0.02, str(r.get("status", "")).split(" x")[0], rotation=90,
                        ha="center", va="bottom", fontsize=7, color="#555")
        color = COLORS[i % len(COLORS)]
        if xs:
            ax.bar(xs, hs, width * 0.95, yerr=list(zip(*es)), capsize=2, color=color,
                   error_kw={"elinewidth": 0.8})
        handles.append(Patch(color=color, label=run_labels[run]))
    if not (summary["n"] > 0).any():  # only statuses: no rate axis to draw
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.text(0.5, 0.6, "no rate to plot: every search ended with a status",
                transform=ax.transAxes, ha="center", fontsize=9, color="#555")
    ax.set_xticks(range(len(behaviors)), behaviors, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if runs:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    # Fixed margins (tight_layout would draw the figure one more time): the legend
    # sits right of the axes, rotated behavior names below them.
    width_in = fig.get_figwidth()
    fig.subplots_adjust(left=0.7 / width_in, right=1 - 2.6 / width_in, bottom=0.3, top=0.91)
    return png_data_uri(fig)


def stateful_bars_png(summary: pd.DataFrame, run_labels: dict[str, str], title: str,
                      metric: str) -> str:
    """:func:`bars_png` for a stateful kind: x behavior and variant, one bar per run,
    height the mean of ``metric`` (its unit in its name), error bar its 95 % interval
    (srperf.results.positive: none below 3 repetitions);
    ``summary`` is :func:`srperf.results.frames.stateful_summary` restricted to one kind
    and its primary metric (configurations with no ok repetition show their status)."""
    df = pd.DataFrame({
        "run_id": summary["run_id"],
        "behavior": [f"{b} {v}".strip() for b, v in zip(summary["behavior"],
                                                        summary["variant"])],
        "n": summary["n"], "mean_kpps": summary["mean"].astype(float),
        "ci95_kpps": summary["ci95"].astype(float), "status": summary["statuses"],
        "ci_low_kpps": summary["ci_low"].astype(float),
        "ci_high_kpps": summary["ci_high"].astype(float)})
    return bars_png(df, run_labels, title, ylabel=f"{metric} (mean, 95 % interval bars)")


@dataclass
class SearchTrials:
    """One search's trials as plain lists (rates kpps, ratios 0-1, durations s)."""

    offered_kpps: list[float]
    received_kpps: list[float]
    delivery_ratio: list[float]
    loss_ratio: list[float]
    duration_s: list[float]
    usable: list[bool]
    """False for generator-limited trials (drawn hollow, never decided on)."""
    stopped: list[bool] = field(default_factory=list)
    """True for trials stopped early (their figures are of the part that ran)."""

    @classmethod
    def split(cls, trials: pd.DataFrame, keys: list[str]) -> dict[tuple, "SearchTrials"]:
        """Group a :func:`srperf.results.frames.trials` frame by ``keys`` (fast path:
        one pass over plain lists instead of a pandas slice per search)."""
        cols = [trials[c].tolist() for c in ("offered_kpps", "received_kpps",
                                              "delivery_ratio", "loss_ratio", "duration_s")]
        limited = trials["generator_limited"].fillna(0).tolist()
        stopped = trials["stopped_early"].tolist() if "stopped_early" in trials \
            else [False] * len(trials)
        # a generator-limited trial is drawn at the rate it achieved (sent / elapsed),
        # not at the rate it was meant to offer
        achieved = (trials["offered_rate_pps"] / 1000.0).tolist() \
            if "offered_rate_pps" in trials else cols[0]
        groups: dict[tuple, SearchTrials] = {}
        for i, key in enumerate(zip(*(trials[k].tolist() for k in keys))):
            g = groups.get(key)
            if g is None:
                g = groups[key] = cls([], [], [], [], [], [])
            a = achieved[i]
            g.offered_kpps.append(a if limited[i] and a == a and a > 0 else cols[0][i])
            g.received_kpps.append(cols[1][i])
            g.delivery_ratio.append(cols[2][i])
            g.loss_ratio.append(cols[3][i] if cols[3][i] == cols[3][i] else 0.0)
            g.duration_s.append(cols[4][i])
            g.usable.append(not limited[i])
            g.stopped.append(bool(stopped[i]))
        return groups


def _pick(values: list, mask: list[bool], want: bool = True) -> list:
    return [v for v, m in zip(values, mask) if m == want]


def search_panels(t: SearchTrials, search: dict, threshold_pct: float) -> list[str]:
    """Two inline SVGs for one search: Figure 4 and rate vs loss with bounds."""
    ok = t.usable
    xmax = max(t.offered_kpps + [1.0]) * 1.05
    rx_max = max([x for x in t.received_kpps if x == x] + [1.0]) * 1.05
    fig4 = SvgPlot(Axis(0.0, xmax, label="offered rate, kpps"),
                   Axis(0, max(xmax, rx_max), label="received rate, kpps"),
                   title="received rate and delivery ratio",
                   y2=Axis(0, 105, label="delivery ratio, %"))
    fig4.line([0, xmax], [0, xmax], "#bbb", dash="3,3")
    off, rx = _pick(t.offered_kpps, ok), _pick(t.received_kpps, ok)
    dr = [100 * d for d in _pick(t.delivery_ratio, ok)]
    tips = [f"{o:.1f} kpps: received {r:.1f} kpps, DR {d:.3f} %" for o, r, d in zip(off, rx, dr)]
    fig4.points(off, rx, COLORS[0], "received kpps", tips=tips)
    fig4.points(off, dr, COLORS[1], "delivery ratio %", shape="triangle", right=True)
    if not all(ok):
        fig4.points(_pick(t.offered_kpps, ok, False), _pick(t.received_kpps, ok, False),
                    "#888", "generator-limited (at rate achieved)", hollow=True)

    loss_pct = [max(100 * x, LOSS_FLOOR_PCT) for x in t.loss_ratio]
    ymax = max(loss_pct + [threshold_pct * 10 if threshold_pct > 0 else 1.0, 1.0]) * 2
    lo_x = min(t.offered_kpps + [xmax]) * 0.9  # the loss plot zooms on the trials
    lp = SvgPlot(Axis(lo_x, xmax, label="offered rate, kpps"),
                 Axis(LOSS_FLOOR_PCT, ymax, log=True, label="loss, % (0 drawn at 0.001)"),
                 title="trials, bounds and estimate")

    def k(v: object) -> float | None:
        return v / 1000.0 if isinstance(v, (int, float)) and math.isfinite(v) else None

    est = k(search.get("estimate_pps"))
    if est is not None:
        lp.band(k(search.get("estimate_low_pps")), k(search.get("estimate_high_pps")),
                COLORS[4], "estimate 95 % interval")
        lp.vline(est, COLORS[4], "estimate", dash="4,2")
    lp.hline(max(threshold_pct, LOSS_FLOOR_PCT), THRESHOLD_COLOR,
             f"threshold {threshold_pct:g} %", dash="2,2")
    lp.vline(k(search.get("lower_pps")), LOWER_COLOR, "lower bound")
    if search.get("status") in UPPER_BOUND_STATUSES:
        lp.vline(k(search.get("upper_pps")), UPPER_COLOR, "upper bound")
    stops = t.stopped or [False] * len(t.offered_kpps)
    tips = [f"{x:.1f} kpps, {d:g} s: loss {100 * lr:.4f} %"
            + (" (stopped early, its failure certain)" if st else "")
            for x, d, lr, st in zip(t.offered_kpps, t.duration_s, t.loss_ratio, stops)]
    lp.points(_pick(t.offered_kpps, ok), _pick(loss_pct, ok), COLORS[0], "trial",
              tips=_pick(tips, ok))
    if not all(ok):
        lp.points(_pick(t.offered_kpps, ok, False), _pick(loss_pct, ok, False), "#888",
                  "generator-limited (at rate achieved)", hollow=True)
    return [fig4.render(), lp.render()]
