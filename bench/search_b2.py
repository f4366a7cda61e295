#!/usr/bin/env python3
"""B2: repeatability of PDR searches on the virtual testbed (real kernel).

Side by side in ONE interleaved run: for each repeat, for each behavior, the
behavior is configured once and searched with our default search and with
SRPerf's bisection (Algorithm 1, one trial per rate, SRPerf accuracy, trials
scaled to --bisect-trial-s).  Prints per algorithm and behavior: mean, CV,
range of the PDR, the ranking of behaviors in each repeat, and the CV ratio.

    .venv/bin/python bench/search_b2.py [--repeats 5] [--behaviors ipv6,end,h_encaps]
                                        [--trials-json FILE] [--queue-pkts N]
                                        [--queue-mode hold|qdisc]

Needs root; builds a virtual testbed with prefix `srpb2` and removes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

from srperf import behaviors as catalogue
from srperf.cfg_manager import CfgManager
from srperf.config.model import Testbed
from srperf.drivers.linux import QUEUE_MODES
from srperf.generators import create_generator
from srperf.orchestrator import describe_estimate
from srperf.search import DEFAULT_ALGORITHM, create
from srperf.search.base import SearchSettings
from srperf.search.bisect import BisectSearch
from srperf.testbeds.virtual import VirtualTestbed
from srperf.transports import for_testbed


def pair_orders(results: dict[tuple[str, str], list[float]], alg: str,
                names: list[str]) -> str:
    """For each pair of behaviors: in how many repeats the first beat the second,
    and the median of their per-repeat difference (%), so a pair whose order
    flips can be told from one that is reliably ordered."""
    parts = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs = list(zip(results[(alg, a)], results[(alg, b)]))
            if not pairs:
                continue
            wins = sum(x > y for x, y in pairs)
            diff = statistics.median(100 * (x / y - 1) for x, y in pairs)
            parts.append(f"{a}>{b} {wins}/{len(pairs)} (median {diff:+.1f} %)")
    return "; ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--behaviors", default="ipv6,end,h_encaps")
    ap.add_argument("--threshold", type=float, default=0.5, help="loss threshold, %%")
    ap.add_argument("--max-rate", type=float, default=1_500_000, help="pps")
    ap.add_argument("--bisect-trial-s", type=float, default=1.0,
                    help="bisect trial duration (SRPerf: 10 s; scaled for time)")
    ap.add_argument("--ours", default=DEFAULT_ALGORITHM)
    ap.add_argument("--trials-json", metavar="FILE",
                    help="also write every search with all its trials to FILE (JSON)")
    ap.add_argument("--queue-pkts", type=int, default=None,
                    help="the generator's queue, packets (0: none; default: the "
                    "generator's, 4096)")
    ap.add_argument("--queue-mode", choices=QUEUE_MODES, default=None,
                    help="where the queue is (default: the generator's, hold)")
    args = ap.parse_args()

    tb = Testbed(name="b2", prefix="srpb2")
    options = {k: v for k, v in (("queue_pkts", args.queue_pkts),
                                 ("queue_mode", args.queue_mode)) if v is not None}
    tb = dataclasses.replace(tb, tester=dataclasses.replace(
        tb.tester, options={**tb.tester.options, **options}))
    vt = VirtualTestbed(tb)
    names = args.behaviors.split(",")
    algs = {
        args.ours: SearchSettings(thresholds_pct=(args.threshold,), min_rate_pps=50_000,
                                  max_rate_pps=args.max_rate, accuracy_pps=5_000),
        "bisect": BisectSearch.srperf_settings(args.bisect_trial_s / 10.0,
                                               thresholds_pct=(args.threshold,),
                                               max_rate_pps=args.max_rate),
    }
    results: dict[tuple[str, str], list[float]] = {(a, b): [] for a in algs for b in names}
    estimates: dict[tuple[str, str], list[float]] = {(a, b): [] for a in algs for b in names}
    costs: dict[str, list[float]] = {a: [] for a in algs}
    dump: list[dict[str, object]] = []
    started = time.monotonic()
    transport = for_testbed(tb)
    try:
        vt.up()
        cfg = CfgManager(transport, "linux", catalogue.cfg_env(tb))
        gen = create_generator(tb)
        print(f"generator queue: {getattr(gen, 'queue_pkts', None)} packets, "
              f"{getattr(gen, 'queue_mode', None)}")
        for rep in range(1, args.repeats + 1):
            for name in names:
                beh = catalogue.get(name)
                cfg.apply(beh.cfg_function, name)
                gen.prepare(bytes(beh.build_frame(tb, 64)))
                order = list(algs) if rep % 2 else list(reversed(algs))
                for alg in order:
                    settings = dataclasses.replace(algs[alg], seed=rep)
                    res = create(alg, settings).run(gen.trial)
                    goal = res.goals[0]
                    value = goal.lower_bound_pps if goal.status in ("ok", "at_max") else None
                    if value is not None:
                        results[(alg, name)].append(value / 1e3)
                    if goal.estimate_pps is not None:
                        estimates[(alg, name)].append(goal.estimate_pps / 1e3)
                    costs[alg].append(res.trial_seconds)
                    dump.append({"repeat": rep, "behavior": name, "algorithm": alg,
                                 "goal": dataclasses.asdict(goal),
                                 "trials": [dataclasses.asdict(t) for t in res.trials]})
                    print(f"rep {rep} {name:<9} {alg:<9} {goal.status:<9} "
                          f"[{(goal.lower_bound_pps or 0) / 1e3:7.1f}, "
                          f"{(goal.upper_bound_pps or 0) / 1e3:7.1f}] kpps "
                          f"{res.n_trials:3d} trials {res.trial_seconds:6.1f} trial-s"
                          f"{describe_estimate(goal)}", flush=True)
                cfg.clean()
        gen.close()
    finally:
        if args.trials_json:
            Path(args.trials_json).write_text(json.dumps(dump, indent=1, default=str))
        transport.close()  # removes the pushed CFG script's work directory
        vt.down()

    print(f"\nB2 PDR@{args.threshold}% on the virtual testbed, {args.repeats} interleaved "
          f"repeats, {time.monotonic() - started:.0f} s wall")
    print(f"{'algorithm':<10} {'behavior':<9} {'n':>2} {'mean':>8} {'CV %':>6} {'min':>8} "
          f"{'max':>8}  (kpps; reported PDR = lower bound) | estimates: n, mean, CV %")
    cvs: dict[str, list[float]] = {a: [] for a in algs}
    for alg in algs:
        for name in names:
            v = results[(alg, name)]
            mean = statistics.mean(v) if v else float("nan")
            cv = 100 * statistics.stdev(v) / mean if len(v) > 1 else float("nan")
            cvs[alg].append(cv)
            e = estimates[(alg, name)]
            e_mean = statistics.mean(e) if e else float("nan")
            e_cv = 100 * statistics.stdev(e) / e_mean if len(e) > 1 else float("nan")
            print(f"{alg:<10} {name:<9} {len(v):>2} {mean:8.1f} {cv:6.1f} "
                  f"{min(v, default=float('nan')):8.1f} {max(v, default=float('nan')):8.1f}"
                  f" | {len(e):>2} {e_mean:8.1f} {e_cv:6.1f}")
    for alg in algs:
        stable = 0
        ref = None
        for rep in range(args.repeats):
            try:
                ranking = tuple(sorted(names, key=lambda b: -results[(alg, b)][rep]))
            except IndexError:
                continue
            ref = ref or tuple(sorted(names, key=lambda b: -statistics.median(results[(alg, b)])))
            stable += ranking == ref
        print(f"{alg}: ranking {' > '.join(ref or ())} in {stable} of {args.repeats} repeats; "
              f"median CV {statistics.median(cvs[alg]):.1f} %; "
              f"mean trial-s per search {statistics.mean(costs[alg]):.1f}")
        print(f"  pairs: {pair_orders(results, alg, names)}")
    ours, theirs = statistics.median(cvs[args.ours]), statistics.median(cvs["bisect"])
    print(f"CV ratio {args.ours}/bisect (median over behaviors): {ours / theirs:.2f} "
          "(target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
