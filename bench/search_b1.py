#!/usr/bin/env python3
"""Benchmark B1: search algorithms on the MODEL SUT (drivers/simulated.py).

Nothing here is a measurement of a forwarder: every trial comes from the
simulated SUT's formulas (capacity 1 Mpps, loss = 1 - capacity / rate above
capacity, per-trial capacity jitter of 0 %, 1 % and 2 % relative sigma).  Each
algorithm runs against a fresh model with the same seed, side by side; the
error is the reported rate (lower bound) against the model's exact noiseless
PDR, relative.  Trials take no real time; "trial-s" is the sum of intended
trial durations, the figure that costs time on a real testbed.  "in width":
share of goals whose error is within the relative width; "bracket": share whose
[lower, upper] holds the true value.  Right of "|": the crossing estimate every
search also reports (srperf/search/estimate.py, fitted to all its trials): its
mean |error|, share within the width, share of goals whose 95 % interval is
closed on both ends, share of those intervals that hold the true value, and
"cov all": share of ALL goals whose interval (an open end reaching to 0 or
infinity) holds the true value, a goal without an estimate counting as missed.

Algorithms (all at the same relative width, min 100 kpps, max 1.5 Mpps):
  bisect-srperf  SRPerf Algorithm 1, SRPerf settings: 10 s trials x --scale,
                 one trial per rate, accuracy = width x true PDR (pps)
  bisect-1s      the same with trials as long as mlr's final trials
  bisect-rep3    bisect-1s with repeats near the threshold (2 of 3 majority)
  multi          shared-trial bisection, 1 s trials, repeats near threshold
  mlr            srperf's default search (srperf/search/mlr.py), settings below
  mlr-noval      mlr with validation_trials = 0 (no validation margin)
  mlrsearch      CSIT MLRsearch 1.2.1 with the same goal settings as mlr
  lossfit        srperf/search/lossfit.py: trials placed by a fit of every
                 trial's loss ratio, same goal settings (its estimate columns
                 are its own fit, srperf/search/lossmodel.py)

Run: /work/main/.venv/bin/python bench/search_b1.py [--seeds 300] [--width 0.005] [--noise ...]
         [--algorithms mlr,mlrsearch,lossfit] [--smoothing 0.01]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time


from srperf.drivers.simulated import SimulatedGenerator, SimulatedModel
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.search.bisect import BisectSearch

CAPACITY_PPS = 1_000_000.0
MIN_PPS, MAX_PPS = 100_000.0, 1_500_000.0


def settings_for(alg: str, thresholds: tuple[float, ...], width: float, true_pps: float,
                 scale: float, base: SearchSettings) -> tuple[str, SearchSettings]:
    """(registry name, settings) of one bench column."""
    accuracy = width * true_pps
    common = dict(thresholds_pct=thresholds, min_rate_pps=MIN_PPS, max_rate_pps=MAX_PPS,
                  relative_width=width, accuracy_pps=accuracy)
    if alg == "bisect-srperf":
        return "bisect", BisectSearch.srperf_settings(
            scale, thresholds_pct=thresholds, max_rate_pps=MAX_PPS, accuracy_pps=accuracy,
            relative_width=width)
    if alg == "bisect-1s":
        return "bisect", BisectSearch.srperf_settings(
            base.trial_duration_s / 10.0, thresholds_pct=thresholds, max_rate_pps=MAX_PPS,
            accuracy_pps=accuracy, relative_width=width)
    if alg == "bisect-rep3":
        return "bisect", dataclasses.replace(base, repeat_near_threshold=3, **common)
    if alg == "bisect-mrr":  # bisect-rep3 with the informed start (search.bisect_start: mrr)
        return "bisect", dataclasses.replace(base, repeat_near_threshold=3,
                                             bisect_start="mrr", **common)
    if alg == "bisect-short":  # bisect-rep3 with the short-trial first phase
        return "bisect", dataclasses.replace(base, repeat_near_threshold=3,
                                             bisect_start="short", **common)
    if alg == "multi":
        return "multi", dataclasses.replace(base, repeat_near_threshold=3, **common)
    if alg == "mlr-noval":
        return "mlr", dataclasses.replace(base, validation_trials=0, **common)
    return alg, dataclasses.replace(base, **common)


def run_cell(alg: str, noise: float, seeds: int, thresholds: tuple[float, ...], width: float,
             scale: float, base: SearchSettings, smoothing: float = 0.0
             ) -> tuple[dict[str, float], list[float]]:
    """Figures of one (algorithm, noise) cell, and the trial-seconds of each seed."""
    model = SimulatedModel(CAPACITY_PPS, smoothing=smoothing, capacity_jitter=noise)
    ts, ns, errs, inside, bracket, statuses = [], [], [], 0, 0, 0
    est_errs, covered, closed, covered_all = [], 0, 0, 0
    for seed in range(seeds):
        gen = SimulatedGenerator(model, seed=seed)
        # accuracy for bisect: width x the (first) goal's true value
        name, settings = settings_for(alg, thresholds, width, gen.true_pdr(max(thresholds)),
                                      scale, base)
        result = create(name, settings).run(gen.trial)
        ts.append(result.trial_seconds)
        ns.append(result.n_trials)
        for g in result.goals:
            true = gen.true_pdr(g.threshold_pct)
            if g.value_pps is None:
                statuses += 1
                errs.append(float("inf"))
                continue
            err = (g.value_pps - true) / true
            errs.append(err)
            inside += abs(err) <= width
            if g.lower_bound_pps is not None and g.upper_bound_pps is not None:
                bracket += g.lower_bound_pps <= true <= g.upper_bound_pps
            if g.estimate_pps is not None:
                est_errs.append(abs(g.estimate_pps - true) / true)
                covered_all += ((g.estimate_low_pps or 0.0) <= true
                                <= (g.estimate_high_pps or math.inf))
                if g.estimate_low_pps is not None and g.estimate_high_pps is not None:
                    closed += 1
                    covered += g.estimate_low_pps <= true <= g.estimate_high_pps
    n_goals = seeds * len(thresholds)
    finite = [abs(e) for e in errs if e != float("inf")]
    cell = {
        "trial_s": statistics.mean(ts), "trial_s_max": max(ts), "trials": statistics.mean(ns),
        "err_mean": statistics.mean(finite) if finite else float("nan"),
        "err_max": max(finite) if finite else float("nan"),
        "bias": statistics.mean(e for e in errs if e != float("inf")) if finite else float("nan"),
        "in_width": inside / n_goals, "bracketed": bracket / n_goals, "no_value": statuses,
        "est_err_mean": statistics.mean(est_errs) if est_errs else float("nan"),
        "est_in_width": sum(e <= width for e in est_errs) / n_goals,
        "est_closed": closed / n_goals,
        "est_covered": covered / closed if closed else float("nan"),
        "est_covered_all": covered_all / n_goals,
    }
    return cell, ts


def cost_ratio(mine: list[float], other: list[float]) -> str:
    """Ratio of mean trial-seconds, same seeds, with a 95 % interval (normal
    approximation of the paired per-seed differences, divided by other's mean)."""
    base = statistics.mean(other)
    diffs = [a - b for a, b in zip(mine, other)]
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
    mid = statistics.mean(diffs)
    return (f"{1 + mid / base:.2f}x [{1 + (mid - half) / base:.2f}-"
            f"{1 + (mid + half) / base:.2f}]")


def passfail_limit(jitter: float, trials: float) -> float:
    """Asymptotic least mean relative |error| of a PDR found from ``trials`` pass/fail trials.

    In the model (hard knee, capacity C (1 + jitter z) per trial, z standard
    normal) a trial at rate r fails threshold t with probability
    Phi((r / theta - 1) / jitter), theta = C / (1 - t) the true PDR.  One trial
    carries Fisher information phi(u)^2 / (Phi(u) (1 - Phi(u))) / (theta jitter)^2
    about theta, largest at r = theta (u = 0): 2 / (pi (theta jitter)^2).  So
    any unbiased estimate from ``trials`` trials has a relative standard deviation
    of at least jitter sqrt(pi / (2 trials)) (Cramer-Rao), and a normal error
    with that deviation has mean |error| jitter / sqrt(trials).  A search that
    also reads how much a trial lost is not bound by this.
    """
    return jitter / math.sqrt(trials)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--width", type=float, default=0.005, help="relative width (all algorithms)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="duration scale of the SRPerf settings (10 s x scale trials)")
    ap.add_argument("--noise", type=float, nargs="*", default=[0.0, 0.01, 0.02])
    ap.add_argument("--smoothing", type=float, default=0.0,
                    help="relative half-width of a rounded knee (0: hard knee)")
    ap.add_argument("--thresholds", nargs="*", default=["0.5", "0,0.5"],
                    help="goal sets, each comma-separated loss thresholds in %%")
    ap.add_argument("--algorithms", default="bisect-srperf,bisect-1s,bisect-rep3,multi,mlr,"
                                            "mlr-noval,mlrsearch,lossfit")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a SearchSettings field for mlr/mlrsearch/multi (repeatable)")
    args = ap.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    overrides: dict[str, object] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        current = getattr(SearchSettings(), key)
        overrides[key] = type(current)(value) if current is not None else float(value)
    base = SearchSettings(**overrides)
    algs = args.algorithms.split(",")
    knee = (f"knee rounded over +-{100 * args.smoothing:g} %" if args.smoothing
            else "hard knee")
    print(f"MODEL SUT (simulated, not a measurement): capacity {CAPACITY_PPS:.0f} pps, {knee}; "
          f"relative width {args.width:g}; {args.seeds} seeds per cell")
    print(f"mlr/mlrsearch settings: initial {base.initial_trial_duration_s:g} s, final "
          f"{base.trial_duration_s:g} s, duration sum {base.duration_sum_s:g} s, exceed ratio "
          f"{base.exceed_ratio:g}, preceding phases {base.preceding_phases}, validation trials "
          f"{base.validation_trials}; bisect-srperf trials {10 * args.scale:g} s")
    started = time.monotonic()
    for spec in args.thresholds:
        thresholds = tuple(float(x) for x in spec.split(","))
        table(thresholds, algs, args, base)
    print(f"(bench wall time {time.monotonic() - started:.1f} s; all figures from the model)")
    return 0


def table(thresholds: tuple[float, ...], algs: list[str], args: argparse.Namespace,
          base: SearchSettings) -> None:
    print()
    print(f"goals {', '.join(f'{t:g} %' for t in thresholds)} "
          "(error: reported rate vs the model's exact value, per goal)")
    header = (f"{'noise':>5} {'algorithm':<14} {'trial-s':>8} {'max':>7} {'trials':>6} "
              f"{'|err| mean':>10} {'|err| max':>9} {'bias':>7} {'in width':>8} {'bracket':>7} "
              f"{'no value':>8} | {'est |err|':>9} {'in width':>8} {'closed':>6} {'covers':>6} "
              f"{'cov all':>7}")
    print(header)
    print("-" * len(header))
    summary: dict[tuple[float, str], dict[str, float]] = {}
    costs: dict[tuple[float, str], list[float]] = {}
    for noise in args.noise:
        for alg in algs:
            cell, costs[(noise, alg)] = run_cell(alg, noise, args.seeds, thresholds,
                                                 args.width, args.scale, base, args.smoothing)
            summary[(noise, alg)] = cell
            print(f"{100 * noise:>4.0f}% {alg:<14} {cell['trial_s']:>8.2f} "
                  f"{cell['trial_s_max']:>7.1f} "
                  f"{cell['trials']:>6.1f} {100 * cell['err_mean']:>9.3f}% "
                  f"{100 * cell['err_max']:>8.3f}% {100 * cell['bias']:>+6.2f}% "
                  f"{100 * cell['in_width']:>7.0f}% {100 * cell['bracketed']:>6.0f}% "
                  f"{cell['no_value']:>8.0f} | {100 * cell['est_err_mean']:>8.3f}% "
                  f"{100 * cell['est_in_width']:>7.0f}% {100 * cell['est_closed']:>5.0f}% "
                  f"{100 * cell['est_covered']:>5.0f}% {100 * cell['est_covered_all']:>6.0f}%")
    for mine in ("mlr", "lossfit"):
        if mine not in algs or len(algs) < 2:
            continue
        print(f"{mine} trial-seconds / other's (mean over the same seeds; in brackets the "
              "95 % interval of that ratio from the seeds' paired differences):")
        for noise in args.noise:
            parts = [f"{other} {cost_ratio(costs[(noise, mine)], costs[(noise, other)])}"
                     for other in algs if other != mine and (noise, other) in summary]
            print(f"  noise {100 * noise:.0f} %: " + ", ".join(parts))
    print("pass/fail limit: least mean |error| of a search that decides from pass/fail, "
          "with as many trials as mlr made, all at the answer (sigma / sqrt(trials)):")
    for noise in args.noise:
        if noise <= 0 or (noise, "mlr") not in summary:
            continue
        cell = summary[(noise, "mlr")]
        limit = passfail_limit(noise, cell["trials"])
        print(f"  noise {100 * noise:.0f} %: {100 * limit:.3f} % at {cell['trials']:.1f} trials; "
              f"mlr {100 * cell['err_mean']:.3f} % ({cell['err_mean'] / limit:.2f}x the limit); "
              f"trials needed for the limit to be the width: {(noise / args.width) ** 2:.0f}")


if __name__ == "__main__":
    raise SystemExit(main())
