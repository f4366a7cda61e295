#!/usr/bin/env python3
"""Benchmark of the local Linux traffic generator (srgen): maximum rate and pacing error.

    sudo /work/main/.venv/bin/python bench/generator.py [--trials 3] [--duration 1]

Topology (built here, removed in ``finally``)::

    tgenb-tx: t0 ---- veth ---- s0 :tgenb-sink   XDP drop sink, threaded NAPI
    (srgen pinned to CPU 0)                       pinned to CPU 1 (FIFO 50)

1. Maximum: unpaced runs of 64-byte frames (60 bytes without FCS) on one core;
   the median offered rate (sent + refused per second) is the maximum.
2. Pacing error at 25/50/75/100 % of that maximum (and at absolute rates given
   with ``--rates``): a few trials each, offered rate vs intended, refused
   packets, the schedule's slip after stalls, and whether the trial would be
   flagged generator-limited (tolerance 1 %).
3. Cross-check: packets srgen says it sent == rx_packets of the sink port.

Figures depend on what else runs on the machine; the script prints the load.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from srperf.drivers.linux import LinuxGenerator
from srperf.drivers.linux_sink import attach_sink
from srperf.netns import link_stats, run

TX_NS, SINK_NS = "tgenb-tx", "tgenb-sink"
OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro", "lro")


def frame_64() -> bytes:
    """A 64-byte frame on the wire (60 bytes without FCS): Ethernet + IPv6, no next header."""
    eth = bytes.fromhex("025e00000102" "025e00000101" "86dd")
    payload = bytes(6)
    ip6 = (bytes.fromhex("60000000") + len(payload).to_bytes(2, "big") + bytes([59, 64])
           + bytes.fromhex("2001000200000000000a000000000001")
           + bytes.fromhex("2001000200000000000b000000000001"))
    frame = eth + ip6 + payload
    assert len(frame) == 60
    return frame


def napi_pids(dev: str) -> list[int]:
    pids = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith(f"napi/{dev}-"):
                pids.append(int(comm.parent.name))
        except OSError:
            continue
    return pids


def topology_up(sink_cpu: int, fifo: int) -> None:
    for ns in (TX_NS, SINK_NS):
        run(["ip", "netns", "add", ns])
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
    run(["ip", "link", "add", "name", "t0", "netns", TX_NS, "type", "veth",
         "peer", "name", "s0", "netns", SINK_NS])
    for ns, dev in ((TX_NS, "t0"), (SINK_NS, "s0")):
        for feature in OFFLOADS:
            run(["ethtool", "-K", dev, feature, "off"], ns=ns, check=False)
        run(["ip", "link", "set", "dev", dev, "up"], ns=ns)
    attach_sink(SINK_NS, "s0")
    before = set(napi_pids("s0"))
    run(["sh", "-c", "echo 1 > /sys/class/net/s0/threaded"], ns=SINK_NS)
    for _ in range(50):
        pids = [p for p in napi_pids("s0") if p not in before]
        if pids:
            break
        time.sleep(0.02)
    else:
        raise RuntimeError("no NAPI thread appeared for s0")
    for pid in pids:
        run(["taskset", "-pc", str(sink_cpu), str(pid)])
        if fifo:
            run(["chrt", "-f", "-p", str(fifo), str(pid)])


def topology_down() -> None:
    for ns in (TX_NS, SINK_NS):
        run(["ip", "netns", "del", ns], check=False)


@dataclass
class Level:
    label: str
    rate_pps: float
    offered_pps: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    refused: int = 0
    offered: int = 0
    limited: int = 0
    slipped_ms: list[float] = field(default_factory=list)
    max_lag_ms: list[float] = field(default_factory=list)


def run_level(gen: LinuxGenerator, level: Level, trials: int, duration_s: float) -> None:
    for _ in range(trials):
        r = gen.trial(level.rate_pps, duration_s)
        level.offered_pps.append(r.offered_rate_pps)
        level.errors.append(r.offered_rate_pps / level.rate_pps - 1)
        level.refused += r.refused
        level.offered += r.offered
        level.limited += int(r.generator_limited)
        level.slipped_ms.append(r.extra["slipped_ns"] / 1e6)
        level.max_lag_ms.append(r.extra["max_lag_ns"] / 1e6)
        if not r.counters_consistent:
            print(f"  !! counters inconsistent at {level.rate_pps:.0f} pps: {r.note}")


def print_table(levels: list[Level], trials: int, duration_s: float) -> None:
    print(f"\nPacing error ({trials} x {duration_s:g} s trials per rate; error = offered rate "
          "/ intended - 1; flagged = |error| > 1 %)")
    head = (f"{'load':>6} {'intended':>11} {'offered (median)':>17} {'median err':>10} "
            f"{'worst err':>10} {'refused':>9} {'flagged':>7} {'slip ms':>8} {'max lag ms':>10}")
    print(head)
    print("-" * len(head))
    for lv in levels:
        worst = max(lv.errors, key=abs)
        refused_pct = 100 * lv.refused / lv.offered if lv.offered else 0.0
        print(f"{lv.label:>6} {lv.rate_pps:>11,.0f} {statistics.median(lv.offered_pps):>17,.0f} "
              f"{statistics.median(lv.errors):>+10.2%} {worst:>+10.2%} "
              f"{refused_pct:>8.2f}% {lv.limited:>3}/{len(lv.errors):<3} "
              f"{max(lv.slipped_ms):>8.2f} {max(lv.max_lag_ms):>10.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3, help="trials per rate")
    p.add_argument("--duration", type=float, default=1.0, help="seconds per trial")
    p.add_argument("--max-runs", type=int, default=5, help="unpaced runs for the maximum")
    p.add_argument("--max-count", type=int, default=1_000_000, help="frames per unpaced run")
    p.add_argument("--rates", default="900000,1300000",
                   help="extra absolute rates (pps), comma-separated ('' for none)")
    p.add_argument("--batch", type=int, default=16, help="packets per sendmmsg, at most")
    p.add_argument("--max-lag-us", type=float, default=1000, help="catch-up bound after a stall")
    p.add_argument("--quantum-us", type=float, default=0,
                   help="send once this much traffic is due (0: each packet at once)")
    p.add_argument("--gen-cpu", type=int, default=0)
    p.add_argument("--gen-fifo", type=int, default=0,
                   help="SCHED_FIFO priority of srgen (0: normal scheduling)")
    p.add_argument("--sink-cpu", type=int, default=1)
    p.add_argument("--sink-fifo", type=int, default=50, help="FIFO priority of the sink NAPI "
                   "thread (0: normal)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s")
    if os.geteuid() != 0:
        print("needs root (network namespaces, XDP)", file=sys.stderr)
        return 1

    print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}, "
          f"CPUs: {os.cpu_count()}, kernel {os.uname().release}")
    topology_down()
    try:
        topology_up(args.sink_cpu, args.sink_fifo)
        with LinuxGenerator(TX_NS, "t0", "t0", cpu=args.gen_cpu, tolerance=0.01, retries=0,
                            batch=args.batch, max_lag_s=args.max_lag_us / 1e6,
                            quantum_s=args.quantum_us / 1e6,
                            fifo_priority=args.gen_fifo) as gen:
            print(f"srgen: CPU {args.gen_cpu} FIFO {args.gen_fifo}, batch {args.batch}, "
                  f"max lag {args.max_lag_us:g} us, quantum {args.quantum_us:g} us; "
                  f"sink NAPI on CPU {args.sink_cpu} FIFO {args.sink_fifo}")
            gen.prepare(frame_64())
            sink_before = link_stats(SINK_NS, "s0")["rx_packets"]
            sent_total = 0

            print(f"\nMaximum: {args.max_runs} unpaced runs of {args.max_count:,} frames "
                  "(60 B + FCS), srgen on CPU", args.gen_cpu)
            offered_rates, sent_rates = [], []
            for _ in range(args.max_runs):
                rep = gen.unpaced(args.max_count)
                sent_total += rep.sent
                secs = rep.elapsed_ns / 1e9
                offered_rates.append(rep.offered / secs)
                sent_rates.append(rep.sent / secs)
                exact = (rep.sent == rep.tx_packets_delta
                         and rep.refused == rep.tx_dropped_delta)
                print(f"  offered {offered_rates[-1]:>11,.0f} pps, sent {sent_rates[-1]:>11,.0f}"
                      f" pps, refused {rep.refused:>7,} ({rep.refused / rep.offered:.2%}), "
                      f"counters {'exact' if exact else 'MISMATCH'}")
            max_pps = statistics.median(offered_rates)
            print(f"  median offered {max_pps:,.0f} pps (min {min(offered_rates):,.0f}, "
                  f"max {max(offered_rates):,.0f}); "
                  f"median sent {statistics.median(sent_rates):,.0f} pps")

            levels = [Level(f"{pct}%", max_pps * pct / 100) for pct in (25, 50, 75, 100)]
            levels += [Level("abs", float(r)) for r in args.rates.split(",") if r.strip()]
            for lv in levels:
                run_level(gen, lv, args.trials, args.duration)
            print_table(levels, args.trials, args.duration)

            sink_after = link_stats(SINK_NS, "s0")["rx_packets"]
            trial_sent = sum(lv.offered - lv.refused for lv in levels)
            print(f"\nCross-check: srgen sent {sent_total + trial_sent:,} frames, the sink port "
                  f"counted {sink_after - sink_before:,}")
    finally:
        topology_down()
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
