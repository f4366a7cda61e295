"""The report's pictures.

* :func:`bars_png`: per behavior, one bar per run (mean PDR/NDR, kpps) with its
  CI95 as error bar; a behavior with no number shows its status as text
  (matplotlib, Agg, PNG as a data URI).
* :func:`search_plot_data`: for one search, the trials and bounds that the report's
  ``reports/search_plots.js`` draws in the browser as the SRPerf paper's Figure 4
  (received rate and delivery ratio against offered rate) and a rate-vs-loss plot with
  the threshold, the bounds, the crossing estimate and its interval (inline SVG drawn
  on demand: a report of thousands of searches stays a few MB).
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

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
UPPER_BOUND_STATUSES = ("ok", "below_min")
"""Goal statuses whose ``upper_pps`` is a rate where the SUT lost too much (a bound);
for ``generator_limited`` or ``undecided`` it is where no usable trial could be run."""


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


def _finite(v: object, digits: int) -> float | None:
    """``v`` rounded to ``digits`` decimals, or None (JSON has no NaN) when not finite."""
    if isinstance(v, (int, float)) and math.isfinite(v):
        return round(float(v), digits)
    return None


def _kpps_of(search: dict, key: str) -> float | None:
    return _finite(search[key] / 1000.0, 3) if isinstance(search.get(key), (int, float)) \
        else None


def search_plot_data(t: SearchTrials, search: dict, threshold_pct: float) -> dict:
    """One search's plot data, drawn by the report's ``search_plots.js`` when its group
    is opened (the SRPerf paper's Figure 4 and rate vs loss with bounds and estimate).

    Keys: ``o`` offered kpps, ``r`` received kpps, ``dr`` delivery ratio (0-1), ``l``
    loss ratio (0-1), ``d`` duration s, one entry per trial in the order run; ``g``
    indices of generator-limited trials (drawn hollow at the rate achieved), ``x``
    indices of trials stopped early; ``lo``/``hi`` the search's bounds, ``e``/``elo``/
    ``ehi`` the crossing estimate and its 95 % interval (kpps or None); ``ub`` whether
    ``hi`` is a rate where the SUT lost too much (drawn as the upper bound); ``t`` the
    loss threshold, %."""
    stopped = t.stopped or [False] * len(t.offered_kpps)
    return {
        "o": [_finite(v, 3) for v in t.offered_kpps],
        "r": [_finite(v, 3) for v in t.received_kpps],
        "dr": [_finite(v, 7) for v in t.delivery_ratio],
        "l": [_finite(v, 9) for v in t.loss_ratio],
        "d": [_finite(v, 4) for v in t.duration_s],
        "g": [i for i, ok in enumerate(t.usable) if not ok],
        "x": [i for i, st in enumerate(stopped) if st],
        "lo": _kpps_of(search, "lower_pps"), "hi": _kpps_of(search, "upper_pps"),
        "e": _kpps_of(search, "estimate_pps"), "elo": _kpps_of(search, "estimate_low_pps"),
        "ehi": _kpps_of(search, "estimate_high_pps"),
        "ub": search.get("status") in UPPER_BOUND_STATUSES, "t": float(threshold_pct)}
