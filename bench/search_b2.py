#!/usr/bin/env python3
"""B2: repeatability of PDR searches on the virtual testbed (real kernel).

Side by side in ONE interleaved run: for each repeat, for each behavior, the
behavior is configured once and searched with our default search (or --ours),
with SRPerf's bisection (Algorithm 1, one trial per rate, SRPerf accuracy, trials
scaled to --bisect-trial-s) and with every --also algorithm (same settings as
ours).  Prints per algorithm and behavior: mean, CV,
range of the PDR, the ranking of behaviors in each repeat, and the CV ratio.

    .venv/bin/python bench/search_b2.py [--repeats 5] [--behaviors ipv6,end,h_encaps]
                                        [--ours lossfit] [--also mlr,...]
                                        [--trials-json FILE] [--queue-pkts N]
                                        [--queue-mode hold|qdisc] [--prefix srpb2]
                                        [--first-repeat N] [--summary-from FILE ...]
                                        [--max-rate PPS] [--no-bisect]

An algorithm written ``NAME:stop`` (``--ours bisect:stop --also bisect``) is NAME
with ``early_stop`` (a trial ends once its certain losses decide it), so a search
can be compared with and without it in one sitting.

Needs root; builds a virtual testbed with prefix `srpb2` (--prefix) and removes
it.  A long comparison can run in parts (--first-repeat numbers the repeats of a
part, --trials-json keeps each) and be summarised together with --summary-from.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from srperf.measure.bench_support import BenchSession, bench_session, cv_pct
from srperf.behaviors import catalogue
from srperf.config.model import TestbedConfig
from srperf.drivers.linux import QUEUE_MODES
from srperf.measure.orchestrator import describe_estimate
from srperf.search.registry import DEFAULT_ALGORITHM
from srperf.search.base import SearchSettings
from srperf.search.bisect import BisectSearch


Values = dict[tuple[str, str], list[float | None]]
"""Per (algorithm, behavior): the reported PDR of each repeat (kpps), None
where the search reported none (e.g. generator-limited)."""


def present(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def paired(xs: list[float | None], ys: list[float | None]) -> list[tuple[float, float]]:
    """The repeats where both have a value, as (x, y)."""
    return [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]


def gap_for_order(cv_a: float, cv_b: float, repeats: int, confidence: float = 0.95) -> float:
    """Smallest gap between two behaviors (%) that searches with these CVs (%)
    put in the same order in all ``repeats`` repeats with ``confidence``.

    Normal, independent errors: one repeat orders the pair right with
    probability Phi(gap / sqrt(cv_a^2 + cv_b^2)), all of them with that to the
    power ``repeats``.
    """
    z = statistics.NormalDist().inv_cdf(confidence ** (1.0 / repeats))
    return z * math.hypot(cv_a, cv_b)


def pair_orders(results: Values, cvs: dict[tuple[str, str], float], alg: str,
                names: list[str]) -> str:
    """For each pair of behaviors: in how many repeats (with both values) the
    first beat the second, the median of their per-repeat difference (%), and
    the gap this algorithm's CVs on this run would need for the same order in
    every repeat (95 %), so a pair whose order flips because the search is
    noisy can be told from one whose gap is below what the testbed resolves.
    ``cvs``: CV (%) per (algorithm, behavior)."""
    parts = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pairs = paired(results[(alg, a)], results[(alg, b)])
            if not pairs:
                continue
            wins = sum(x > y for x, y in pairs)
            diff = statistics.median(100 * (x / y - 1) for x, y in pairs)
            need = gap_for_order(cvs[(alg, a)], cvs[(alg, b)], len(pairs))
            parts.append(f"{a}>{b} {wins}/{len(pairs)} (median {diff:+.1f} %, "
                         f"{len(pairs)}/{len(pairs)} needs >= {need:.1f} %)")
    return "; ".join(parts)


def same_repeat_correlation(results: Values, algs: list[str], behavior: str) -> str:
    """Pearson correlation over repeats of two algorithms' values for one behavior."""
    pairs = paired(results[(algs[0], behavior)], results[(algs[1], behavior)])
    if len(pairs) < 3:
        return "n/a"
    try:
        return f"{statistics.correlation(*zip(*pairs)):+.2f}"
    except statistics.StatisticsError:  # one of them constant
        return "n/a"


def median_cv(cvs: dict[tuple[str, str], float], alg: str, names: list[str]) -> float:
    """Median over behaviors of one algorithm's CV, %."""
    return statistics.median(cvs[(alg, name)] for name in names)


def summarize(dump: list[dict[str, Any]], names: list[str], algs: list[str], ours: str,
              threshold: float, repeats: int, wall_s: float | None) -> None:
    """Print the B2 tables from the searches in ``dump`` (one record per search)."""
    results: Values = {(a, b): [None] * repeats for a in algs for b in names}
    estimates: dict[tuple[str, str], list[float]] = {(a, b): [] for a in algs for b in names}
    costs: dict[str, list[float]] = {a: [] for a in algs}
    sending: dict[str, list[float]] = {a: [] for a in algs}
    statuses: dict[str, list[str]] = {a: [] for a in algs}
    for rec in dump:
        goal, key = rec["goal"], (rec["algorithm"], rec["behavior"])
        if key not in results:
            continue
        value = goal["lower_bound_pps"] if goal["status"] in ("ok", "at_max") else None
        results[key][rec["repeat"] - 1] = None if value is None else value / 1e3
        if goal.get("estimate_pps") is not None:
            estimates[key].append(goal["estimate_pps"] / 1e3)
        costs[rec["algorithm"]].append(rec.get("trial_s", sum(
            t["duration_s"] for t in rec["trials"])))
        # every attempt of every trial (the driver re-runs a generator-limited one)
        sending[rec["algorithm"]].append(sum(
            sum((t.get("extra") or {}).get("elapsed_s_per_attempt") or [t["elapsed_s"]])
            for t in rec["trials"]))
        statuses[rec["algorithm"]].append(goal["status"])
    wall = f", {wall_s:.0f} s wall" if wall_s is not None else ""
    print(f"\nB2 PDR@{threshold}% on the virtual testbed, {repeats} interleaved repeats{wall}")
    print(f"{'algorithm':<10} {'behavior':<9} {'n':>2} {'mean':>8} {'CV %':>6} {'min':>8} "
          f"{'max':>8}  (kpps; reported PDR = lower bound) | estimates: n, mean, CV %")
    cvs: dict[tuple[str, str], float] = {}
    for alg in algs:
        for name in names:
            v = present(results[(alg, name)])
            mean = statistics.mean(v) if v else float("nan")
            cv = cvs[(alg, name)] = cv_pct(v)
            e = estimates[(alg, name)]
            e_mean = statistics.mean(e) if e else float("nan")
            e_cv = cv_pct(e)
            print(f"{alg:<10} {name:<9} {len(v):>2} {mean:8.1f} {cv:6.1f} "
                  f"{min(v, default=float('nan')):8.1f} {max(v, default=float('nan')):8.1f}"
                  f" | {len(e):>2} {e_mean:8.1f} {e_cv:6.1f}")
    for alg in algs:
        ref = tuple(sorted(names, key=lambda b: -statistics.median(
            present(results[(alg, b)]) or [0.0])))
        stable = complete = 0
        for rep in range(repeats):
            row = [results[(alg, b)][rep] for b in names]
            if any(x is None for x in row):
                continue
            complete += 1
            stable += tuple(sorted(names, key=lambda b: -(results[(alg, b)][rep] or 0.0))) == ref
        print(f"{alg}: ranking {' > '.join(ref)} in {stable} of {repeats} repeats "
              f"({repeats - complete} without a value for every behavior); "
              f"median CV {median_cv(cvs, alg, names):.1f} %; "
              f"mean trial-s per search {statistics.mean(costs[alg]):.1f} "
              f"(median {statistics.median(costs[alg]):.1f}; sending, all attempts: mean "
              f"{statistics.mean(sending[alg]):.1f} s); statuses "
              + ", ".join(f"{st} {statuses[alg].count(st)}"
                          for st in sorted(set(statuses[alg]))))
        print(f"  pairs: {pair_orders(results, cvs, alg, names)}")
    if len(algs) == 2:
        print(f"same-repeat correlation of {algs[0]} and {algs[1]} (> 0: the SUT's "
              "capacity moved between repeats, for both searches alike): "
              + ", ".join(f"{b} {same_repeat_correlation(results, algs, b)}" for b in names))
    if "bisect" in algs:
        mine, theirs = median_cv(cvs, ours, names), median_cv(cvs, "bisect", names)
        print(f"CV ratio {ours}/bisect (median over behaviors): {mine / theirs:.2f} "
              "(target <= 0.5)")
    def med(alg: str, behavior: str) -> float:
        return statistics.median(present(results[(alg, behavior)]) or [math.nan])

    for other in algs:
        if other != ours and costs[other] and costs[ours]:
            ratios = ", ".join(f"{b} {med(ours, b) / med(other, b):.3f}" for b in names)
            print(f"trial-s ratio {ours}/{other}: "
                  f"{statistics.mean(costs[ours]) / statistics.mean(costs[other]):.2f}; "
                  f"median PDR ratio {ours}/{other}: {ratios}")


def variant(label: str, settings: SearchSettings) -> SearchSettings:
    """``settings`` for an algorithm label: ``NAME`` as is, ``NAME:stop`` with early_stop."""
    name, _, kind = label.partition(":")
    if kind not in ("", "stop"):
        sys.exit(f"algorithm {label!r}: only NAME or NAME:stop")
    return dataclasses.replace(settings, early_stop=kind == "stop")


def run_repeats(s: BenchSession, tb: TestbedConfig, names: list[str],
                algs: dict[str, SearchSettings], repeats: int,
                dump: list[dict[str, Any]], first: int = 1) -> None:
    """Search every behavior with every algorithm in each repeat (numbered from
    ``first``), the algorithms' order alternating; append one record per search
    (with its trials) to ``dump``."""
    for rep in range(first, first + repeats):
        for name in names:
            beh = catalogue.get(name)
            s.configure(beh)
            s.prepare(beh, 64)
            order = list(algs) if rep % 2 else list(reversed(algs))
            for alg in order:
                settings = dataclasses.replace(algs[alg], seed=rep)
                res = s.search(beh, settings, alg.partition(":")[0], s.key(name, rep))
                goal = res.goals[0]
                dump.append({"repeat": rep, "behavior": name, "algorithm": alg,
                             "trial_s": res.trial_seconds,
                             "goal": dataclasses.asdict(goal),
                             "trials": [dataclasses.asdict(t) for t in res.trials]})
                print(f"rep {rep} {name:<9} {alg:<9} {goal.status:<9} "
                      f"[{(goal.lower_bound_pps or 0) / 1e3:7.1f}, "
                      f"{(goal.upper_bound_pps or 0) / 1e3:7.1f}] kpps "
                      f"{res.n_trials:3d} trials {res.trial_seconds:6.1f} trial-s"
                      f"{describe_estimate(goal)}", flush=True)
            s.unconfigure(beh)


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
    ap.add_argument("--also", default="",
                    help="more algorithms searched side by side, with our settings "
                    "(comma-separated, e.g. mlr)")
    ap.add_argument("--prefix", default="srpb2", help="the virtual testbed's name prefix")
    ap.add_argument("--no-bisect", action="store_true",
                    help="leave SRPerf's bisection out (compare --ours and --also only)")
    ap.add_argument("--first-repeat", type=int, default=1,
                    help="number of the first repeat (to run a comparison in parts)")
    ap.add_argument("--summary-from", metavar="FILE", nargs="+",
                    help="print the summary of runs saved with --trials-json, run nothing")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    names = args.behaviors.split(",")
    if args.summary_from:
        saved = [rec for f in args.summary_from for rec in json.loads(Path(f).read_text())]
        algs_seen = list(dict.fromkeys(rec["algorithm"] for rec in saved))
        summarize(saved, names, algs_seen, args.ours, args.threshold,
                  max(rec["repeat"] for rec in saved), None)
        return 0

    tb = TestbedConfig(name="b2", prefix=args.prefix)
    options = {k: v for k, v in (("queue_pkts", args.queue_pkts),
                                 ("queue_mode", args.queue_mode)) if v is not None}
    tb = dataclasses.replace(tb, tester=dataclasses.replace(
        tb.tester, options={**tb.tester.options, **options}))
    ours = SearchSettings(thresholds_pct=(args.threshold,), min_rate_pps=50_000,
                          max_rate_pps=args.max_rate, accuracy_pps=5_000)
    algs = {args.ours: variant(args.ours, ours)}
    if not args.no_bisect:
        algs["bisect"] = BisectSearch.srperf_settings(args.bisect_trial_s / 10.0,
                                                      thresholds_pct=(args.threshold,),
                                                      max_rate_pps=args.max_rate)
    for extra in filter(None, args.also.split(",")):
        algs[extra] = variant(extra, ours)
    dump: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        with bench_session("search_b2", tb, "linux") as s:
            gen = s.generator(catalogue.get(names[0]))
            print(f"generator queue: {getattr(gen, 'queue_pkts', None)} packets, "
                  f"{getattr(gen, 'queue_mode', None)}")
            run_repeats(s, tb, names, algs, args.repeats, dump, args.first_repeat)
    finally:
        if args.trials_json:
            Path(args.trials_json).write_text(json.dumps(dump, indent=1, default=str))

    summarize(dump, names, list(algs), args.ours, args.threshold,
              args.first_repeat + args.repeats - 1, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
