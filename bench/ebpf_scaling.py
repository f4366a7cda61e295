#!/usr/bin/env python3
"""Benchmark: End.AD PDR with 1, 10, 80 and 160 VNFs behind the SUT.

SRNK's first design (one policy-routing rule per VNF, scanned in order) lost
28.4 % of its PDR@0.5 % with 80 VNFs and 50.6 % with 160; its second design
(a hash lookup of the incoming interface) stayed flat.  The eBPF proxy finds a
VNF by hash lookups only (SID -> VNF on the way in, ifindex -> VNF on the way
back), so its PDR should not depend on the number of VNFs.  Traffic goes to the
last VNF (the worst case of a linear scan); every VNF has its own namespace,
veth, SID and End.AD state.

Printed per VNF count: PDR (median [min, max], CV over repetitions), the ratio
to the 1-VNF median, and the seconds it took to build the VNF namespaces.

Run (root): /work/main/.venv/bin/python bench/ebpf_scaling.py [--counts 1,10,80,160]
            [--repetitions 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from srperf.measure.bench_support import (EBPF_TB, add_search_args, bench_session, proxy_options,
                                  search_settings, stats, value_kpps, with_target)

from srperf.forwarders.ebpf.forwarder import ProxySettings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--counts", default="1,10,80,160")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--behavior", default="end_ad")
    add_search_args(parser)
    args = parser.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    counts = [int(c) for c in args.counts.split(",")]
    settings = search_settings(args)
    values: dict[int, list[float | None]] = {n: [] for n in counts}
    build_s: dict[int, float] = {}
    started = time.monotonic()
    with bench_session("ebpf_scaling", EBPF_TB, "ebpf", proxy_options()) as s:
        # one block of repetitions per VNF count (re-building 160 namespaces per
        # repetition would dominate the run); counts in alternating order
        order = counts
        for block in range(2):
            for n in order:
                reps = args.repetitions // 2 + (args.repetitions % 2 if block == 0 else 0)
                if reps == 0:
                    continue
                s.retarget(with_target(EBPF_TB, n - 1))
                t0 = time.monotonic()
                s.setup(args.behavior, proxy_options(ProxySettings(), vnf_count=n))
                build_s[n] = time.monotonic() - t0
                for rep in range(reps):
                    kpps, status = value_kpps(s.pdr(args.behavior, settings, args.algorithm,
                                                    rep + 1))
                    values[n].append(kpps)
                    print(f"{n:4d} VNFs (traffic to VNF {n - 1}): PDR@{args.loss:g}% "
                          f"{'-' if kpps is None else f'{kpps:.1f}'} kpps ({status})",
                          flush=True)
            order = list(reversed(counts))
    print(f"\n{args.behavior} PDR@{args.loss:g}% in kpps vs number of VNFs "
          f"({time.monotonic() - started:.0f} s):")
    first = [v for v in values[counts[0]] if v is not None]
    for n in counts:
        vals = [v for v in values[n] if v is not None]
        ratio = (f"  median / {counts[0]}-VNF median = "
                 f"{statistics.median(vals) / statistics.median(first):.3f}"
                 if vals and first else "")
        print(f"  {n:4d} VNFs  {stats(values[n])}{ratio}   (VNFs built, proxy configured "
              f"and verified in {build_s[n]:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
