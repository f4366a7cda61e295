#!/usr/bin/env python3
"""Size and build time of the HTML trend report for 100 nights x 20 tests.

Fills a fresh SQLite store with synthetic nights (:mod:`srperf.results.trend_synth`,
a model: 20 tests = 10 behaviors x 2 frame sizes, 3 repetitions each, a -10 % step
in a few tests), then times what ``srperf trend --html`` does: read the store,
group every test with jumpavg, render the page.  Prints the page's size (target
<= 5 MB) and the seconds to build it (target <= 3 s, median of ``--repeat``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from srperf.results.store import ResultStore
from srperf.results.trend import trends
from srperf.results.trend_report import write_trend_report
from srperf.results.trend_synth import Shape, fill


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=100)
    ap.add_argument("--behaviors", type=int, default=10)
    ap.add_argument("--sizes", default="64,1500")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--output", help="keep the page here (default: a temporary directory)")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    tests = [(f"beh{b}", int(s)) for b in range(args.behaviors) for s in args.sizes.split(",")]
    shapes = {t: Shape("step", -10.0, args.nights * 2 // 3) for t in tests[::5]}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.output) if args.output else Path(tmp) / "trend.html"
        with ResultStore(Path(tmp) / "srperf.sqlite") as store:
            t0 = time.perf_counter()
            fill(store, tests, args.nights, 0.04, shapes)
            print(f"MODEL store: {args.nights} nights x {len(tests)} tests "
                  f"({time.perf_counter() - t0:.1f} s to write)")
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                items = trends(store)
                write_trend_report(items, out)
                times.append(time.perf_counter() - t0)
        size = out.stat().st_size
        regressions = sum(1 for t in items if t.cls == "regression")
        print(f"tests {len(items)}, regressions {regressions} (planted {len(shapes)})")
        print(f"page size: {size / 1e6:.2f} MB (target <= 5 MB)")
        print(f"build time: median {statistics.median(times):.2f} s of {args.repeat} "
              f"(read store + jumpavg + render; target <= 3 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
