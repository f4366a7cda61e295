"""Runs, searches, trials and summaries of a results store as pandas DataFrames.

Rates are pps in the stored columns and kpps in the summary (``*_kpps``);
ratios are in [0, 1] and percentages are named ``*_pct``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable

import pandas as pd

from srperf.results.store import ResultStore
from srperf.results.summary import summarize

log = logging.getLogger(__name__)


def _ids(run_ids: str | Iterable[str] | None) -> str | list[str] | None:
    return run_ids if run_ids is None or isinstance(run_ids, str) else list(run_ids)


def parse_json(text: Any) -> Any:
    """A stored JSON column value as Python data ({} for empty or invalid text)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text}


def runs(store: ResultStore, run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """One row per run; ``env`` holds the parsed environment (flat or nested per node),
    ``simulated`` is True when any trial of the run came from the SUT model."""
    df = store.frame("runs", _ids(run_ids))
    df["env"] = [parse_json(x) for x in df["environment"]]
    sim = store.simulated_runs(list(df["run_id"])) if not df.empty else set()
    df["simulated"] = df["run_id"].isin(sim)
    if run_ids is not None and not isinstance(run_ids, str):
        order = {r: i for i, r in enumerate(run_ids)}
        df = df.sort_values("run_id", key=lambda s: s.map(order)).reset_index(drop=True)
    return df


def trials(store: ResultStore, run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """One row per trial with derived columns: ``received_rate_pps`` (received per
    second of intended duration), ``delivery_ratio`` (received / intended, the
    SRPerf paper's DR), ``offered_kpps``/``received_kpps`` and ``stopped_early``
    (the trial ended once its failure was certain: its figures are of the part that
    ran, ``search.early_stop``)."""
    df = store.frame("trials", _ids(run_ids))
    df["stopped_early"] = df["extra"].map(_stopped) if "extra" in df else False
    dur = df["duration_s"].where(df["duration_s"] > 0)
    df["received_rate_pps"] = df["received"] / dur
    df["delivery_ratio"] = (df["received"] / df["intended"].where(df["intended"] > 0)).fillna(1.0)
    df["offered_kpps"] = df["rate_pps"] / 1000.0
    df["received_kpps"] = df["received_rate_pps"] / 1000.0
    return df


def searches(store: ResultStore, run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """One row per search goal (threshold in %, bounds and estimates in pps)."""
    return store.frame("searches", _ids(run_ids))


def conformance(store: ResultStore,
                run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """One row per conformance case: behavior, case_name, expected, status, detail, spec."""
    return store.frame("conformance", _ids(run_ids))


def outcomes(store: ResultStore, run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Per run, behavior and size: measured, unsupported, verify_failed, error."""
    return store.frame("outcomes", _ids(run_ids))


def summaries(store: ResultStore, run_ids: str | Iterable[str] | None = None,
              search_frame: pd.DataFrame | None = None,
              outcome_frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`srperf.results.summary.summarize` per run, one frame with ``run_id`` and
    ``forwarder`` first (rates in kpps, CV and CI95 also as % of the mean)."""
    s_all = search_frame if search_frame is not None else searches(store, run_ids)
    o_all = outcome_frame if outcome_frame is not None else outcomes(store, run_ids)
    ids = list(dict.fromkeys(list(s_all["run_id"]) + list(o_all["run_id"])))
    parts = []
    for run_id in ids:
        s = s_all[s_all["run_id"] == run_id]
        o = o_all[o_all["run_id"] == run_id]
        summary = summarize(s, o)
        if summary.empty:
            continue
        fwd = pd.concat([s["forwarder"], o["forwarder"]]).dropna()
        summary.insert(0, "forwarder", fwd.iloc[0] if len(fwd) else "")
        summary.insert(0, "run_id", run_id)
        parts.append(summary)
    if not parts:
        return pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    if "mean_kpps" in df:
        df["ci95_pct"] = 100.0 * df["ci95_kpps"] / df["mean_kpps"]
    return df


# -- stateful experiments (kinds goodput, http) ----------------------------------------
STATEFUL_KEYS = ("kind", "behavior", "variant", "metric")
"""What a stateful summary row is per: experiment kind, behavior, variant label, metric."""


def stateful_samples(store: ResultStore,
                     run_ids: str | Iterable[str] | None = None) -> pd.DataFrame:
    """One row per stored stateful repetition, with ``variant_params``, ``metrics``,
    ``detail`` and ``counters`` parsed from JSON (dicts)."""
    df = store.frame("stateful_samples", _ids(run_ids))
    for col in ("variant_params", "metrics", "detail", "counters"):
        df[col] = [parse_json(x) for x in df[col]]
    return df


def stateful_metrics(samples: pd.DataFrame) -> pd.DataFrame:
    """The ok samples of :func:`stateful_samples` in long form: one row per (sample,
    metric) with run_id, kind, behavior, forwarder, variant, repetition, primary_metric,
    metric (its unit in the name) and value."""
    cols = ["run_id", "kind", "behavior", "forwarder", "variant", "repetition",
            "primary_metric", "metric", "value"]
    rows = []
    for r in samples.itertuples(index=False):
        if r.status != "ok":
            continue
        for metric, value in (r.metrics or {}).items():
            rows.append((r.run_id, r.kind, r.behavior, r.forwarder, r.variant, r.repetition,
                         r.primary_metric, metric, float(value)))
    return pd.DataFrame(rows, columns=cols)


def stateful_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Per run, kind, behavior, variant and metric: ``n`` (ok repetitions), ``mean``,
    ``std`` (sample), ``cv_pct``, the 95 % interval of the mean by the rule for positive
    quantities (:mod:`srperf.results.positive`: ``ci_low``, ``ci_high``, NaN with
    ``ci_note`` "n too small (< 3)" below 3 values), ``ci95`` half its width and
    ``ci95_pct`` that in % of the mean (in the metric's unit; the interval is not
    symmetric about the mean),
    ``primary`` (True for the kind's primary metric), and ``failed``: repetitions that
    were not ok with their statuses and first reason (``statuses``, ``reason``).  A
    configuration whose repetitions all failed has one row with metric ``""`` and n 0."""
    from srperf.results.positive import positive_interval
    from srperf.results.stats import describe

    cols = ["run_id", *STATEFUL_KEYS, "primary", "n", "mean", "std", "cv_pct", "ci95",
            "ci95_pct", "ci_low", "ci_high", "ci_note", "failed", "statuses", "reason"]
    if samples.empty:
        return pd.DataFrame(columns=cols)
    long = stateful_metrics(samples)
    rows = []
    group_keys = ["run_id", "kind", "behavior", "variant"]
    for key, grp in samples.groupby(group_keys, sort=False):
        bad = grp[grp["status"] != "ok"]
        statuses = ", ".join(f"{k} x{v}" for k, v in grp["status"].value_counts().items())
        reasons = [x for x in bad["reason"].fillna("") if x]
        extra = (len(bad), statuses, reasons[0] if reasons else "")
        primary = str(grp["primary_metric"].dropna().iloc[0]) \
            if grp["primary_metric"].notna().any() else ""
        sel = long
        for k, v in zip(group_keys, key):
            sel = sel[sel[k] == v]
        metrics = list(dict.fromkeys(sel["metric"]))
        metrics.sort(key=lambda m: (m != primary, m))
        if not metrics:
            rows.append((*key, "", False, 0, *(float("nan"),) * 7, "", *extra))
        for metric in metrics:
            values = list(sel[sel["metric"] == metric]["value"])
            d = describe(values)
            try:
                ci = positive_interval(values)
                low, high, note = ci.low, ci.high, ci.note
            except ValueError:   # a metric that can be negative: no such interval
                low = high = float("nan")
                note = "negative values"
            half = (high - low) / 2
            rows.append((*key, metric, metric == primary, d.n, d.mean, d.std, d.cv_pct,
                         half, 100.0 * half / d.mean if d.mean else float("nan"), low,
                         high, note, *extra))
    return pd.DataFrame(rows, columns=cols)


def stateful_counters(samples: pd.DataFrame) -> pd.DataFrame:
    """Proxy counters per run, kind, behavior and variant, summed over the repetitions
    (packets): one column per counter name (Table I's ``ingress_ok``, ``egress_ok``,
    ``not_cached``... when the runner stored them).  Empty when no sample has counters."""
    rows = []
    for r in samples.itertuples(index=False):
        if r.counters:
            rows.append({"run_id": r.run_id, "kind": r.kind, "behavior": r.behavior,
                         "variant": r.variant,
                         **{k: v for k, v in r.counters.items()
                            if isinstance(v, (int, float))}})
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    return df.groupby(["run_id", "kind", "behavior", "variant"], sort=False,
                      as_index=False).sum(numeric_only=True)


def _stopped(extra: object) -> bool:
    """True when a trial's ``extra`` (JSON text) holds ``stopped``."""
    if not isinstance(extra, str) or '"stopped"' not in extra:
        return False
    try:
        return bool(json.loads(extra).get("stopped"))
    except (ValueError, AttributeError):
        return False
