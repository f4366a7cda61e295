"""``srperf build``: compile the traffic generator, the sink, the eBPF dataplane, the XDP fast
path, the relay
and the delay line into the build directory.

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse

from srperf.cli.guard import EXIT_OK


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    sub.add_parser("build", help="compile the traffic generator and the eBPF dataplane")


def cmd_build(args: argparse.Namespace) -> int:
    from srperf.drivers.linux import build_srgen
    from srperf.drivers.linux_sink import sink_object
    from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object

    from srperf.forwarders.ebpf.build import build_all

    built = [str(build_srgen()), str(sink_object()), str(build_xdpgen()), str(xdpgen_object())]
    built += [str(p) for p in build_all()]
    from srperf.forwarders.xdp.build import build_xdp

    built.append(str(build_xdp()))
    from srperf.pm.build import build_pm

    built += [str(p) for p in build_pm()]
    from srperf.forwarders.pipes import build_relay

    built.append(str(build_relay()))
    from srperf.traffic.delay_line import build_delay_line, divert_object

    built += [str(build_delay_line()), str(divert_object())]
    for path in built:
        print(f"built {path}")
    return EXIT_OK


COMMANDS = {"build": cmd_build}
