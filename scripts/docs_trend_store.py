#!/usr/bin/env python3
"""Fill a results store with 30 synthetic nights (a MODEL, labelled so) for the trend
picture of docs/trend.md: End at 64 B steps down 12 % from night 20, IPv6 stays flat.

    .venv/bin/python scripts/docs_trend_store.py DIR     # then: srperf trend --results DIR

Used by scripts/docs_images.sh; the histories are srperf.results.trend_synth's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from srperf.results.store import ResultStore
from srperf.results.trend_synth import Shape, fill


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a new results directory")
    args = ap.parse_args()
    args.results.mkdir(parents=True, exist_ok=True)
    with ResultStore(args.results / "srperf.sqlite") as store:
        fill(store, [("end", 64), ("ipv6", 64)], 30, 0.02,
             {("end", 64): Shape("step", -12.0, 20)}, testbed="model")
    print(f"MODEL store: 30 synthetic nights in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
