#!/usr/bin/env python3
"""The user-space delay line's added round trip and its ceiling.

Two namespaces joined by a veth; a delay line of D ms on the ingress of each side
(so D each way).  Prints:
  * the round trip with ping before and with the delay lines (median of --pings), and
    how far the increase is from 2*D;
  * the TCP rate through the delay lines (iperf3, --streams parallel streams, --seconds
    long), with TSO/GSO on (64 KB frames pass as one) and off (one MTU-sized segment per
    frame, as the loss impairment runs it), beside the same without delay lines, with
    the delay lines' counters (frames dropped for a full FIFO or by the kernel before
    they were read).

    flock /tmp/srperf-heavy.lock .venv/bin/python bench/delay_line.py --delay-ms 5
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import subprocess
import sys
import time

from srperf.traffic.delay_line import DelayLine, insert
from srperf.util.netns import run
from srperf.transports.netns import NetnsTransport

ADDR = {"a": "fd00:d1::1", "b": "fd00:d1::2"}


def ns_name(prefix: str, side: str) -> str:
    return f"{prefix}-{side}"


def make_pair(prefix: str) -> None:
    a, b = ns_name(prefix, "a"), ns_name(prefix, "b")
    for ns in (a, b):
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    run(["ip", "-n", a, "link", "add", "e0", "type", "veth", "peer", "name", "e0", "netns", b])
    for ns, side in ((a, "a"), (b, "b")):
        run(["ip", "-n", ns, "addr", "add", f"{ADDR[side]}/64", "dev", "e0", "nodad"])
        run(["ip", "-n", ns, "link", "set", "e0", "up"])


def ping_rtts(prefix: str, count: int) -> list[float]:
    """Round trips a -> b (ms), once one ping has been answered (a fresh link's first
    ones wait for neighbour discovery and DAD), the first one left out."""
    for _ in range(20):
        if run(["ping", "-c", "1", "-W", "1", ADDR["b"]], ns=ns_name(prefix, "a"),
               check=False).ok:
            break
    out = run(["ping", "-c", str(count + 1), "-i", "0.05", "-W", "2", ADDR["b"]],
              ns=ns_name(prefix, "a"), check=False).stdout
    rtts = [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]
    return rtts[1:]


def tcp_rate(prefix: str, seconds: float, streams: int) -> float:
    """iperf3 b -> a (the receiver in a), Mb/s received."""
    server = subprocess.Popen(["ip", "netns", "exec", ns_name(prefix, "a"), "iperf3", "-s",
                               "-1", "-p", "5299"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        res = run(["iperf3", "-c", ADDR["a"], "-p", "5299", "-t", f"{seconds:g}", "-P",
                   str(streams), "-J"], ns=ns_name(prefix, "b"), check=False)
        data = json.loads(res.stdout or "{}")
        if "end" not in data:
            return float("nan")
        return data["end"]["sum_received"]["bits_per_second"] / 1e6
    finally:
        server.terminate()
        server.wait()


def set_offloads(prefix: str, on: bool) -> None:
    for side in ("a", "b"):
        run(["ethtool", "-K", "e0", "tso", "on" if on else "off", "gso", "on" if on else "off"],
            ns=ns_name(prefix, side))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="p8d")
    ap.add_argument("--delay-ms", type=float, default=5.0, help="delay each way (ms)")
    ap.add_argument("--pings", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=4.0, help="iperf3 duration (s)")
    ap.add_argument("--streams", type=int, default=4, help="parallel TCP streams")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    logging.basicConfig(level=logging.WARNING)
    machine = NetnsTransport(None)
    lines: list[DelayLine] = []
    make_pair(args.prefix)
    try:
        base = ping_rtts(args.prefix, args.pings)
        rates = {}
        for gso in (True, False):
            set_offloads(args.prefix, gso)
            rates[("none", gso)] = tcp_rate(args.prefix, args.seconds, args.streams)
        for side in ("a", "b"):
            lines.append(insert(machine, ns_name(args.prefix, side), "e0", args.delay_ms))
        delayed = ping_rtts(args.prefix, args.pings)
        counters = []
        for gso in (True, False):
            set_offloads(args.prefix, gso)
            before = [line.counters() for line in lines]
            rates[("line", gso)] = tcp_rate(args.prefix, args.seconds, args.streams)
            after = [line.counters() for line in lines]
            counters.append({k: sum(a[k] - b[k] for a, b in zip(after, before))
                             for k in after[0]})
    finally:
        for line in lines:
            line.remove()
        for side in ("a", "b"):
            run(["ip", "netns", "del", ns_name(args.prefix, side)], check=False)

    if not base or not delayed:
        print("ping got no answer: no round trip measured", file=sys.stderr)
        return 1
    b_med, d_med = statistics.median(base), statistics.median(delayed)
    added = d_med - b_med
    print(f"# delay line bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{args.delay_ms:g} ms each way, shared 2-vCPU machine")
    print(f"rtt without: median {b_med:.3f} ms; with: median {d_med:.3f} ms "
          f"(min {min(delayed):.3f}, max {max(delayed):.3f}); added {added:.3f} ms vs "
          f"2*D = {2 * args.delay_ms:g} ms: {added - 2 * args.delay_ms:+.3f} ms "
          f"({100 * (added / (2 * args.delay_ms) - 1):+.1f} %)")
    print(f"{'tcp (iperf3 -P ' + str(args.streams) + ')':<24} {'no line Mb/s':>13} "
          f"{'delay line Mb/s':>16} {'frames':>9} {'bytes/frame':>12} {'overflow':>9} "
          f"{'kernel drops':>13}")
    for gso, c in zip((True, False), counters):
        label = "TSO/GSO on" if gso else "TSO/GSO off (MTU frames)"
        per = c["rx_bytes"] / c["rx"] if c["rx"] else 0
        print(f"{label:<24} {rates[('none', gso)]:>13.0f} {rates[('line', gso)]:>16.0f} "
              f"{c['rx']:>9} {per:>12.0f} {c['overflow']:>9} {c['kernel_drops']:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
