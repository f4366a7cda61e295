"""Reports people read: one self-contained HTML file and a Markdown summary.

The HTML report (template ``reports/report.html.j2``) shows, for the runs given:
per behavior the mean, CV and CI95 of the reported rate (as the SRPerf paper's
Tables II-V), bars with CI95 error bars for runs and forwarders side by side,
for each search the paper's Figure 4 and every trial on a rate-vs-loss plot
with bounds, estimate and interval, latency where a driver recorded some, and
the environment of each run (flat or nested per node).  Everything is
embedded: the file can be mailed or archived by a CI job.  Rates are kpps.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jinja2
import pandas as pd

import srperf
from srperf.traffic.imix import size_label
from srperf.results.names import goal_name, interval_text
from srperf.results import frames, plots
from srperf.results.compare import Comparison, format_markdown
from srperf.results.store import ResultStore

log = logging.getLogger(__name__)

STATUS_WITH_NUMBERS = ("ok", "at_max")


def templates_dir() -> Path:
    """Where the Jinja2 templates are: the shipped ``reports/`` folder."""
    from importlib import resources

    return Path(str(resources.files("srperf.data.reports")))


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """One environment per process: it keeps the templates compiled (compiling them
    took most of a report's time, a nightly writes one a night); its loader still
    reloads a template whose file changed."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())),
                             autoescape=jinja2.select_autoescape(["html", "j2"],
                                                                 default_for_string=False),
                             trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = fmt_num
    env.globals["interval"] = interval_text
    env.filters["size"] = size_label
    env.tests["mapping"] = lambda v: isinstance(v, dict)
    return env


def fmt_num(value: Any, digits: int = 1, suffix: str = "") -> str:
    """A number for a table, or ``-`` for NaN/None (never a fake zero)."""
    if value is None:
        return "-"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "-" if math.isnan(v) else f"{v:.{digits}f}{suffix}"


@dataclass
class RunInfo:
    """A run as the report shows it."""

    run_id: str
    label: str
    experiment: str
    testbed: str
    forwarder: str
    status: str
    purpose: str
    started: str
    finished: str
    simulated: bool
    environment: dict[str, Any]

    @property
    def data_kind(self) -> str:
        """measured, MODEL (simulated SUT) or SYNTHETIC (made up by a benchmark)."""
        if self.simulated:
            return "MODEL (simulated SUT)"
        from srperf.results.emulation import label

        if label(self.environment):
            return label(self.environment)
        return "SYNTHETIC" if self.environment.get("synthetic") else "measured"


@dataclass
class SearchView:
    """One search goal; its two plots are drawn in the browser from ``plot`` (an index
    into :attr:`ReportData.search_plots`, None when the search has no trial)."""

    repetition: int
    threshold_pct: float
    algorithm: str
    status: str
    lower_kpps: float
    upper_kpps: float
    estimate_kpps: float
    estimate_low_kpps: float
    estimate_high_kpps: float
    n_trials: int
    trial_seconds: float
    note: str
    plot: int | None


@dataclass
class BehaviorView:
    run_id: str
    behavior: str
    packet_size: int
    searches: list[SearchView] = field(default_factory=list)


@dataclass
class SummaryTable:
    """Rows of one packet size and threshold, with its bar chart."""

    packet_size: int
    threshold_pct: float
    title: str
    rows: list[dict[str, Any]]
    bars: str


@dataclass
class ReportData:
    """Everything the templates need."""

    title: str
    generated: str
    version: str
    runs: list[RunInfo]
    tables: list[SummaryTable]
    unmeasured: list[dict[str, Any]]
    behaviors: list[BehaviorView]
    latency: list[dict[str, Any]]
    comparison: Comparison | None
    any_simulated: bool
    conformance: list[dict[str, Any]] = field(default_factory=list)
    """Per run and behavior: counts of pass/fail/finding/n/a and the cases that did
    not pass."""
    profiles: list[dict[str, Any]] = field(default_factory=list)
    """Per run with profile trials: ``label``, ``rows`` (BehaviorProfile),
    ``agreements`` (time ratio against PDR ratio), ``notes`` and ``bars`` (PNG)."""
    stateful: list[StatefulTable] = field(default_factory=list)
    """The stateful kinds' tables (goodput, http), empty for PDR-only runs."""
    costs: list[dict[str, Any]] = field(default_factory=list)
    """Per run with per-packet costs (srperf.results.costs): ``label`` and ``rows``
    (CostRow)."""
    latency_graphs: list[dict[str, Any]] = field(default_factory=list)
    """HDR latency graphs (``title``, ``png``), one per behavior and run with latency."""
    loss: list[dict[str, Any]] = field(default_factory=list)
    """Per run with loss-monitoring trials (:func:`srperf.results.pm_plot.loss_sections`):
    its cases' PDR and change against ``none``, per-block losses and the chart."""
    trend_steps: list[dict[str, str]] = field(default_factory=list)
    """The nightly's per-test line from the trend (:func:`trend_steps`): ``test``,
    ``step`` (own night / within k nights, or n/a) and ``text`` (the whole line, or why
    the step is not known); empty outside a nightly."""
    search_plots: list[dict[str, Any]] = field(default_factory=list)
    """Per search with trials, the data its two plots are drawn from in the browser
    (:func:`srperf.results.plots.search_plot_data`; :attr:`SearchView.plot` indexes it)."""

    def search_plots_json(self) -> str:
        """:attr:`search_plots` as JSON safe inside a ``<script>`` element."""
        return json.dumps(self.search_plots, separators=(",", ":")).replace("</", "<\\/")


@dataclass
class StatefulTable:
    """One stateful kind (goodput, http): per run, behavior and variant the primary
    metric's n, mean, CV and CI95 and the other metrics' means with their CI95 (each
    in its metric's unit); the plot of the primary metric; the proxy's counters
    (Table I of the caching-proxy paper) when the runs stored some."""

    kind: str
    primary_metric: str
    title: str
    rows: list[dict[str, Any]]
    bars: str
    counters: list[dict[str, Any]] = field(default_factory=list)
    counter_columns: list[str] = field(default_factory=list)


TABLE_I_COLUMNS = ("ingress_ok", "egress_ok", "not_cached", "duplicates", "stale",
                   "left_in_cache", "unaccounted")
"""Counter columns shown first, in Table I's order (see srperf.stateful.counters)."""


def _interval(row: pd.Series) -> str:
    """A stateful summary row's 95 % interval as ``low-high`` (it is not symmetric about
    the mean: srperf.results.positive), or why there is none (``n too small (< 3)``)."""
    low, high = row.get("ci_low", math.nan), row.get("ci_high", math.nan)
    if isinstance(low, float) and isinstance(high, float) and math.isfinite(low) \
            and math.isfinite(high):
        return f"{low:.4g}-{high:.4g}"
    return str(row.get("ci_note") or "-")


def _stateful(samples: pd.DataFrame, labels: dict[str, str],
              with_plots: bool = True) -> list[StatefulTable]:
    """The stateful section: one :class:`StatefulTable` per kind."""
    if samples.empty:
        return []
    summary = frames.stateful_summary(samples)
    counters = frames.stateful_counters(samples)
    out = []
    for kind, grp in summary.groupby("kind", sort=True):
        prim = grp["metric"][grp["primary"]]
        primary = str(prim.iloc[0]) if len(prim) else str(
            samples[samples["kind"] == kind]["primary_metric"].dropna().iloc[0]
            if samples[samples["kind"] == kind]["primary_metric"].notna().any() else "")
        rows = []
        for (run_id, beh, var), cfg in grp.groupby(["run_id", "behavior", "variant"],
                                                   sort=False):
            p = cfg[cfg["metric"] == primary]
            first = p.iloc[0] if len(p) else cfg.iloc[0]
            has = bool(len(p)) and int(first["n"]) > 0
            rows.append({
                "run": labels.get(str(run_id), str(run_id)), "behavior": beh, "variant": var,
                "n": int(first["n"]) if has else 0, "has": has,
                "mean": first["mean"] if has else math.nan,
                "cv": first["cv_pct"] if has else math.nan,
                "ci95": first["ci95"] if has else math.nan,
                "ci95_pct": first["ci95_pct"] if has else math.nan,
                "interval": _interval(first) if has else "",
                "others": [{"metric": o["metric"], "mean": o["mean"], "ci95": o["ci95"],
                            "n": int(o["n"]), "interval": _interval(o)}
                           for _, o in cfg[(cfg["metric"] != primary)
                                           & (cfg["metric"] != "")].iterrows()],
                "status": first["statuses"], "failed": int(first["failed"]),
                "reason": first["reason"] or ""})
        rows.sort(key=lambda x: (x["behavior"], x["variant"], x["run"]))
        title = f"{kind}: {primary}" if primary else str(kind)
        bars = ""
        if with_plots:
            pgrp = grp[(grp["metric"] == primary) | (grp["n"] == 0)]
            pgrp = pgrp.drop_duplicates(["run_id", "behavior", "variant"])
            bars = plots.stateful_bars_png(pgrp, labels, title, primary)
        table = StatefulTable(str(kind), primary, title, rows, bars)
        if not counters.empty:
            c = counters[counters["kind"] == kind]
            names = [x for x in c.columns if x not in ("run_id", "kind", "behavior",
                                                        "variant")]
            # Table I's columns when the runner stored them (the raw eBPF counters they
            # sum stay in the store and the export), else every counter stored.
            table.counter_columns = [x for x in TABLE_I_COLUMNS if x in names] or \
                sorted(names)
            table.counters = [{"run": labels.get(str(r["run_id"]), str(r["run_id"])),
                               "behavior": r["behavior"], "variant": r["variant"],
                               "values": [r[x] for x in table.counter_columns]}
                              for _, r in c.iterrows()]
        out.append(table)
    return out


def _label(row: pd.Series, index: int) -> str:
    from srperf.results.emulation import EMULATED, mode

    env = row.get("env")
    emulated = " EMULATED" if isinstance(env, dict) and mode(env) == EMULATED else ""
    return f"#{index + 1} {row['forwarder']} {row['run_id']}{emulated}"


def collect(store: ResultStore, run_ids: Iterable[str], title: str = "",
            comparison: Comparison | None = None, plots_per_search: bool = True) -> ReportData:
    """Read the runs from the store and shape them for the templates."""
    ids = list(dict.fromkeys(run_ids))
    runs_df = frames.runs(store, ids)
    missing = set(ids) - set(runs_df["run_id"])
    if missing:
        raise KeyError(f"no such run(s): {', '.join(sorted(missing))}")
    s_df = frames.searches(store, ids)
    o_df = frames.outcomes(store, ids)
    t_df = frames.trials(store, ids) if plots_per_search else pd.DataFrame()
    summary = frames.summaries(store, ids, s_df, o_df)

    runs: list[RunInfo] = []
    labels: dict[str, str] = {}
    for i, r in runs_df.iterrows():
        labels[r["run_id"]] = _label(r, int(i))  # type: ignore[arg-type]
        runs.append(RunInfo(r["run_id"], labels[r["run_id"]], r["experiment"] or "",
                            r["testbed"] or "", r["forwarder"] or "", r["status"] or "",
                            r.get("purpose", "run") or "run", r["started"] or "",
                            r["finished"] or "", bool(r["simulated"]),
                            r["env"] if isinstance(r["env"], dict) else {"value": r["env"]}))

    tables: list[SummaryTable] = []
    unmeasured: list[dict[str, Any]] = []
    if not summary.empty:
        numeric = summary[summary["threshold_pct"].notna()]
        for (size, thr), grp in numeric.groupby(["packet_size", "threshold_pct"], sort=True):
            name = goal_name(float(thr))
            title_t = f"{name}, {int(size)}-byte packets"
            rows = []
            for _, r in grp.iterrows():
                has = bool(r["n"]) and isinstance(r["mean_kpps"], float) \
                    and math.isfinite(r["mean_kpps"])
                rows.append({"behavior": r["behavior"], "run": labels.get(r["run_id"], ""),
                             "forwarder": r["forwarder"], "n": int(r["n"]), "has": has,
                             "mean": r["mean_kpps"], "cv": r["cv_pct"],
                             "ci95": r["ci95_kpps"], "ci95_pct": r["ci95_pct"],
                             "min": r["min_kpps"], "max": r["max_kpps"],
                             "estimate": r.get("median_estimate_kpps", math.nan),
                             "status": r["status"], "reason": r.get("reason", "") or ""})
            rows.sort(key=lambda x: (x["behavior"], x["run"]))
            tables.append(SummaryTable(int(size), float(thr), title_t, rows,
                                       plots.bars_png(grp, labels, title_t)))
        for _, r in summary[summary["threshold_pct"].isna()].iterrows():
            unmeasured.append({"behavior": r["behavior"], "run": labels.get(r["run_id"], ""),
                               "packet_size": int(r["packet_size"]), "status": r["status"],
                               "reason": r.get("reason", "") or ""})

    plot_data: list[dict[str, Any]] = []
    behaviors = _behavior_views(s_df, t_df, plot_data) if plots_per_search else []
    conf = _conformance(frames.conformance(store, ids), labels)
    return ReportData(
        title=title or "srperf report: " + ", ".join(ids),
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=srperf.__version__, runs=runs, tables=tables, unmeasured=unmeasured,
        behaviors=behaviors, latency=_latency(t_df), comparison=comparison,
        latency_graphs=_latency_graphs(t_df) if plots_per_search else [],
        any_simulated=any(r.simulated for r in runs), conformance=conf,
        profiles=_profiles(store, ids, labels, plots_per_search),
        costs=_costs(store, ids, labels),
        stateful=_stateful(frames.stateful_samples(store, ids), labels,
                           with_plots=plots_per_search),
        loss=loss_sections(store, ids, labels, plots_per_search),
        search_plots=plot_data)


def loss_sections(store: ResultStore, ids: list[str], labels: dict[str, str],
                  with_plots: bool) -> list[dict[str, Any]]:
    from srperf.results.pm_plot import loss_sections as sections

    return sections(store, ids, labels, with_plots)


def _profiles(store: ResultStore, ids: list[str], labels: dict[str, str],
              with_plots: bool) -> list[dict[str, Any]]:
    """The profile trials of each run (srperf.profile), summarised per behavior."""
    from srperf.results.diagnosis import AGREEMENT_PCT, diagnose
    from srperf.results.profiles import GROUPS, agreements, extra_time, profile_rows

    out = []
    for run_id in ids:
        rows = profile_rows(store, run_id)
        if not rows:
            continue
        bars = ""
        if with_plots and any(r.ns_per_packet is not None for r in rows):
            from srperf.results.profile_plot import profile_bars_png

            bars = profile_bars_png(rows, f"where the time goes: {labels.get(run_id, run_id)}")
        out.append({"label": labels.get(run_id, run_id), "rows": rows,
                    "agreements": agreements(rows), "extra": extra_time(rows),
                    "diagnosis": diagnose(rows), "agreement_pct": AGREEMENT_PCT,
                    "groups": {name: [(r.behavior, r.group_ns(prefixes)) for r in rows]
                               for name, prefixes in GROUPS.items()
                               if any(r.group_ns(prefixes) for r in rows)},
                    "notes": sorted({n for r in rows for n in r.notes}), "bars": bars})
    return out


def _costs(store: ResultStore, ids: list[str], labels: dict[str, str]
           ) -> list[dict[str, Any]]:
    """The per-packet costs without a generator of each run that has them."""
    from srperf.results.costs import cost_rows

    return [{"label": labels.get(run_id, run_id), "rows": rows}
            for run_id in ids if (rows := cost_rows(store, run_id))]


def _conformance(df: pd.DataFrame, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The conformance tables: per run and behavior, the counts and the cases that did not
    pass (fail with its first differing field, finding with its section)."""
    out: list[dict[str, Any]] = []
    if df.empty:
        return out
    for (run_id, behavior), grp in df.groupby(["run_id", "behavior"], sort=False):
        counts = grp["status"].value_counts()
        not_run = grp[grp["status"] == "not_run"]
        out.append({
            "run": labels.get(str(run_id), str(run_id)), "behavior": behavior,
            "forwarder": grp["forwarder"].iloc[0], "cases": len(grp) - len(not_run),
            "not_run": "; ".join(not_run["detail"]),
            **{s.replace("/", ""): int(counts.get(s, 0))
               for s in ("pass", "fail", "finding", "n/a")},
            "notable": [{"case": r["case_name"], "status": r["status"],
                         "expected": r["expected"], "detail": r["detail"], "spec": r["spec"]}
                        for _, r in grp.iterrows() if r["status"] in ("fail", "finding")]})
    return out


def _kpps(v: Any) -> float:
    return float(v) / 1000.0 if v is not None and not pd.isna(v) else math.nan


def _behavior_views(s_df: pd.DataFrame, t_df: pd.DataFrame,
                    plot_data: list[dict[str, Any]]) -> list[BehaviorView]:
    """One view per run, behavior and size; each search's plot data is appended to
    ``plot_data`` (embedded once in the page, drawn by ``search_plots.js``)."""
    if s_df.empty:
        return []
    by_search = plots.SearchTrials.split(t_df, ["run_id", "search_seq"]) \
        if not t_df.empty else {}
    views: dict[tuple[str, str, int], BehaviorView] = {}
    for s in s_df.to_dict("records"):
        key = (s["run_id"], s["behavior"], int(s["packet_size"]))
        view = views.setdefault(key, BehaviorView(*key))
        trials = by_search.get((s["run_id"], s["search_seq"]))
        plot = None
        if trials:
            plot = len(plot_data)
            plot_data.append(plots.search_plot_data(trials, s, float(s["threshold_pct"])))
        view.searches.append(SearchView(
            int(s["repetition"]), float(s["threshold_pct"]), s["algorithm"] or "",
            s["status"] or "", _kpps(s["lower_pps"]), _kpps(s["upper_pps"]),
            _kpps(s.get("estimate_pps")), _kpps(s.get("estimate_low_pps")),
            _kpps(s.get("estimate_high_pps")), int(s["n_trials"] or 0),
            float(s["trial_seconds"] or 0), s["note"] or "", plot))
    return list(views.values())


def _latency(t_df: pd.DataFrame) -> list[dict[str, Any]]:
    """Trials whose driver recorded latency (``extra["latency"]``, a mapping, us)."""
    if t_df.empty or not t_df["extra"].fillna("").str.contains('"latency"').any():
        return []
    rows = []
    for t in t_df[t_df["extra"].fillna("").str.contains('"latency"')].to_dict("records"):
        lat = frames.parse_json(t["extra"]).get("latency")
        if isinstance(lat, dict) and lat:
            rows.append({"run_id": t["run_id"], "behavior": t["behavior"],
                         "repetition": t["repetition"], "rate_kpps": t["rate_pps"] / 1000,
                         "latency": {k: v for k, v in lat.items() if k != "hdrh"}})
    return rows


def _latency_graphs(t_df: pd.DataFrame) -> list[dict[str, Any]]:
    """HDR latency graphs (percentile on a log scale), one per behavior and run."""
    from srperf.results.latency_plot import graphs

    return graphs(t_df)


def render_html(data: ReportData) -> str:
    return _env().get_template("report.html.j2").render(r=data, num=fmt_num)


def render_markdown(data: ReportData) -> str:
    text = _env().get_template("summary.md.j2").render(r=data, num=fmt_num)
    if data.comparison is not None:
        text += "\n" + format_markdown(data.comparison) + "\n"
    return text


def trend_steps(verdict: Any) -> list[dict[str, str]]:
    """Per test of a :class:`srperf.results.trend_verdict.TrendVerdict`, the smallest step
    the trend would see (issue 48): the short cell of
    :class:`srperf.results.trend_power.StepVisibility` and the verdict's whole line."""
    from srperf.results.trend_power import StepVisibility

    out = []
    for test in sorted(verdict.texts):
        step = verdict.steps.get(test)
        vis = StepVisibility(**step) if isinstance(step, dict) else None
        out.append({"test": test, "step": vis.short() if vis is not None else "n/a",
                    "text": verdict.texts[test]})
    return out


def write_report(store: ResultStore, run_ids: Iterable[str], html_path: Path | None,
                 md_path: Path | None = None, title: str = "",
                 comparison: Comparison | None = None, trend: Any = None) -> ReportData:
    """Collect the runs and write the HTML (and Markdown) files that are asked for;
    ``trend`` (a nightly's TrendVerdict) adds its smallest visible step per test."""
    data = collect(store, run_ids, title, comparison, plots_per_search=html_path is not None)
    if trend is not None:
        data.trend_steps = trend_steps(trend)
    from srperf.safety import safe_paths

    if html_path is not None:
        safe_paths.write_file(html_path, render_html(data))
        log.info("report written to %s", html_path)
    if md_path is not None:
        safe_paths.write_file(md_path, render_markdown(data))
    return data
