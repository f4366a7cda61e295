#!/usr/bin/env python3
"""Benchmark of the local Linux traffic generator (srgen): maximum rate and pacing error.

    sudo /work/main/.venv/bin/python bench/generator.py [--trials 3] [--duration 1]
        [--modes mmsg,ring]

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

With several ``--modes`` (srgen's send paths), every run and trial alternates
between them (mode A, mode B, mode A, ...), so slow drifts of the machine hit
both alike; each mode's percentages are of its own maximum.  ``--sink-defer
2:20`` turns on NAPI deferral on the sink port (napi_defer_hard_irqs 2,
gro_flush_timeout 20 us): the sink thread then stays scheduled instead of
sleeping after each short batch, and the sender stops paying one
inter-processor interrupt per wake-up (the largest cost of paced sending here).

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

from srperf.drivers.linux import DEFAULT_QUEUE_PKTS, QUEUE_MODES, LinuxGenerator
from srperf.drivers.linux_sink import attach_sink
from srperf.util.netns import link_stats, run

TX_NS, SINK_NS = "tgenb-tx", "tgenb-sink"   # --ns-prefix changes "tgenb"
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


def topology_up(sink_cpu: int, fifo: int, defer_irqs: int = 0, gro_flush_ns: int = 0) -> None:
    """Build the two namespaces; ``defer_irqs``/``gro_flush_ns`` set the sink port's NAPI
    deferral (``napi_defer_hard_irqs``, ``gro_flush_timeout`` in ns; 0: off)."""
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
    run(["sh", "-c", f"echo {defer_irqs} > /sys/class/net/s0/napi_defer_hard_irqs && "
         f"echo {gro_flush_ns} > /sys/class/net/s0/gro_flush_timeout"], ns=SINK_NS)
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


def start(ns_prefix: str) -> bool:
    """A bench on this topology begins (once it said its running time): root checked
    (False, said on stderr, without it), the namespaces named PREFIX-tx and PREFIX-sink
    (bench/generator_engines.py, bench/xdpgen_slip.py)."""
    global TX_NS, SINK_NS
    if os.geteuid() != 0:
        print("run as root", file=sys.stderr)
        return False
    TX_NS, SINK_NS = f"{ns_prefix}-tx", f"{ns_prefix}-sink"
    return True


def topology_down() -> None:
    for ns in (TX_NS, SINK_NS):
        run(["ip", "netns", "del", ns], check=False)


@dataclass
class Level:
    label: str
    rate_pps: float
    mode: str = "mmsg"
    offered_pps: list[float] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    refused: int = 0
    offered: int = 0
    limited: int = 0
    slipped_ms: list[float] = field(default_factory=list)
    max_lag_ms: list[float] = field(default_factory=list)


def run_level(gen: LinuxGenerator, level: Level, duration_s: float) -> None:
    """One trial of ``level`` (in its mode)."""
    gen.mode = level.mode
    r = gen.trial(level.rate_pps, duration_s)
    level.offered_pps.append(r.offered_rate_pps)
    level.errors.append(r.offered_rate_pps / level.rate_pps - 1)
    level.refused += r.refused
    level.offered += r.offered
    level.limited += int(r.generator_limited)
    level.slipped_ms.append(r.extra["slipped_ns"] / 1e6)
    level.max_lag_ms.append(r.extra["max_lag_ns"] / 1e6)
    if not r.counters_consistent:
        print(f"  !! counters inconsistent at {level.rate_pps:.0f} pps ({level.mode}): {r.note}")


def print_table(levels: list[Level], trials: int, duration_s: float) -> None:
    print(f"\nPacing error ({trials} x {duration_s:g} s trials per rate; error = offered rate "
          "/ intended - 1; flagged = |error| > 1 %)")
    head = (f"{'mode':>4} {'load':>6} {'intended':>11} {'offered (median)':>17} {'median err':>10} "
            f"{'worst err':>10} {'refused':>9} {'flagged':>7} {'slip ms':>8} {'max lag ms':>10}")
    print(head)
    print("-" * len(head))
    for lv in levels:
        worst = max(lv.errors, key=abs)
        refused_pct = 100 * lv.refused / lv.offered if lv.offered else 0.0
        print(f"{lv.mode:>4} {lv.label:>6} {lv.rate_pps:>11,.0f} "
              f"{statistics.median(lv.offered_pps):>17,.0f} "
              f"{statistics.median(lv.errors):>+10.2%} {worst:>+10.2%} "
              f"{refused_pct:>8.2f}% {lv.limited:>3}/{len(lv.errors):<3} "
              f"{max(lv.slipped_ms):>8.2f} {max(lv.max_lag_ms):>10.2f}")


def measure_max(gen: LinuxGenerator, modes: list[str], runs: int, count: int
                ) -> tuple[dict[str, float], int]:
    """Unpaced runs alternating between ``modes``; median offered rate (pps) per mode."""
    offered: dict[str, list[float]] = {m: [] for m in modes}
    sent_rates: dict[str, list[float]] = {m: [] for m in modes}
    sent_total = 0
    for _ in range(runs):
        for mode in modes:
            gen.mode = mode
            rep = gen.unpaced(count)
            sent_total += rep.sent
            secs = rep.elapsed_ns / 1e9
            offered[mode].append(rep.offered / secs)
            sent_rates[mode].append(rep.sent / secs)
            exact = rep.sent == rep.tx_packets_delta and rep.refusals_counted
            print(f"  {mode:>4}: offered {offered[mode][-1]:>11,.0f} pps, sent "
                  f"{sent_rates[mode][-1]:>11,.0f} pps, refused {rep.refused:>7,} "
                  f"({rep.refused / rep.offered:.2%}), calls {rep.calls:>7,}, "
                  f"counters {'exact' if exact else 'MISMATCH'}")
    maxima = {}
    for mode in modes:
        maxima[mode] = statistics.median(offered[mode])
        print(f"  {mode:>4}: median offered {maxima[mode]:,.0f} pps (min "
              f"{min(offered[mode]):,.0f}, max {max(offered[mode]):,.0f}); "
              f"median sent {statistics.median(sent_rates[mode]):,.0f} pps")
    return maxima, sent_total


def main(argv: list[str] | None = None) -> int:
    global TX_NS, SINK_NS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3, help="trials per rate")
    p.add_argument("--duration", type=float, default=1.0, help="seconds per trial")
    p.add_argument("--max-runs", type=int, default=5, help="unpaced runs for the maximum")
    p.add_argument("--max-count", type=int, default=1_000_000, help="frames per unpaced run")
    p.add_argument("--rates", default="900000,1300000",
                   help="extra absolute rates (pps), comma-separated ('' for none)")
    p.add_argument("--pcts", default="25,50,75,100",
                   help="rates as percentages of each mode's maximum ('' for none)")
    p.add_argument("--modes", default="mmsg",
                   help="srgen send paths to compare, alternating: mmsg, ring or mmsg,ring")
    p.add_argument("--batch", type=int, default=16, help="packets per send call, at most")
    p.add_argument("--max-lag-us", type=float, default=1000, help="catch-up bound after a stall")
    p.add_argument("--quantum-us", type=float, default=0,
                   help="send once this much traffic is due (0: each packet at once)")
    p.add_argument("--queue-pkts", type=int, default=DEFAULT_QUEUE_PKTS,
                   help="the generator's queue, packets (0: none)")
    p.add_argument("--queue-mode", choices=QUEUE_MODES, default=None,
                   help="where the queue is: in srgen (hold) or a pfifo on the tx port "
                   "(qdisc); default hold (qdisc for the ring)")
    p.add_argument("--gen-cpu", type=int, default=0)
    p.add_argument("--gen-fifo", type=int, default=0,
                   help="SCHED_FIFO priority of srgen (0: normal scheduling)")
    p.add_argument("--sink-cpu", type=int, default=1)
    p.add_argument("--sink-fifo", type=int, default=50, help="FIFO priority of the sink NAPI "
                   "thread (0: normal)")
    p.add_argument("--sink-defer", default="0:0", metavar="IRQS:US",
                   help="NAPI deferral of the sink port: napi_defer_hard_irqs and "
                   "gro_flush_timeout (us); 0:0 = off (the sink thread sleeps when idle and "
                   "each wake-up costs the sender an inter-processor interrupt)")
    p.add_argument("--ns-prefix", default="tgenb", help="prefix of the two namespaces")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if os.geteuid() != 0:
        print("needs root (network namespaces, XDP)", file=sys.stderr)
        return 1
    TX_NS, SINK_NS = f"{args.ns_prefix}-tx", f"{args.ns_prefix}-sink"

    print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}, "
          f"CPUs: {os.cpu_count()}, kernel {os.uname().release}")
    topology_down()
    try:
        defer_irqs, defer_us = (int(x) for x in args.sink_defer.split(":"))
        topology_up(args.sink_cpu, args.sink_fifo, defer_irqs, defer_us * 1000)
        with LinuxGenerator(TX_NS, "t0", "t0", cpu=args.gen_cpu, tolerance=0.01, retries=0,
                            batch=args.batch, max_lag_s=args.max_lag_us / 1e6,
                            quantum_s=args.quantum_us / 1e6,
                            fifo_priority=args.gen_fifo, mode=modes[0],
                            queue_pkts=args.queue_pkts, queue_mode=args.queue_mode) as gen:
            print(f"srgen: modes {', '.join(modes)}, CPU {args.gen_cpu} FIFO {args.gen_fifo}, "
                  f"queue {args.queue_pkts} pkts ({gen.queue_mode}), batch {args.batch}, max lag "
                  f"{args.max_lag_us:g} us, quantum {args.quantum_us:g} us; sink NAPI on CPU "
                  f"{args.sink_cpu} FIFO {args.sink_fifo}, deferral {args.sink_defer}")
            gen.prepare(frame_64())
            sink_before = link_stats(SINK_NS, "s0")["rx_packets"]

            print(f"\nMaximum: {args.max_runs} unpaced runs per mode of {args.max_count:,} "
                  f"frames (60 B + FCS), srgen on CPU {args.gen_cpu}")
            maxima, sent_total = measure_max(gen, modes, args.max_runs, args.max_count)

            pcts = [float(x) for x in args.pcts.split(",") if x.strip()]
            rates = [float(r) for r in args.rates.split(",") if r.strip()]
            # levels[i] holds one Level per mode: trials alternate between modes.
            levels = [[Level(f"{pct:g}%", maxima[m] * pct / 100, m) for m in modes]
                      for pct in pcts]
            levels += [[Level("abs", r, m) for m in modes] for r in rates]
            for group in levels:
                for _ in range(args.trials):
                    for lv in group:
                        run_level(gen, lv, args.duration)
            flat = [lv for group in levels for lv in group]
            print_table(sorted(flat, key=lambda lv: modes.index(lv.mode)), args.trials,
                        args.duration)

            sink_after = link_stats(SINK_NS, "s0")["rx_packets"]
            trial_sent = sum(lv.offered - lv.refused for lv in flat)
            print(f"\nCross-check: srgen sent {sent_total + trial_sent:,} frames, the sink port "
                  f"counted {sink_after - sink_before:,}")
    finally:
        topology_down()
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
