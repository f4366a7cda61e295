"""The generator's own latency: the same probe stream over a plain veth pair.

A latency trial's figures hold the SUT's part and the generator's: srgen's stamp
before ``sendmmsg``, the tester's tx veth, the receive path up to the kernel's
receive stamp, and whatever the shared CPUs add.  A *calibration* runs the same
trial (same frame and probe, same rate, same srgen options) with the SUT replaced by
a plain veth pair in a namespace of its own, so a reader sees what is the SUT's.

It is measured once per run (at the first behavior's latency loads, when the
latency block's ``calibrate`` is on), stored with the run as trials of purpose
``latency_calibration`` (behavior ``veth``), so every run carries the calibration of
its testbed; :func:`latest` finds the newest one of a testbed in a store.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pandas as pd

from srperf.util.netns import veth_pair_namespace
from srperf.results import frames
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import LatencyPoint

log = logging.getLogger(__name__)

PURPOSE = "latency_calibration"
"""``extra["purpose"]`` of calibration trials."""
BEHAVIOR = "veth"
"""Behavior name the calibration trials are stored under."""


def calibration_trial(gen: Any, rate_pps: float, duration_s: float,
                      stream_pps: float) -> Any:
    """A latency trial like ``gen``'s (a prepared :class:`LinuxGenerator`) over a plain veth
    pair t0 -> t1 (XDP sink on t1) in a namespace ``<gen.ns>-lcal-<tag>``, removed after."""
    from srperf.drivers import linux_sink
    from srperf.drivers.linux import LinuxGenerator

    if gen.base_frame is None:
        raise ValueError("calibration before prepare(): no frame")
    with veth_pair_namespace(f"{gen.ns or 'srperf'}-lcal") as ns:
        linux_sink.attach_sink(ns, "t1")
        twin = LinuxGenerator(ns, "t0", "t1", cpu=gen.cpu, tolerance=gen.tolerance,
                              drain_s=gen.drain_s, retries=gen.retries, batch=gen.batch,
                              max_lag_s=gen.max_lag_s, quantum_s=gen.quantum_s,
                              fifo_priority=gen.fifo_priority, mode=gen.mode,
                              queue_pkts=gen.queue_pkts, queue_mode=gen.queue_mode,
                              resident=gen.resident, settle_s=gen.settle_s,
                              rest_s=gen.rest_s)
        try:
            twin.prepare(gen.base_frame)
            return twin.latency_trial(rate_pps, duration_s, stream_pps)
        finally:
            twin.close()


def calibrate_points(gen: Any, points: list[LatencyPoint], cfg: Any,
                     store: ResultStore | None, run_id: str | None,
                     key: TrialKey) -> list[LatencyPoint]:
    """``points`` with the generator's own latency at each point's rate (stored as
    calibration trials of the run); unchanged when ``gen`` cannot calibrate."""
    if not hasattr(gen, "base_frame") or getattr(gen, "base_frame", None) is None:
        return points
    out = []
    for p in points:
        if p.latency is None or p.rate_pps <= 0:
            out.append(p)
            continue
        trial = calibration_trial(gen, p.rate_pps, cfg.duration_s,
                                  min(cfg.stream_pps, p.rate_pps))
        trial = dataclasses.replace(trial, extra={**trial.extra, "purpose": PURPOSE,
                                                  "pdr_fraction": p.fraction,
                                                  "calibrates": key.behavior})
        if store is not None and run_id is not None:
            store.add_trial(run_id, dataclasses.replace(key, behavior=BEHAVIOR), trial)
        out.append(dataclasses.replace(p, calibration=trial.extra.get("latency")))
    return out


def calibration_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """The calibration trials among ``trials`` (a store's trials table), with their
    latency dict in a column ``latency``."""
    if trials.empty:
        return trials.assign(latency=[])
    extra = trials["extra"].fillna("").map(frames.parse_json)
    mask = extra.map(lambda e: e.get("purpose") == PURPOSE)
    out = trials[mask].copy()
    out["latency"] = extra[mask].map(lambda e: e.get("latency"))
    return out


def latest(store: ResultStore, testbed: str) -> tuple[str, pd.DataFrame] | None:
    """(run id, calibration trials) of the newest run of ``testbed`` that has any."""
    runs = store.frame("runs")
    if runs.empty:
        return None
    runs = runs[runs["testbed"] == testbed].sort_values("started", ascending=False)
    for run_id in runs["run_id"]:
        rows = calibration_rows(store.frame("trials", run_id))
        if not rows.empty:
            return str(run_id), rows
    return None


__all__ = ["BEHAVIOR", "PURPOSE", "calibrate_points", "calibration_rows", "calibration_trial",
           "latest"]
