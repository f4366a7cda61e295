"""Latency samples for run-to-run comparisons (and so for nightly verdicts).

Each latency trial after a search (``extra["purpose"] == "latency"``) gives, per
behavior, packet size and load (fraction of the PDR), one sample per repetition of
``latency_p50_us`` and ``latency_p99_us``.  They are compared like the stateful
metrics (:func:`srperf.results.compare.compare_stateful`): the relative change of the
mean over repetitions with its 95 % interval, lower is better, so a rise whose whole
interval lies beyond the threshold is a regression; with one repetition on a side the
interval is unknown and the verdict inconclusive (the noise of repeated trials is
what a regression must stand out from).  A trial in which no latency packet arrived
has no figure: its repetition is ``failed`` with that reason, never a latency of
zero (measured before and now failed in every repetition: a regression).
Latency trials of TRex and of the local generator share one schema, so either
compares with the other.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from srperf.results import frames
from srperf.results.store import ResultStore

KIND = "latency"
METRICS = {"latency_p50_us": "p50_us", "latency_p99_us": "p99_us"}
"""Compared metric -> field of the stored latency figures."""


def latency_samples(store: ResultStore, run_id: str) -> pd.DataFrame:
    """The run's latency trials in the shape of stateful samples: kind, behavior,
    variant (``64B 90% PDR``), status (``ok``, or ``failed``: no latency packet
    arrived), metrics, reason."""
    cols = ["kind", "behavior", "variant", "repetition", "status", "metrics", "reason",
            "primary_metric"]
    trials = store.frame("trials", run_id)
    rows: list[dict[str, Any]] = []
    if not trials.empty:
        for t in trials.to_dict("records"):
            extra = frames.parse_json(t.get("extra") or "") or {}
            if extra.get("purpose") != "latency" or not isinstance(extra.get("latency"), dict):
                continue
            lat = extra["latency"]
            frac = extra.get("pdr_fraction")
            variant = f"{t['packet_size']}B " + (f"{frac:.0%} PDR" if frac is not None
                                                  else f"{t['rate_pps'] / 1e3:.1f} kpps")
            metrics = {m: float(lat[f]) for m, f in METRICS.items() if lat.get(f) is not None}
            ok = bool(lat.get("packets")) and bool(metrics)
            rows.append({"kind": KIND, "behavior": t["behavior"], "variant": variant,
                         "repetition": t["repetition"], "status": "ok" if ok else "failed",
                         "metrics": metrics, "reason": "" if ok else
                         (lat.get("note") or "no latency packet received"),
                         "primary_metric": "latency_p99_us"})
    return pd.DataFrame(rows, columns=cols)


__all__ = ["KIND", "METRICS", "latency_samples"]
