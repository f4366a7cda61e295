#!/usr/bin/env python3
"""Seconds to build the HTML report of 10 runs x 20 behaviors x 10 repetitions.

The data is SYNTHETIC (made up here, written to a temporary SQLite store with
purpose 'bench'; nothing is measured): each search has 12 trials around a
made-up capacity, and 2 behaviors of each run are unsupported. The figure is
the wall time of srperf.results.report.write_report (read the store, compute
the statistics, draw the bar charts, shape the trial data of the 1800 searches
whose two plots each the browser draws when their group is opened, render the
HTML and the Markdown summary), and the HTML file's size. Targets: at most 2 s
and 5 MB on the 2-vCPU host (16.4 MB and 1.9-2.0 s when every search plot was
an inline SVG drawn in Python).

    .venv/bin/python bench/report_speed.py [--runs 10] [--behaviors 20] [--reps 10]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from srperf.results import report, schema
from srperf.results.store import ResultStore


def synthesize(store: ResultStore, runs: int, behaviors: int, reps: int,
               trials_per_search: int = 12, seed: int = 1) -> list[str]:
    """Write synthetic runs straight into the tables; returns their ids."""
    rng = random.Random(seed)
    names = [f"beh{i:02d}" for i in range(behaviors)]
    ids = []
    for r in range(runs):
        run = store.begin_run("synthetic", "synthetic", "linux" if r % 2 == 0 else "ebpf",
                              {"synthetic": True, "nodes": {"tester": {"cpu": "none"},
                                                            "sut": {"kernel": "none"}}},
                              purpose="bench")
        ids.append(run)
        trial_rows, search_rows, outcome_rows = [], [], []
        seq = 0
        for rep in range(1, reps + 1):
            for b, name in enumerate(names):
                if b >= behaviors - 2:
                    if rep == 1:
                        outcome_rows.append(dict(run_id=run, behavior=name, forwarder="linux",
                                                 packet_size=64, status="unsupported",
                                                 reason="synthetic: not offered"))
                    continue
                seq += 1
                cap = (500e3 + 40e3 * b) * rng.gauss(1.0, 0.03)
                lo, hi = 75e3, 1.5e6
                for _ in range(trials_per_search):
                    rate = (lo + hi) / 2
                    loss = 0.0 if rate <= cap else min(0.5, (rate - cap) / rate + 0.002)
                    intended = int(rate)
                    trial_rows.append(dict(
                        run_id=run, behavior=name, forwarder="linux", packet_size=64,
                        repetition=rep, search_seq=seq, rate_pps=rate, duration_s=1.0,
                        intended=intended, sent=intended, refused=0,
                        received=int(intended * (1 - loss)), elapsed_s=1.0,
                        offered_rate_pps=rate, loss_ratio=loss, generator_limited=0,
                        counters_consistent=1, note="", extra=json.dumps({})))
                    lo, hi = (rate, hi) if loss <= 0.005 else (lo, rate)
                search_rows.append(dict(
                    run_id=run, behavior=name, forwarder="linux", packet_size=64,
                    repetition=rep, search_seq=seq, algorithm="bisect", threshold_pct=0.5,
                    status="ok", lower_pps=lo, upper_pps=hi, n_trials=trials_per_search,
                    trial_seconds=float(trials_per_search), wall_s=13.0, note="",
                    estimate_pps=(lo + hi) / 2, estimate_low_pps=lo * 0.99,
                    estimate_high_pps=hi * 1.01))
        with store.engine.begin() as conn:
            conn.execute(schema.trials.insert(), trial_rows)
            conn.execute(schema.searches.insert(), search_rows)
            conn.execute(schema.outcomes.insert(), outcome_rows)
        store.end_run(run, "finished")
    return ids


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--behaviors", type=int, default=20)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3, help="times the report is built")
    p.add_argument("--keep", help="copy the last HTML report here")
    args = p.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    work = Path(tempfile.mkdtemp(prefix="srperf-bench-report-"))
    try:
        with ResultStore(work / "srperf.sqlite") as store:
            ids = synthesize(store, args.runs, args.behaviors, args.reps)
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                report.write_report(store, ids, work / "report.html", work / "report.md",
                                    title="SYNTHETIC data: report speed benchmark")
                times.append(time.perf_counter() - start)
        html = work / "report.html"
        print(f"SYNTHETIC data: {args.runs} runs x {args.behaviors} behaviors x {args.reps} "
              f"repetitions ({args.runs * (args.behaviors - 2) * args.reps} searches, "
              f"12 trials each)")
        print(f"report (HTML {html.stat().st_size / 1e6:.1f} MB + Markdown): "
              f"min {min(times):.2f} s, max {max(times):.2f} s over {len(times)} builds "
              f"(targets: at most 5 MB and 2 s)")
        if args.keep:
            shutil.copy(html, args.keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
