#!/usr/bin/env python3
"""srgen against xdpgen, side by side, interleaved, on one topology (issue 43's must-show).

    sudo SRPERF_BUILD_DIR=... /work/bin/traffic .venv/bin/python bench/generator_engines.py \\
        [--frames ipv6,end] [--engines ring,xdp] [--rates 0.5,1,1.5,2,2.5,3,3.5,4,5,6] \\
        [--rounds 2] [--refine 3] [--duration 0.4] [--ns-prefix g43]

Topology: bench/generator.py's (t0 in PREFIX-tx -- veth -- s0 in PREFIX-sink, the XDP
drop sink on s0 in threaded NAPI on CPU 1 at FIFO 50); the sender runs on CPU 0 at
FIFO 50.  Frames: what ``srperf run`` sends for 64-byte packets on the default testbed
(testbed/virtual.yaml), ipv6 (78 bytes) and End (158 bytes, outer IPv6 + SRH).
Engines: srgen's modes (mmsg, ring), ``xdp`` (this checkout's xdpgen), and
``xdp@DIR`` (the xdpgen and xdpgen.bpf.o in DIR: another build, e.g. main's, for a
before/after in the same sitting).

Each round runs every rate (Mpps, plus unpaced), and for each rate every frame and
every engine in turn (ipv6 A, ipv6 B, End A, End B, ...), one trial each, so both
frames' figures, the sink's included, come from the same minutes.  Then ``--refine``
bisection steps per frame and engine between its highest rate paced within 1 % and the
next rate up (the grid's 0.5-1 Mpps steps would otherwise bias the ceiling by up to a
step), again interleaved, ``--rounds`` trials a step.  Per trial: the offered rate
(sent + refused per second of the sender's schedule), the error against the asked
rate, what the sink's port received and ``lost`` = sent - received, so every frame
handed to the kernel either arrived or is counted refused or lost.  Summary per frame
and engine:

* **max**: the median unpaced offered rate, and what the sink received of it;
* **paced ceiling**: the highest asked rate whose offered rate was within 1 % in every round;
* **delivered ceiling**: the highest asked rate the sink *received* within 1 % of, in every
  round.

and per frame, against the receiving side measured on the same topology, frame and
minutes: the sink's **flood intake** (the median of what it received per second of
the fastest engine's unpaced trials; "saturated" when its ring refused frames in every
one of them, else only a lower bound) and its **paced intake** (the best delivered
ceiling of any engine).  The issue's goal, xdpgen's paced ceiling within 10 % of the
sink's limit, is printed against both.

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

    def paced_ok(self, rate: float) -> bool:
        ts = self.trials.get(rate, [])
        return bool(ts) and all(abs(t.error) <= TOLERANCE for t in ts)

    def paced_ceiling(self) -> float:
        return max((r for r in self.trials if r and self.paced_ok(r)), default=0.0)

    def refine_bounds(self) -> tuple[float, float] | None:
        """(highest rate paced within 1 %, the lowest rate above it that was not), the
        interval the next bisection step halves; None when nothing above it failed."""
        lo = self.paced_ceiling()
        above = [r for r in self.trials if r > lo and not self.paced_ok(r)]
        return (lo, min(above)) if lo and above else None

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

    def flood_saturated(self) -> bool:
        """The sink's ring refused frames in every unpaced trial: the sink, not the
        sender, set what it received."""
        ts = self.trials.get(0.0, [])
        return bool(ts) and all(t.refused > 0 for t in ts)

    def lost(self) -> int:
        return sum(t.lost for ts in self.trials.values() for t in ts)


@dataclass
class Limits:
    """One frame's figures against the receiving side, from the same sitting."""

    frame: str
    xdp_ceiling: float
    ring_ceiling: float
    flood_intake: float
    flood_saturated: bool
    paced_intake: float

    def lines(self) -> list[str]:
        x, out = self.xdp_ceiling, []
        if self.ring_ceiling:
            out.append(f"{self.frame}: xdp paced ceiling {x:.0f} / ring's "
                       f"{self.ring_ceiling:.0f} = {x / self.ring_ceiling:.2f}x "
                       "(goal 1.6x, aim 2x)")
        if self.flood_intake:
            what = "saturated" if self.flood_saturated else "NOT saturated: a lower bound"
            out.append(f"{self.frame}: sink's flood intake {self.flood_intake:.0f} pps ({what})"
                       f"; xdp paced ceiling / flood intake = {x / self.flood_intake:.2f} "
                       "(goal >= 0.90)")
        if self.paced_intake:
            out.append(f"{self.frame}: sink's paced intake within 1 % {self.paced_intake:.0f} "
                       f"pps; xdp paced ceiling / paced intake = {x / self.paced_intake:.2f}")
        return out


def limits(frame: str, by_engine: dict[str, Series]) -> Limits:
    """The frame's comparison: xdpgen (this checkout's) against srgen ring and the sink.
    The flood intake is taken from the engine that offered most unpaced."""
    xdp = by_engine.get("xdp")
    ring = by_engine.get("ring")
    flood = max(by_engine.values(), key=lambda s: s.unpaced()[0])
    return Limits(frame, xdp.paced_ceiling() if xdp else 0.0,
                  ring.paced_ceiling() if ring else 0.0, flood.unpaced()[1],
                  flood.flood_saturated(),
                  max((s.delivered_ceiling() for s in by_engine.values()), default=0.0))


def sink_rx() -> int:
    out = subprocess.run(["ip", "netns", "exec", topo.SINK_NS, "cat",
                          "/sys/class/net/s0/statistics/rx_packets"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def engine_argv(engine: str) -> list[str]:
    """srgen in mode ENGINE, this checkout's xdpgen (xdp), or the build in DIR (xdp@DIR)."""
    if engine == "xdp":
        return [str(build_xdpgen()), "-o", str(xdpgen_object())]
    if engine.startswith("xdp@"):
        d = Path(engine[4:])
        return [str(d / "xdpgen"), "-o", str(d / "xdpgen.bpf.o")]
    return [str(build_srgen()), "-m", engine, "-b", "64"]


def one(engine: str, frame_file: Path, rate_pps: float, count: int) -> Trial:
    cmd = engine_argv(engine)
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


def print_trial(frame: str, e: str, t: Trial) -> None:
    print(f"{frame:5} {e[-10:]:10} {t.asked_pps:>9.0f} {t.offered_pps:>10.0f} "
          f"{100 * t.error:>+7.2f}% {t.refused:>7} {t.received_pps:>10.0f} {t.lost:>6} "
          f"{t.policy}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", default="ipv6,end", help="behaviors whose 64-byte frame is sent")
    p.add_argument("--engines", default="ring,xdp",
                   help="srgen modes (mmsg, ring), xdp, xdp@DIR (another build)")
    p.add_argument("--rates", default="0.5,1,1.5,2,2.5,3,3.5,4,5,6", help="asked rates, Mpps")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--refine", type=int, default=3, help="bisection steps above the grid's "
                   "ceiling, per frame and engine")
    p.add_argument("--duration", type=float, default=0.4, help="seconds per paced trial")
    p.add_argument("--unpaced-count", type=int, default=2_000_000)
    p.add_argument("--ns-prefix", default="g43")
    args = p.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    if not topo.start(args.ns_prefix):
        return 2
    engines = args.engines.split(",")
    frames = args.frames.split(",")
    rates = [0.0] + [float(r) * 1e6 for r in args.rates.split(",")]
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    series = {(f, e): Series(f, e) for f in frames for e in engines}
    print(f"load before: {os.getloadavg()}; {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name in frames:
            frame = bytes(get(name).build_frame(tb, 64))
            files[name] = Path(tmp) / f"{name}.bin"
            files[name].write_bytes(frame)
            print(f"{name}: {len(frame)}-byte frame")
        print(f"{'frame':5} {'engine':10} {'asked':>9} {'offered/s':>10} {'error':>8} "
              f"{'refused':>7} {'sink/s':>10} {'lost':>6} policy")

        def trial(f: str, e: str, rate: float) -> None:
            count = round(rate * args.duration) if rate else args.unpaced_count
            t = one(e, files[f], rate, count)
            series[f, e].add(t)
            print_trial(f, e, t)

        try:
            topo.topology_up(sink_cpu=1, fifo=50)
            for _ in range(args.rounds):
                for rate in rates:
                    for key in series:
                        trial(*key, rate)
            for _ in range(args.refine):
                todo = {k: b for k, s in series.items() if (b := s.refine_bounds())}
                for _ in range(args.rounds):
                    for k, (lo, hi) in todo.items():
                        trial(*k, round((lo + hi) / 2, -3))
        finally:
            topo.topology_down()
    print(f"\nload after: {os.getloadavg()}; {time.strftime('%H:%M:%S', time.gmtime())} UTC")
    print(f"\n{'frame':5} {'engine':10} {'max offered':>12} {'sink took':>10} "
          f"{'paced ceiling':>14} {'delivered ceiling':>18} {'lost':>5}")
    for s in series.values():
        off, took = s.unpaced()
        print(f"{s.frame:5} {s.engine[-10:]:10} {off:>12.0f} {took:>10.0f} "
              f"{s.paced_ceiling():>14.0f} {s.delivered_ceiling():>18.0f} {s.lost():>5}")
    for name in frames:
        for line in limits(name, {e: series[name, e] for e in engines}).lines():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
