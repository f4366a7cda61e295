#!/usr/bin/env python3
"""Does a trial right after an overloaded one lose frames, by the rest between them?

On a virtual testbed of its own prefix, with one behavior configured, each case
runs an overload trial (``--high`` pps), sleeps the case's rest, then runs a
light trial (``--low`` pps) and records its loss; the cases are interleaved
``--rounds`` times so slow drifts of the machine hit them alike.  The
generator's own rest is off (``tester.options.rest_s: 0``): the rest is the
case's.  Prints per rest: the light trials' losses and how many exceeded the
threshold (0.5 %).  This is the figure behind ``tester.options.rest_s``
(drivers/linux.py).  ``--baseline`` adds a case whose first trial is at ``--low``
too, right after it (no overload, no rest), and with ``--clean-rests`` after each of
those rests: what the light trial loses anyway, and what a second trial at that
rate loses by the time between the two.  ``--stopped`` runs
each rest twice, once with the overload trial whole and once stopped early as a
bisection would stop it (``search.early_stop``: more than 2 % of its frames refused).

    .venv/bin/python bench/rest_after_overload.py [--rests 0,0.01,0.03,0.05,0.1]
        [--rounds 6] [--behavior end] [--high 1200000] [--low 431250] [--baseline]
        [--stopped] [--prefix srprest]

Needs root.  Compare the rests of one sitting only.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from srperf.behaviors import catalogue as behaviors
from srperf.forwarders import registry as forwarders
from srperf.config.loader import load_testbed
from srperf.measure.session import MeasurementSession
from srperf.testbeds.virtual import VirtualTestbed

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD = 0.005
STOP_SHARE = 4 * THRESHOLD
"""``--stopped``: the overload trial stops once it lost more than this share of its
frames, the bound bisect sets for a first trial at a rate (near_factor 4 x 0.5 %)."""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rests", default="0,0.01,0.03,0.05,0.1", help="seconds, comma-separated")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--behavior", default="end")
    p.add_argument("--high", type=float, default=1_200_000.0, help="overload trial, pps")
    p.add_argument("--low", type=float, default=431_250.0, help="light trial, pps")
    p.add_argument("--baseline", action="store_true",
                   help="also a case without overload: two light trials back to back")
    p.add_argument("--clean-rests", default="",
                   help="with --baseline: also these rests (s) between the two light trials")
    p.add_argument("--stopped", action="store_true",
                   help="each rest also after an overload trial stopped early")
    p.add_argument("--prefix", default="srprest")
    args = p.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    rests: list[float | None] = [float(r) for r in args.rests.split(",")]
    cases: list[tuple[float | None, bool, float]] = [(r, False, 0.0) for r in rests]
    if args.stopped:
        cases = [(r, stop, 0.0) for r in rests for stop in (False, True)]
    if args.baseline:
        clean = [0.0] + [float(r) for r in args.clean_rests.split(",") if r]
        cases[:0] = [(None, False, r) for r in clean]
    stop_lost = math.floor(STOP_SHARE * args.high)
    data = yaml.safe_load((ROOT / "testbed" / "virtual.yaml").read_text())
    data["prefix"] = args.prefix
    data.setdefault("tester", {})["options"] = {"rest_s": 0.0}
    work = Path(tempfile.mkdtemp(prefix="srperf-rest-"))
    (work / "testbed.yaml").write_text(yaml.safe_dump(data))
    beh = behaviors.get(args.behavior)
    losses: dict[tuple[float | None, bool, float], list[float]] = {c: [] for c in cases}
    with MeasurementSession(VirtualTestbed(load_testbed(work / "testbed.yaml")),
                            forwarders.get("linux")) as session:
        session.configure(beh)
        session.prepare(beh, 64)
        measure = session.measure_fn(beh)
        for r in range(args.rounds):
            for case in cases:
                rest, stop, clean_rest = case
                time.sleep(0.5)   # every case starts from a rested SUT
                first = args.high if rest is not None else args.low
                high = (measure(first, 1.0, stop_lost=stop_lost) if stop
                        else measure(first, 1.0))
                time.sleep(clean_rest if rest is None else rest)
                low = measure(args.low, 1.0)
                losses[case].append(low.loss_ratio)
                print(f"round {r + 1} {_case(case)}: {first:.0f} pps for "
                      f"{high.duration_s:.2f} s lost {high.loss_ratio:7.2%}, then "
                      f"{args.low:.0f} pps lost {low.loss_ratio:7.3%}", flush=True)
    print(f"\n{args.behavior}: a {args.low:.0f} pps trial after a {args.high:.0f} pps one")
    print(f"{'case':>24} {'failed':>8} {'median loss':>12}  losses")
    for case in cases:
        v = losses[case]
        failed = sum(x > THRESHOLD for x in v)
        print(f"{_case(case):>24} {failed:>3} of {len(v):<2} {statistics.median(v):11.3%}  "
              + " ".join(f"{x:.2%}" for x in v))
    return 0


def _case(case: tuple[float | None, bool, float]) -> str:
    rest, stop, clean_rest = case
    if rest is None:
        return f"no overload, {clean_rest * 1e3:.0f} ms"
    return f"rest {rest * 1e3:5.0f} ms" + (" (stopped)" if stop else "")


if __name__ == "__main__":
    sys.exit(main())
