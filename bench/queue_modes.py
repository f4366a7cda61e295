#!/usr/bin/env python3
"""The generator's queue, side by side: none, hold (in srgen) and qdisc (a pfifo).

On the virtual testbed (real kernel), for each behavior: 1 s trials at fixed
rates and unpaced runs (max receive rate), the three queue settings taking
turns so that the VM's drift hits them alike.  Prints, per behavior, rate and
setting, the loss of every trial (%) and the median; and each setting's
median max receive rate (kpps), with its ratio to the setting without queue.

    .venv/bin/python bench/queue_modes.py [--behaviors ipv6,end,h_encaps]
        [--rates 0.5,0.75,0.9] [--repeats 3] [--queue-pkts 4096] [--mrr-pkts 1500000]

``--rates`` are fractions of each behavior's max receive rate without a
queue, measured first.  Needs root; builds a virtual testbed with prefix
``srpqm`` and removes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time


from srperf.measure.bench_support import BenchSession, bench_session
from srperf.behaviors import catalogue
from srperf.config.model import TestbedConfig
from srperf.drivers.base import TrafficGenerator
from srperf.drivers.linux import LinuxGenerator, SrgenReport
from srperf.traffic.generators import create_generator

SETTINGS = ("none", "hold", "qdisc")
"""The queue settings compared: no queue, srgen's hold, a pfifo on the tx port."""


def make_generators(tb: TestbedConfig, queue_pkts: int) -> dict[str, TrafficGenerator]:
    """One generator per setting, all on the testbed's tester ports, no retries."""
    def gen(**options: object) -> TrafficGenerator:
        tester = dataclasses.replace(tb.tester, options={**tb.tester.options, "retries": 0,
                                                         **options})
        return create_generator(dataclasses.replace(tb, tester=tester), tb.tester_ns)

    return {"none": gen(queue_pkts=0), "hold": gen(queue_pkts=queue_pkts, queue_mode="hold"),
            "qdisc": gen(queue_pkts=queue_pkts, queue_mode="qdisc")}


def received_rate_kpps(rep: SrgenReport) -> float:
    """Frames the SUT forwarded per second of an unpaced run, thousands."""
    return rep.rx_packets_delta / (rep.elapsed_ns / 1e9) / 1e3 if rep.elapsed_ns else 0.0


def compare(session: BenchSession, gens: dict[str, TrafficGenerator], tb: TestbedConfig, name: str,
            fractions: list[float], repeats: int, mrr_pkts: int) -> None:
    """Print one behavior's max receive rate and fixed-rate loss per queue setting,
    the settings taking turns."""
    beh = catalogue.get(name)
    session.configure(beh)
    frame = bytes(beh.build_frame(tb, 64))
    for g in gens.values():
        g.prepare(frame)
    mrr: dict[str, list[float]] = {s: [] for s in SETTINGS}
    for _ in range(repeats):
        for s in SETTINGS:
            gen = gens[s]
            assert isinstance(gen, LinuxGenerator)
            mrr[s].append(received_rate_kpps(gen.unpaced(mrr_pkts)))
    base = statistics.median(mrr["none"])
    for s in SETTINGS:
        m = statistics.median(mrr[s])
        print(f"{name:<9} max receive rate {s:<6} {m:7.1f} kpps "
              f"({m / base:.2f}x none)  runs {[round(x) for x in mrr[s]]}", flush=True)
    for f in fractions:
        rate = f * base * 1e3
        loss: dict[str, list[float]] = {s: [] for s in SETTINGS}
        flags: dict[str, list[str]] = {s: [] for s in SETTINGS}
        for _ in range(repeats):
            for s in SETTINGS:
                t = gens[s].trial(rate, 1.0)
                loss[s].append(100.0 * t.loss_ratio)
                if not t.usable:
                    flags[s].append(t.note)
        for s in SETTINGS:
            print(f"{name:<9} {rate / 1e3:6.0f} kpps ({f:.2f}x) {s:<6} loss % "
                  f"{[round(x, 3) for x in loss[s]]} median "
                  f"{statistics.median(loss[s]):.3f}"
                  + (f"  ({len(flags[s])} unusable: {'; '.join(flags[s])})"
                     if flags[s] else ""), flush=True)
    session.unconfigure(beh)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--behaviors", default="ipv6,end,h_encaps")
    ap.add_argument("--rates", default="0.5,0.75,0.9",
                    help="fixed rates as fractions of the max receive rate without queue")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queue-pkts", type=int, default=4096)
    ap.add_argument("--mrr-pkts", type=int, default=1_500_000,
                    help="frames per unpaced run")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    fractions = [float(x) for x in args.rates.split(",") if x]

    tb = TestbedConfig(name="qm", prefix="srpqm")
    started = time.monotonic()
    with bench_session("queue_modes", tb, "linux") as session:
        gens = make_generators(tb, args.queue_pkts)
        try:
            print(f"queue {args.queue_pkts} frames; {args.repeats} runs per setting, taking "
                  f"turns; fixed-rate trials 1 s, unpaced runs {args.mrr_pkts} frames")
            for name in args.behaviors.split(","):
                compare(session, gens, tb, name, fractions, args.repeats, args.mrr_pkts)
        finally:
            for g in gens.values():
                g.close()
    print(f"(wall time {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
