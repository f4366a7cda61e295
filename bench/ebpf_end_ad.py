#!/usr/bin/env python3
"""Benchmark: End.AD (eBPF dynamic proxy) against SRNK's End baseline.

SRNK (Mayer et al., NetSoft 2019) compares its in-kernel End.AD with a
baseline where the VNF is SR-aware and runs End itself: PDR@0.5 % 444.2 vs
461.1 kpps (-3.7 %), and -11 % with age 0 (the stored header rewritten on every
packet).  Here the same comparison runs on the virtual testbed: tester, SUT,
proxy and one VNF namespace on this host, the SUT (its NAPI thread, the proxy
and the VNF's forwarding) on one vCPU.

For each repetition the variants are measured one after the other, their order
alternating; each is verified (frames captured and checked) before its search.
Printed: PDR per variant (median [min, max], CV), the ratio to the baseline,
and optionally the delivery ratio at fixed rates (--sweep, SRNK's Fig. 8) and the
proxy programs' own run time per packet during a trial at a fixed rate
(--prog-cost RATE: the kernel's BPF statistics, a cost the generator's ceiling
does not hide; --no-pdr skips the searches).

Run (root): /work/main/.venv/bin/python bench/ebpf_end_ad.py [--repetitions 3]
            [--variants end_ad,end_ad_age0,end_baseline] [--sweep 100000,200000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from srperf.behaviors import catalogue as behaviors
from srperf.measure.bench_support import (EBPF_TB, add_search_args, bench_session, proxy_options,
                                  search_settings, stats, value_kpps)
from srperf.forwarders.ebpf.forwarder import ProxySettings
from srperf.forwarders.ebpf.progstats import bpf_stats, prog_runs

VARIANTS = {
    "end_ad": ("end_ad", ProxySettings(age_s=1.0)),
    "end_ad_age0": ("end_ad", ProxySettings(age_s=0.0)),
    "end_ad_nofib": ("end_ad", ProxySettings(fib=False)),
    "end_as": ("end_as", ProxySettings()),
    "end_cache": ("end_cache", ProxySettings()),
    "end_baseline": ("end_baseline", ProxySettings()),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--variants", default="end_ad,end_ad_age0,end_baseline",
                        help=f"comma-separated, from {', '.join(VARIANTS)}")
    parser.add_argument("--sweep", default="", help="fixed rates (pps) for delivery ratios")
    parser.add_argument("--size", type=int, default=64, help="inner packet, bytes")
    parser.add_argument("--prog-cost", type=float, default=0.0,
                        help="rate (pps) of a trial that measures the programs' run time")
    parser.add_argument("--no-pdr", action="store_true", help="no PDR search")
    add_search_args(parser)
    args = parser.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    settings = search_settings(args)
    values: dict[str, list[float | None]] = {v: [] for v in variants}
    sweep = [float(r) for r in args.sweep.split(",") if r.strip()]
    delivery: dict[str, dict[float, list[float]]] = {v: {r: [] for r in sweep} for v in variants}
    cost: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    started = time.monotonic()
    with bench_session("ebpf_end_ad", EBPF_TB, "ebpf", proxy_options()) as s:
        for rep in range(args.repetitions):
            order = variants if rep % 2 == 0 else list(reversed(variants))
            for name in order:
                behavior, proxy = VARIANTS[name]
                s.setup(behavior, proxy_options(proxy), args.size)
                measure = s.measure_fn(behaviors.get(behavior))
                if args.prog_cost:
                    with bpf_stats():
                        before = prog_runs(EBPF_TB.sut_ns)
                        trial = measure(args.prog_cost, args.trial)
                        after = prog_runs(EBPF_TB.sut_ns)
                    for prog, runs in after.items():
                        per = (runs - before[prog]).ns_per_run
                        if per is not None:
                            cost[name].setdefault(prog, []).append(per)
                    print(f"rep {rep + 1} {name:<13} at {args.prog_cost / 1e3:g} kpps "
                          f"(delivery {trial.delivery_ratio:.4f}): " + ", ".join(
                              f"{p} {v[-1]:.0f} ns/run" for p, v in cost[name].items()),
                          flush=True)
                if args.no_pdr:
                    continue
                result = s.pdr(behavior, settings, args.algorithm, rep + 1)
                kpps, status = value_kpps(result)
                values[name].append(kpps)
                print(f"rep {rep + 1} {name:<13} PDR@{args.loss:g}% "
                      f"{'-' if kpps is None else f'{kpps:.1f}'} kpps ({status}, "
                      f"{result.n_trials} trials, {result.generator_limited_trials} "
                      "generator-limited)", flush=True)
                for rate in sweep:
                    delivery[name][rate].append(measure(rate, args.trial).delivery_ratio)
    print(f"\nPDR@{args.loss:g}% in kpps, {args.repetitions} repetitions, inner packet "
          f"{args.size} B, {args.trial:g} s trials ({time.monotonic() - started:.0f} s):")
    base = values.get("end_baseline")
    for name in variants:
        line = f"  {name:<13} {stats(values[name])}"
        vals = [v for v in values[name] if v is not None]
        bvals = [v for v in (base or []) if v is not None]
        if name != "end_baseline" and vals and bvals:
            ratio = statistics.median(vals) / statistics.median(bvals)
            line += f"   median / baseline median = {ratio:.3f}"
        print(line)
    if args.prog_cost:
        print(f"\nprogram run time at {args.prog_cost / 1e3:g} kpps, ns per run, median "
              "[min, max] over repetitions (kernel BPF statistics):")
        for name in variants:
            for prog, v in sorted(cost[name].items()):
                print(f"  {name:<13} {prog:<13} {statistics.median(v):7.1f} "
                      f"[{min(v):.1f}, {max(v):.1f}]  n={len(v)}")
    if sweep:
        print("\ndelivery ratio (received / intended), median over repetitions:")
        print("  rate kpps " + " ".join(f"{n:>13}" for n in variants))
        for rate in sweep:
            cells = []
            for name in variants:
                d = delivery[name][rate]
                cells.append(f"{statistics.median(d):13.4f}" if d else f"{'-':>13}")
            print(f"  {rate / 1e3:9.0f} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
