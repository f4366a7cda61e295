#!/usr/bin/env python3
"""Does xdpgen at SCHED_FIFO keep its schedule beside a busy loop per CPU?  Sleep shares
after each chunk call (``-Y``) side by side, interleaved (issue 43).

    SRPERF_BUILD_DIR=... /work/bin/traffic .venv/bin/python bench/xdpgen_slip.py \\
        [--yields default,0,125,250] [--reads sysfs,ethtool] [--rates 75000,300000] \\
        [--rounds 4] [--duration 1] [--fifo 50] [--loops 2] [--churn] [--ns-prefix a5u]

Topology: bench/generator.py's (t0 in PREFIX-tx -- veth -- s0 in PREFIX-sink, the XDP
drop sink on s0 in threaded NAPI on CPU 1 at FIFO 50).  ``--loops`` busy loops at normal
priority, unpinned, as scripts/under_load.sh starts them, run for the whole sitting.
xdpgen is pinned to CPU 0 at FIFO ``--fifo`` with the hold queue (-H 4096), as
``srperf run`` starts it on the default testbed with ``fifo_priority`` set.  Each
round runs every rate with every sleep share in turn, one trial each: the offered
rate's error against the asked one, the schedule's slip (``slipped_ns``), the
largest lag (``max_lag_ns``), how often the sender was preempted while it sent
(``preempted``: involuntary context switches; a FIFO task is preempted only by a
higher class, such as the kernel's fair server) and its latest wake-up after a sleep
(``wake_late_max_ns``: another task of its priority or higher held the CPU) and its
longest read of the refusals after a call (``read_max_ns``; ``--reads``: sysfs
tx_dropped or the ethtool ioctl, which takes the RTNL lock).  ``--churn`` adds and
deletes a namespace with a veth pair in a loop beside it (PREFIX-churn), as other work
on a shared host does: each of those holds the RTNL lock.  A trial within 1 % is one
``srperf run`` would count (the linux driver's tolerance).  Yield ``default`` is
xdpgen's own (1/16 of the 1 ms chunk).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generator as topo  # noqa: E402  (bench/generator.py: topology_up/down)

from srperf.behaviors.catalogue import get  # noqa: E402
from srperf.config.testbed import load_testbed  # noqa: E402
from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 0.01
CHURN = ("while :; do ip netns add {ns} && "
         "ip -n {ns} link add name churn0 type veth peer name churn1; ip netns del {ns}; done")
"""--churn: what other work on a shared host does to the RTNL lock."""


def trial(frame: Path, rate: float, duration: float, fifo: int, yield_us: str, reads: str
          ) -> dict[str, float]:
    cmd = [str(build_xdpgen()), "-o", str(xdpgen_object()), "-f", str(frame), "-t", "t0",
           "-x", "t0", "-d", "50", "-c", "0", "-H", "4096", "-r", str(rate),
           "-n", str(round(rate * duration))]
    if fifo:
        cmd += ["-P", str(fifo)]
    if yield_us != "default":
        cmd += ["-Y", yield_us]
    cmd += ["-R", reads]
    out = subprocess.run(["ip", "netns", "exec", topo.TX_NS, *cmd], capture_output=True,
                         text=True, check=True).stdout
    d = json.loads(out.strip().splitlines()[-1])
    elapsed = d["elapsed_ns"] / 1e9
    offered = d["sent"] + d["refused"]
    return {"error": (offered / elapsed / rate - 1) if elapsed else -1.0,
            "slipped_ms": d["slipped_ns"] / 1e6, "max_lag_ms": d["max_lag_ns"] / 1e6,
            "sleeps": d["sleeps"], "preempted": d["preempted"],
            "wake_late_ms": d["wake_late_max_ns"] / 1e6, "read_ms": d["read_max_ns"] / 1e6}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--yields", default="default,0,125,250",
                   help="sleep after each chunk call, us (default: xdpgen's chunk/16)")
    p.add_argument("--reads", default="sysfs", help="the hold's refusal reads (-R), each")
    p.add_argument("--churn", action="store_true", help="a namespace add/delete loop beside")
    p.add_argument("--rates", default="75000,300000", help="asked rates, pps")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--duration", type=float, default=1.0, help="seconds per trial")
    p.add_argument("--fifo", type=int, default=50, help="xdpgen's SCHED_FIFO priority")
    p.add_argument("--loops", type=int, default=os.cpu_count() or 1,
                   help="busy loops at normal priority beside it (0: none)")
    p.add_argument("--ns-prefix", default="a5u")
    args = p.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    if not topo.start(args.ns_prefix):
        return 2
    yields = [y.strip() for y in args.yields.split(",") if y.strip()]
    reads = [r.strip() for r in args.reads.split(",") if r.strip()]
    variants = [(y, r) for y in yields for r in reads]
    churn_ns = f"{args.ns_prefix}-churn"
    rates = [float(r) for r in args.rates.split(",")]
    frame = bytes(get("ipv6").build_frame(load_testbed(ROOT / "testbed" / "virtual.yaml"), 64))
    results: dict[tuple[float, str, str], list[dict[str, float]]] = {}
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}, "
          f"{args.loops} busy loop(s){', namespace churn' if args.churn else ''}, "
          f"xdpgen FIFO {args.fifo} on CPU 0")
    loops: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        ff = Path(tmp) / "ipv6.bin"
        ff.write_bytes(frame)
        try:
            topo.topology_up(sink_cpu=1, fifo=50)
            loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
                     for _ in range(args.loops)]
            if args.churn:
                loops.append(subprocess.Popen(["sh", "-c", CHURN.format(ns=churn_ns)]))
            for _ in range(args.rounds):
                for rate in rates:
                    for y, r in variants:
                        t = trial(ff, rate, args.duration, args.fifo, y, r)
                        results.setdefault((rate, y, r), []).append(t)
                        print(f"{rate:>9.0f} yield {y:>7} {r:>7}: {100 * t['error']:+6.2f} % "
                              f"slipped "
                              f"{t['slipped_ms']:6.2f} ms max lag {t['max_lag_ms']:6.2f} ms "
                              f"sleeps {t['sleeps']:.0f} preempted {t['preempted']:.0f} "
                              f"latest wake-up {t['wake_late_ms']:.2f} ms, read "
                              f"{t['read_ms']:.2f} ms", flush=True)
        finally:
            for proc in loops:
                proc.kill()
            for proc in loops:
                proc.wait()
            if args.churn:
                subprocess.run(["ip", "netns", "del", churn_ns], capture_output=True)
            topo.topology_down()
    print(f"\n{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}")
    print(f"{'rate':>9} {'yield us':>8} {'reads':>7} {'within 1 %':>10} {'median err':>10} "
          f"{'worst err':>9} {'median slip ms':>14} {'max slip ms':>11} {'max read ms':>11}")
    for (rate, y, r), ts in results.items():
        ok = sum(abs(t["error"]) <= TOLERANCE for t in ts)
        print(f"{rate:>9.0f} {y:>8} {r:>7} {f'{ok}/{len(ts)}':>10} "
              f"{100 * statistics.median(t['error'] for t in ts):+9.2f}% "
              f"{100 * min(t['error'] for t in ts):+8.2f}% "
              f"{statistics.median(t['slipped_ms'] for t in ts):14.2f} "
              f"{max(t['slipped_ms'] for t in ts):11.2f} "
              f"{max(t['read_ms'] for t in ts):11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
