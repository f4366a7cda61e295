#!/usr/bin/env python3
"""Change detection on synthetic nightly histories: jumpavg trend vs baseline vs moving average.

Histories (:mod:`srperf.results.trend_synth`, a model, not measurements) of
``--nights`` nights x 3 repetitions, night-level noise of CV ``--cv`` (and half
that within a night), with one planted shape each: steps of -5, -10, -20 % and
+10 % at a random night, a -10 % drift over 20 nights, a single -10 % outlier
night, or nothing.  Every night is judged as the nightly job would judge it then
(only the nights up to it known), by

- ``trend``: red when the night reveals a new jumpavg regression group
  (:func:`srperf.results.trend.group`, as ``srperf nightly``);
- ``baseline``: the one-baseline comparison of ``srperf compare`` (Welch 95 %
  interval of the change wholly below -``--threshold`` %) against the last night
  not itself judged a regression;
- ``moving-avg``: red when the night's mean is more than ``--threshold`` % below
  the mean of the ``--ma`` nights before it.

Printed per method and shape: detection rate (a red night within ``--within``
nights of the start of a planted regression, drifts until their end + within),
delay to detection in nights (median), false alarms per 100 nights (red nights
with no planted regression starting in the ``--within`` nights before: noise,
outlier nights, progressions and the nights before any change).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from typing import Callable

from srperf.results.compare import REGRESSION, judge
from srperf.results.stats import welch_diff
from srperf.results.trend import TrendSettings, group, new_regression
from srperf.results.trend_synth import Shape, history

Method = Callable[[list[list[float]]], list[bool]]


def trend_method(settings: TrendSettings, window: int) -> Method:
    def run(h: list[list[float]]) -> list[bool]:
        red = [False]
        for k in range(2, len(h) + 1):
            now = h[max(0, k - window):k]
            red.append(new_regression(group(now, 1, settings), group(now[:-1], 1, settings),
                                      len(now), settings.confirm) is not None)
        return red
    return run


def baseline_method(threshold: float) -> Method:
    def run(h: list[list[float]]) -> list[bool]:
        red = [False]
        base = 0
        for k in range(1, len(h)):
            verdict, _ = judge(welch_diff(h[base], h[k]), threshold)
            bad = verdict == REGRESSION
            red.append(bad)
            if not bad:
                base = k
        return red
    return run


def moving_average_method(threshold: float, n: int) -> Method:
    def run(h: list[list[float]]) -> list[bool]:
        means = [statistics.fmean(x) for x in h]
        red = [False]
        for k in range(1, len(h)):
            ref = statistics.fmean(means[max(0, k - n):k])
            red.append(means[k] < ref * (1 - threshold / 100.0))
        return red
    return run


SCENARIOS = (("none", 0.0), ("step", -5.0), ("step", -10.0), ("step", -20.0),
             ("step", 10.0), ("drift", -10.0), ("outlier", -10.0))


def score(red: list[bool], shape: Shape, within: int) -> tuple[bool | None, int | None, int, int]:
    """(detected or None when nothing to detect, delay, false alarms, nights judged)."""
    regression = shape.kind in ("step", "drift") and shape.step_pct < 0
    end = shape.at + (shape.drift_nights if shape.kind == "drift" else 0) + within
    detected, delay, false = (False if regression else None), None, 0
    for night, r in enumerate(red, start=1):
        if not r:
            continue
        if regression and shape.at <= night < end:
            if not detected:
                detected, delay = True, night - shape.at
            continue
        if regression and night >= end:
            continue        # a later red night of a change already there: not noise
        false += 1
    return detected, delay, false, len(red) - 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=60)
    ap.add_argument("--cv", default="0.03,0.07", help="night-level CVs (comma list)")
    ap.add_argument("--seeds", type=int, default=10, help="histories per scenario and CV")
    ap.add_argument("--threshold", type=float, default=5.0,
                    help="baseline and moving-average threshold, %%")
    ap.add_argument("--min-change", type=float, default=0.0, help="trend min_change_pct")
    ap.add_argument("--window", type=int, default=40, help="trend: newest nights grouped")
    ap.add_argument("--confirm", type=int, default=2,
                    help="trend: nights a regression group may be confirmed late")
    ap.add_argument("--ma", type=int, default=7, help="moving-average length, nights")
    ap.add_argument("--within", type=int, default=10,
                    help="a detection counts up to this many nights after the change")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    methods: dict[str, Method] = {
        "trend": trend_method(TrendSettings(min_change_pct=args.min_change,
                                            confirm=args.confirm), args.window),
        "baseline": baseline_method(args.threshold),
        "moving-avg": moving_average_method(args.threshold, args.ma)}
    started = time.perf_counter()
    print("MODEL: synthetic histories (srperf.results.trend_synth), not measurements")
    print(f"{args.nights} nights x 3 repetitions, {args.seeds} histories per row; "
          f"threshold {args.threshold:g} %, trend window {args.window}, "
          f"min change {args.min_change:g} %, confirm {args.confirm}")
    print(f"{'cv':>5} {'shape':<14} {'method':<11} {'detected':>9} {'delay':>6} "
          f"{'false/100n':>10}")
    totals: dict[str, list[float]] = {m: [0, 0, 0, 0] for m in methods}
    for cv in (float(x) for x in args.cv.split(",")):
        for kind, pct in SCENARIOS:
            rows: dict[str, list] = {m: [[], [], 0, 0] for m in methods}
            for seed in range(args.seeds):
                rnd = random.Random(seed * 7919 + int(cv * 1000))
                at = rnd.randint(args.nights // 3, args.nights - args.within - 1) \
                    if kind != "drift" else rnd.randint(args.nights // 4, args.nights // 2)
                shape = Shape(kind, pct, at)
                h = history(shape, args.nights, cv, seed=seed + int(cv * 1e4))
                for name, method in methods.items():
                    det, delay, false, judged = score(method(h), shape, args.within)
                    r = rows[name]
                    if det is not None:
                        r[0].append(det)
                        if delay is not None:
                            r[1].append(delay)
                    r[2] += false
                    r[3] += judged
            for name, (det, delays, false, judged) in rows.items():
                rate = f"{100 * sum(det) / len(det):.0f} %" if det else "-"
                delay = f"{statistics.median(delays):.0f}" if delays else "-"
                print(f"{cv:>5.2f} {kind + f' {pct:+g}%':<14} {name:<11} {rate:>9} "
                      f"{delay:>6} {100 * false / judged:>10.2f}")
                t = totals[name]
                t[0] += sum(det)
                t[1] += len(det)
                t[2] += false
                t[3] += judged
    print("\noverall (every CV and shape):")
    for name, (hit, n, false, judged) in totals.items():
        print(f"  {name:<11} detected {100 * hit / n:5.1f} % of planted regressions, "
              f"{100 * false / judged:5.2f} false alarms per 100 nights")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
