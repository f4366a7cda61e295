#!/usr/bin/env python3
"""Benchmark: VPP against the Linux kernel, behavior by behavior, in one sitting.

The virtual testbed runs each forwarder in turn as its SUT: srperf's own VPP
(started in the SUT namespace from the binary ``SRPERF_VPP_BIN`` names,
af_packet on the SUT's veths, one polling worker on the SUT's CPU) and the
kernel (seg6, as ``srperf run`` configures it).  Each repetition measures every
behavior on one forwarder, then on the other, the order of the forwarders
alternating between repetitions; every behavior is verified (frames captured
and checked, with the forwarder's declared deviations) before its search.  A
behavior a forwarder does not offer, or that fails verification, is reported
with its status and reason, never a figure.

Printed: PDR per behavior and forwarder (median [min, max], CV) and the ratio of
the medians VPP / Linux.

Run (root; other helpers share the host, so take the namespace lock per sitting
with --lock): SRPERF_VPP_BIN=/path/to/vpp .venv/bin/python bench/vpp_vs_linux.py
    [--repetitions 2] [--behaviors ipv6,end,...] [--lock /tmp/srperf-netns.lock]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import statistics
import time
from typing import Iterator

from srperf.behaviors import catalogue as behaviors
from srperf.forwarders import registry as forwarders
from srperf.measure.bench_support import add_search_args, bench_session, search_settings, stats, \
    value_kpps
from srperf.config.model import SutConfig, TestbedConfig
from srperf.errors import CfgError, UnsupportedBehavior, VerificationError

FORWARDERS = ("vpp", "linux")


@contextlib.contextmanager
def locked(path: str | None) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (nothing when None)."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--behaviors", default="",
                        help="comma-separated (default: every behavior VPP offers)")
    parser.add_argument("--size", type=int, default=64, help="inner packet, bytes")
    parser.add_argument("--lock", default=None, help="flock this file around each sitting")
    parser.add_argument("--forwarders", default=",".join(FORWARDERS),
                        help="comma-separated, from vpp,linux (default both)")
    add_search_args(parser)
    # the kernel forwarded more than the common 900 kpps ceiling here (up to ~1.5 Mpps)
    parser.set_defaults(max_rate=1_500_000.0)
    args = parser.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    fwds = tuple(f.strip() for f in args.forwarders.split(",") if f.strip())
    if not fwds or not set(fwds) <= set(FORWARDERS):
        parser.error(f"--forwarders: from {', '.join(FORWARDERS)}")
    binary = os.environ.get("SRPERF_VPP_BIN")
    if not binary:
        parser.error("SRPERF_VPP_BIN must name a VPP binary (vppctl beside it)")
    names = [b.strip() for b in args.behaviors.split(",") if b.strip()] \
        or list(forwarders.get("vpp").behaviors)
    tb = TestbedConfig(name="vpp-vs-linux", prefix="vvl", sut=SutConfig(vpp_binary=binary))
    settings = search_settings(args)
    values: dict[tuple[str, str], list[float | None]] = {(f, b): [] for f in fwds
                                                         for b in names}
    status: dict[tuple[str, str], str] = {}
    at_max: dict[tuple[str, str], int] = {}
    started = time.monotonic()
    for rep in range(args.repetitions):
        order = fwds if rep % 2 == 0 else tuple(reversed(fwds))
        for fwd in order:
            with locked(args.lock), bench_session("vpp_vs_linux", tb, fwd) as s:
                for name in names:
                    if status.get((fwd, name), "measured") != "measured":
                        continue
                    if not forwarders.get(fwd).offers(name):
                        status[(fwd, name)] = "not offered: " + forwarders.get(fwd).why_not(
                            name)
                        continue
                    try:
                        s.setup(name, size=args.size)
                        result = s.pdr(name, settings, args.algorithm, rep + 1)
                    except (UnsupportedBehavior, VerificationError, CfgError) as exc:
                        status[(fwd, name)] = f"{type(exc).__name__}: {exc}"
                        print(f"rep {rep + 1} {fwd:<5} {name:<14} {status[(fwd, name)]}",
                              flush=True)
                        continue
                    finally:
                        with contextlib.suppress(Exception):
                            s.unconfigure(behaviors.get(name))
                    kpps, goal = value_kpps(result)
                    values[(fwd, name)].append(kpps)
                    at_max[(fwd, name)] = at_max.get((fwd, name), 0) + (goal == "at_max")
                    status[(fwd, name)] = "measured"
                    print(f"rep {rep + 1} {fwd:<5} {name:<14} PDR@{args.loss:g}% "
                          f"{'-' if kpps is None else f'{kpps:.1f}'} kpps ({goal}, "
                          f"{result.n_trials} trials, {result.generator_limited_trials} "
                          "generator-limited)", flush=True)
    print(f"\nPDR@{args.loss:g}% in kpps, {args.repetitions} repetitions, inner packet "
          f"{args.size} B, {args.trial:g} s trials, {args.algorithm} "
          f"({time.monotonic() - started:.0f} s):")
    for name in names:
        print(f"  {name}")
        for fwd in fwds:
            text = stats(values[(fwd, name)]) if status.get((fwd, name)) == "measured" \
                else status.get((fwd, name), "not measured")
            if at_max.get((fwd, name)):
                text += f"  (at the max rate {at_max[(fwd, name)]}x: a lower bound)"
            print(f"    {fwd:<5} {text}")
        vpp = [v for v in values.get(("vpp", name), []) if v is not None]
        lin = [v for v in values.get(("linux", name), []) if v is not None]
        if vpp and lin:
            print(f"    VPP / Linux (medians) = "
                  f"{statistics.median(vpp) / statistics.median(lin):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
