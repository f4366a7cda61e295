#!/usr/bin/env python3
"""Per-packet cost of fast-path chains without a traffic generator (BPF_PROG_RUN).

Brings up a virtual testbed (``--prefix``), loads each chain on its SUT with the xdp
forwarder and runs the dispatcher ``--repeat`` times over the chain's own 64-byte test
frame, each run on a fresh copy of the frame (``xdp.sh prog_run``); prints per chain
the verdict, the median and the fastest run's ns per packet, the tail calls and
the implied Mpps of one core (1000 / fastest ns), then the cost per extra tail call (the nop chains against xdp_fw)
and per extra SID (enc<N>)::

    sudo .venv/bin/python bench/xdp_cost.py --prefix xc1
    sudo .venv/bin/python bench/xdp_cost.py --chains xdp_fw,xdp_nop7_fw --fw static

The figures are the fast path's own cost on this host's CPU: they rank chains where
the generator cannot (docs/forwarders/xdp.md).
"""

from __future__ import annotations

import argparse
import sys

DEFAULT = ("xdp_pass,xdp_fw,xdp_nop1_fw,xdp_nop3_fw,xdp_nop7_fw,xdp_mon_fw,xdp_enc_fw,"
           "xdp_enc_mon_fw,xdp_end_fw,xdp_enc1_mon_fw,xdp_enc2_mon_fw,xdp_enc3_mon_fw,"
           "xdp_enc4_mon_fw")


def main(argv: list[str] | None = None) -> int:
    from srperf.config.model import TestbedConfig
    from srperf.forwarders import registry as forwarders
    from srperf.forwarders.xdp.cost import measure_chains
    from srperf.testbeds.sut import SutControl
    from srperf.testbeds.virtual import VirtualTestbed
    from srperf.transports.netns import NetnsTransport

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prefix", default="xcost", help="namespace prefix of the testbed")
    ap.add_argument("--chains", default=DEFAULT, help="comma-separated chains")
    ap.add_argument("--fw", default="fib", choices=("static", "fib", "kernel"))
    ap.add_argument("--flows", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2000)
    args = ap.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    tb = TestbedConfig(name=args.prefix, prefix=args.prefix)
    fwd = forwarders.get("xdp")
    options = fwd.parse_options({"fw": args.fw, "flows": args.flows})
    chains = [c.strip() for c in args.chains.split(",") if c.strip()]
    vt = VirtualTestbed(tb)
    try:
        vt.up()
        with NetnsTransport(tb.sut_ns) as transport:
            control = SutControl(fwd, transport, tb, options)
            control.install()
            runs = measure_chains(control, chains, repeat=args.repeat)
    finally:
        vt.down()
    print(f"{'chain':18} {'verdict':13} {'median ns':>9} {'min ns':>7} {'tail calls':>10} "
          f"{'Mpps/core (min)':>15}")
    for name, run in runs.items():
        print(f"{name:18} {run.verdict:13} {run.ns_per_packet:9.0f} {run.ns_min:7.0f} "
              f"{run.tail_calls:10d} {1000 / max(run.ns_min, 1):15.2f}")
    if "xdp_fw" in runs and "xdp_nop7_fw" in runs:
        per = (runs["xdp_nop7_fw"].ns_min - runs["xdp_fw"].ns_min) / 7
        print(f"per extra tail call (nop7_fw - fw) / 7, min: {per:.1f} ns")
    encs = [runs.get(f"xdp_enc{n}_mon_fw") for n in (1, 4)]
    if all(encs):
        per = (encs[1].ns_min - encs[0].ns_min) / 3  # type: ignore[union-attr]
        print(f"per extra SID (enc4_mon_fw - enc1_mon_fw) / 3, min: {per:.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
