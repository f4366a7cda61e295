"""Stateful rows as comparable samples: ``srperf compare`` and ``nightly`` judge a goodput
(or http) run's configurations the way they judge PDR searches.

Each stored repetition becomes one row of a searches-like frame: ``behavior`` names the
kind, the configuration and the metric (``goodput_mbps: end_cache, vnf forward, 2 segs``),
``lower_pps`` carries the metric's value x 1000 (the comparison reads values / 1000, so its
tables show the metric in its own unit, here Mb/s), ``threshold_pct`` is NaN-free -1
(not a loss search), ``status`` ok | failed | unsupported.
"""

from __future__ import annotations

import pandas as pd

from srperf.results.store import ResultStore

NOT_A_SEARCH = -1.0
"""``threshold_pct`` of the pseudo-searches made from stateful rows."""
COLUMNS = ["behavior", "packet_size", "threshold_pct", "status", "lower_pps", "note"]


def as_searches(store: ResultStore, run_id: str) -> pd.DataFrame:
    """The run's stateful repetitions as rows of a ``searches`` frame (empty if none)."""
    try:
        frame = store.frame("stateful", run_id)
    except Exception:   # a store from before migration 7 has no such table
        return pd.DataFrame(columns=COLUMNS)
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    frame = frame[frame["kind"] != "calibration"]
    rows = []
    for r in frame.itertuples(index=False):
        variant = f" [{r.variant}]" if r.variant and r.variant != "-" else ""
        rows.append({"behavior": f"{r.metric}: {r.configuration}{variant}",
                     "packet_size": 0, "threshold_pct": NOT_A_SEARCH,
                     "status": r.status, "lower_pps":
                         None if r.value is None or pd.isna(r.value) else float(r.value) * 1000,
                     "note": r.reason or ""})
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["as_searches", "NOT_A_SEARCH"]
