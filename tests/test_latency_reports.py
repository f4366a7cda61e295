"""Latency in reports, compare and nightly (issue 37): the HDR percentile graph, a
latency regression flagged only beyond the noise of repeated trials, a trial without
probes never compared as a latency of zero.  No namespaces: trials are stored as the
linux driver stores them (figures from srgen's probe report)."""

from __future__ import annotations

import random
from pathlib import Path

from srperf.drivers.base import TrialResult
from srperf.drivers.latency import from_probes
from srperf.results.compare import REGRESSION, compare_runs, format_markdown
from srperf.results.latency_compare import latency_samples
from srperf.results.report import collect, render_html
from srperf.results.store import ResultStore, TrialKey


def _run(store: ResultStore, p50_ns: dict[str, float], reps: int = 3, seed: int = 1,
         lost_all: bool = False) -> str:
    rng = random.Random(seed)
    run_id = store.begin_run("lat", "tb", "linux", {})
    seq = 0
    for rep in range(1, reps + 1):
        for beh, base in p50_ns.items():
            seq += 1
            for frac in (0.1, 0.9):
                scale = (1.0 + frac) * rng.uniform(0.97, 1.03)
                values = [] if lost_all else [int(base * scale * rng.lognormvariate(0, 0.3))
                                              for _ in range(2000)]
                lat = from_probes({"offered": 2000, "received": len(values),
                                   "latency_ns": values})
                t = TrialResult(frac * 1e5, 1.0, 100000, 100000, 0, 100000, 1.0,
                                extra={"latency": lat.as_dict(), "purpose": "latency",
                                       "pdr_fraction": frac})
                store.add_trial(run_id, TrialKey(beh, "linux", 64, rep, seq), t)
    store.end_run(run_id, "finished")
    return run_id


def test_latency_regression_beyond_noise_is_flagged(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite") as store:
        base = _run(store, {"end": 10_000, "end_x": 12_000}, seed=1)
        same = _run(store, {"end": 10_000, "end_x": 12_000}, seed=2)
        worse = _run(store, {"end": 10_000, "end_x": 24_000}, seed=3)
        c = compare_runs(store, base, worse)
        lat = {(x.behavior, x.variant, x.metric): x.verdict for x in c.stateful}
        assert lat[("end_x", "64B 90% PDR", "latency_p50_us")] == REGRESSION
        assert lat[("end_x", "64B 10% PDR", "latency_p99_us")] == REGRESSION
        assert lat[("end", "64B 90% PDR", "latency_p50_us")] != REGRESSION
        assert c.verdict == REGRESSION     # what nightly judges on
        assert "latency_p50_us" in format_markdown(c)
        quiet = compare_runs(store, base, same)
        assert all(x.verdict != REGRESSION for x in quiet.stateful), \
            [(x.behavior, x.variant, x.metric, x.reason) for x in quiet.stateful]


def test_single_repetition_is_inconclusive_not_a_verdict(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite") as store:
        base = _run(store, {"end": 10_000}, reps=1)
        worse = _run(store, {"end": 30_000}, reps=1)
        c = compare_runs(store, base, worse)
        assert {x.verdict for x in c.stateful} == {"inconclusive"}


def test_no_probe_trial_is_failed_not_zero(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite") as store:
        base = _run(store, {"end": 10_000})
        gone = _run(store, {"end": 10_000}, lost_all=True)
        samples = latency_samples(store, gone)
        assert set(samples["status"]) == {"failed"}
        assert all(m == {} for m in samples["metrics"])
        assert "no probe received" in samples["reason"].iloc[0]
        c = compare_runs(store, base, gone)
        assert {x.verdict for x in c.stateful} == {REGRESSION}
        assert all("now failed" in x.reason for x in c.stateful)


def test_report_draws_the_percentile_graph(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_id = _run(store, {"end": 10_000}, reps=1)
        data = collect(store, [run_id])
        html = render_html(data)
    assert len(data.latency_graphs) == 1
    g = data.latency_graphs[0]
    assert g["png"].startswith("data:image/png;base64,") and "end 64 B rep 1" in g["title"]
    assert all("hdrh" not in row["latency"] for row in data.latency)
    assert "HDR latency graph: end 64 B rep 1" in html
