#!/usr/bin/env python3
"""srgen against xdpgen, side by side, interleaved, on one topology (issue 43's must-show).

    sudo SRPERF_BUILD_DIR=... /work/bin/traffic .venv/bin/python bench/generator_engines.py \\
        [--frames ipv6,end] [--engines ring,xdp] [--rates 0.5,1,1.5,2,2.5,3,3.5,4,5] \\
        [--rounds 2] [--duration 0.4] [--ns-prefix g43]

Topology: bench/generator.py's (t0 in PREFIX-tx -- veth -- s0 in PREFIX-sink, the XDP
drop sink on s0 in threaded NAPI on CPU 1 at FIFO 50); the sender runs on CPU 0 at
FIFO 50.  Frames: what ``srperf run`` sends for 64-byte packets on the default testbed
(testbed/virtual.yaml), ipv6 (78 bytes) and End (158 bytes, outer IPv6 + SRH).

For each frame, each round runs every rate (Mpps, plus unpaced) on every engine in turn
(engine A, engine B, A, B, ...), one trial each.  Per trial: the offered rate (sent +
refused per second of the sender's schedule), the error against the asked rate, what the
sink's port received and ``lost`` = sent - received, so every frame handed to the kernel
either arrived or is counted refused or lost.  Summary per frame and engine:

* **max**: the median unpaced offered rate, and what the sink received of it;
* **paced ceiling**: the highest asked rate whose offered rate was within 1 % in every round;
* **delivered ceiling**: the highest asked rate the sink *received* within 1 % of, in every
  round.  The best delivered ceiling of any engine is the sink's own limit as far as
  these senders can show it (a lower bound when the fastest paced sender is the limit).

Run it holding /work/bin/traffic (a few minutes).  Figures depend on the host's load,
which is printed.
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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generator as topo  # noqa: E402  (bench/generator.py: topology_up/down)

from srperf.behaviors.catalogue import get  # noqa: E402
from srperf.config.testbed import load_testbed  # noqa: E402
from srperf.drivers.linux import build_srgen  # noqa: E402
from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object  # noqa: E402

TOLERANCE = 0.01
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Trial:
    asked_pps: float
    offered_pps: float
    sent: int
    refused: int
    received: int
    elapsed_s: float
    policy: str = ""

    @property
    def error(self) -> float:
        return self.offered_pps / self.asked_pps - 1 if self.asked_pps else 0.0

    @property
    def received_pps(self) -> float:
        return self.received / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def lost(self) -> int:
        return self.sent - self.received


@dataclass
class Series:
    frame: str
    engine: str
    trials: dict[float, list[Trial]] = field(default_factory=dict)

    def add(self, t: Trial) -> None:
        self.trials.setdefault(t.asked_pps, []).append(t)

    def paced_ceiling(self) -> float:
        ok = [r for r, ts in self.trials.items() if r and all(abs(t.error) <= TOLERANCE for t in ts)]
        return max(ok, default=0.0)

    def delivered_ceiling(self) -> float:
        ok = [r for r, ts in self.trials.items()
              if r and all(abs(t.received_pps / r - 1) <= TOLERANCE for t in ts)]
        return max(ok, default=0.0)

    def unpaced(self) -> tuple[float, float]:
        ts = self.trials.get(0.0, [])
        if not ts:
            return 0.0, 0.0
        return (statistics.median(t.offered_pps for t in ts),
                statistics.median(t.received_pps for t in ts))


def sink_rx() -> int:
    out = subprocess.run(["ip", "netns", "exec", topo.SINK_NS, "cat",
                          "/sys/class/net/s0/statistics/rx_packets"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def one(engine: str, frame_file: Path, rate_pps: float, count: int) -> Trial:
    if engine == "xdp":
        cmd = [str(build_xdpgen()), "-o", str(xdpgen_object())]
    else:
        cmd = [str(build_srgen()), "-m", engine, "-b", "64"]
    cmd += ["-f", str(frame_file), "-t", "t0", "-x", "t0", "-d", "50", "-c", "0", "-P", "50",
            "-r", str(rate_pps), "-n", str(count)]
    before = sink_rx()
    out = subprocess.run(["ip", "netns", "exec", topo.TX_NS, *cmd], capture_output=True,
                         text=True, check=True).stdout
    received = sink_rx() - before
    d = json.loads(out.strip().splitlines()[-1])
    elapsed = d["elapsed_ns"] / 1e9
    offered = d["sent"] + d["refused"]
    return Trial(rate_pps, offered / elapsed if elapsed else 0.0, d["sent"], d["refused"],
                 received, elapsed, d.get("call_policy", ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", default="ipv6,end", help="behaviors whose 64-byte frame is sent")
    p.add_argument("--engines", default="ring,xdp", help="srgen modes (mmsg, ring) and xdp")
    p.add_argument("--rates", default="0.5,1,1.5,2,2.5,3,3.5,4,5", help="asked rates, Mpps")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--duration", type=float, default=0.4, help="seconds per paced trial")
    p.add_argument("--unpaced-count", type=int, default=2_000_000)
    p.add_argument("--ns-prefix", default="g43")
    args = p.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    if not topo.start(args.ns_prefix):
        return 2
    engines = args.engines.split(",")
    rates = [0.0] + [float(r) * 1e6 for r in args.rates.split(",")]
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    series: list[Series] = []
    print(f"load before: {os.getloadavg()}; {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            topo.topology_up(sink_cpu=1, fifo=50)
            for name in args.frames.split(","):
                frame = bytes(get(name).build_frame(tb, 64))
                ff = Path(tmp) / f"{name}.bin"
                ff.write_bytes(frame)
                by_engine = {e: Series(name, e) for e in engines}
                series += by_engine.values()
                print(f"\n{name}: {len(frame)}-byte frame")
                print(f"{'engine':6} {'asked':>9} {'offered/s':>10} {'error':>8} {'refused':>7} "
                      f"{'sink/s':>10} {'lost':>6} policy")
                for _ in range(args.rounds):
                    for rate in rates:
                        count = round(rate * args.duration) if rate else args.unpaced_count
                        for e in engines:
                            t = one(e, ff, rate, count)
                            by_engine[e].add(t)
                            print(f"{e:6} {rate:>9.0f} {t.offered_pps:>10.0f} "
                                  f"{100 * t.error:>+7.2f}% {t.refused:>7} "
                                  f"{t.received_pps:>10.0f} {t.lost:>6} {t.policy}", flush=True)
        finally:
            topo.topology_down()
    print(f"\nload after: {os.getloadavg()}; {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    print(f"\n{'frame':5} {'engine':6} {'max offered':>12} {'sink took':>10} "
          f"{'paced ceiling':>14} {'delivered ceiling':>18}")
    for s in series:
        off, took = s.unpaced()
        print(f"{s.frame:5} {s.engine:6} {off:>12.0f} {took:>10.0f} {s.paced_ceiling():>14.0f} "
              f"{s.delivered_ceiling():>18.0f}")
    for name in args.frames.split(","):
        by = {s.engine: s for s in series if s.frame == name}
        if "xdp" in by and "ring" in by and by["ring"].paced_ceiling():
            x, r = by["xdp"].paced_ceiling(), by["ring"].paced_ceiling()
            sink = max(s.delivered_ceiling() for s in by.values())
            print(f"{name}: xdp paced ceiling / ring's = {x / r:.2f}x (goal 1.6x); "
                  f"sink's delivered limit {sink:.0f} pps, xdp ceiling / sink = {x / sink:.2f}"
                  if sink else f"{name}: xdp / ring = {x / r:.2f}x; nothing delivered within 1 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
