"""Which send engine the ``linux`` generator uses: srgen (``packet``) or xdpgen (``xdp``).

``tester.options.engine`` is ``auto``, ``xdp`` or ``packet``.  xdpgen
(drivers/xdpgen.py) sends by BPF_PROG_RUN live frames (kernel 5.18 and later) and
counts through the TX port's veth ``xdp_xmit`` counters, so it cannot do everything
srgen does (ring mode, frames above a page, a TX port other than veth, an older
kernel: the release is read by :func:`kernel_release`).  :func:`port_refusal` says why
the TX port and the kernel rule it out, :func:`xdp_refusal` why it cannot send a given
traffic (None: it can); ``auto`` then falls back to srgen, and ``xdp`` is refused
(before the run by srperf/measure/preflight.py, at the trial otherwise).

A kernel target's TX port is a tap (driver ``tun``) that QEMU reads.  tun has
``ndo_xdp_xmit``, but measured here (docs/testbeds/kernel.md) it counts a frame in
``tx_packets`` only once its reader took it, and a refused bulk of up to 16 frames as
one ``tx_dropped``; it has no ethtool statistics.  xdpgen's refusals could then be
inferred (offered - tx_packets) but not reconciled with any counter of the port, and
its hold queue and early stop, which need each refusal as it happens, could not
work: so a tap is refused with that reason, and ``auto`` keeps srgen there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

ENGINES = ("auto", "xdp", "packet")
"""Values of ``tester.options.engine``."""
DEFAULT_ENGINE = "auto"
"""A testbed's engine when ``tester.options.engine`` is not set (LinuxGeneratorOptions); a
LinuxGenerator made in code (benches, tests) sends with srgen unless told otherwise."""
LIVE_FRAMES_KERNEL = (5, 18)
"""First kernel with BPF_F_TEST_XDP_LIVE_FRAMES (major, minor)."""
XDP_MAX_FRAME_BYTES = 3500
"""Largest frame (no FCS) xdpgen sends: one page with headroom and skb_shared_info
(MAX_FRAME in xdpgen.c)."""


@dataclass(frozen=True)
class Traffic:
    """What one trial's traffic needs of the engine."""

    frame_bytes: int
    """Largest frame, without FCS."""
    flows: int = 1
    latency: bool = False
    send_mode: str = "mmsg"
    mix: bool = False
    """Several frame sizes (IMIX), which both engines send (linux_gen/mix.h)."""
    tx_driver: str = "veth"
    """The TX port's kernel driver (``ethtool -i``), "" when it cannot be read."""
    kernel: str | None = None
    """The release of the kernel xdpgen would run on (:func:`kernel_release`); None: not
    checked."""


TAP_REFUSAL = ("the TX port is a tap (driver 'tun'): it counts a frame in tx_packets only "
               "once its reader (QEMU) took it and a refused bulk of up to 16 frames as one "
               "tx_dropped, with no xdp_xmit counters, so xdpgen's refusals could not be "
               "counted per frame (srgen's are: docs/testbeds/kernel.md)")
"""Why xdpgen does not send into a kernel target's tap (measured: see the module docstring)."""


def port_refusal(tx_driver: str, kernel: str | None = None) -> str | None:
    """Why the TX port's driver or the sending kernel rules xdpgen out, whatever the
    traffic (None: they allow it)."""
    if kernel is not None:
        why = live_frames_refusal(kernel)
        if why is not None:
            return why
    if tx_driver == "tun":
        return TAP_REFUSAL
    if tx_driver != "veth":
        return (f"the TX port's driver is {tx_driver or 'unknown'!r}, not veth (xdpgen "
                "counts with the veth's xdp_xmit counters)")
    return None


def xdp_refusal(t: Traffic) -> str | None:
    """Why xdpgen cannot send ``t`` (None: it can).  Flows, latency probes and IMIX it
    sends as srgen does (xdpgen.bpf.c, ``shape_frame``)."""
    if t.frame_bytes > XDP_MAX_FRAME_BYTES:
        return (f"a {t.frame_bytes}-byte frame is larger than xdpgen's {XDP_MAX_FRAME_BYTES} "
                "(one page with headroom)")
    if t.send_mode != "mmsg":
        return f"tester.options.mode {t.send_mode!r} is srgen's; xdpgen has its own send path"
    return port_refusal(t.tx_driver, t.kernel)


def kernel_release() -> str:
    """The release of this host's kernel (``uname -r``), which the local generator runs
    on: the boundary the live-frames check reads (tests replace it with a double)."""
    return os.uname().release


def live_frames_refusal(release: str) -> str | None:
    """Why a kernel of ``release`` cannot run xdpgen (None: it can): BPF_PROG_RUN takes
    ``BPF_F_TEST_XDP_LIVE_FRAMES`` from 5.18 on; an older kernel refuses the flag."""
    m = re.match(r"(\d+)\.(\d+)", release)
    if m is None:
        return (f"the kernel release {release!r} does not say whether it has live frames "
                f"({'.'.join(map(str, LIVE_FRAMES_KERNEL))} and later have them)")
    if (int(m[1]), int(m[2])) < LIVE_FRAMES_KERNEL:
        since = ".".join(map(str, LIVE_FRAMES_KERNEL))
        return (f"kernel {release} has no BPF_PROG_RUN live frames "
                f"(BPF_F_TEST_XDP_LIVE_FRAMES, kernel {since} and later)")
    return None


def port_driver(in_ns: list[str], dev: str) -> str:
    """The kernel driver of ``dev`` (``ethtool -i``) run with prefix ``in_ns``; "" when
    it cannot be read."""
    try:
        out = subprocess.run([*in_ns, "ethtool", "-i", dev], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        if key == "driver":
            return value.strip()
    return ""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def engine_asked(options: Mapping[str, Any]) -> str:
    """The engine ``tester.options`` asks for: its ``engine``, else :data:`DEFAULT_ENGINE`
    (every reader of the key goes through here, so none keeps an older default)."""
    return str(options.get("engine", DEFAULT_ENGINE))


def describe(options: Mapping[str, Any], tx_driver: str | None = None) -> dict[str, Any]:
    """The local generator for a run's environment: the engine asked
    (``tester.options.engine``) and the version (sha256 prefix of the binary built from
    this checkout) of each engine it may use; unless the engine is ``packet``, also the
    TX port's driver (``tx_driver``, as read from the tester's namespace), this host's
    kernel and ``port_refusal``: why they rule xdpgen out (None: they allow it).  The
    engine each trial used is in the trial's ``extra["engine"]``, the count per engine
    in ``engines_sent`` once the run ended (:func:`engines_sent`)."""
    from srperf.drivers.linux import build_srgen

    engine = engine_asked(options)
    out: dict[str, Any] = {"driver": "linux", "engine": engine,
                           "srgen_sha256": _digest(build_srgen())}
    if engine != "packet":
        from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object

        out["xdpgen_sha256"] = _digest(build_xdpgen())
        out["xdpgen_prog_sha256"] = _digest(xdpgen_object())
        kernel = kernel_release()
        out.update(tx_driver=tx_driver if tx_driver is not None else "", kernel=kernel,
                   port_refusal=port_refusal(tx_driver or "", kernel))
    return out


def engines_sent(extras: Iterable[str | Mapping[str, Any] | None]) -> dict[str, int]:
    """Trials per engine that sent them, from the trials' ``extra`` (a JSON object or its
    text, as the store keeps it): ``{"xdp": 40, "packet": 2}``.  A trial whose extra names
    no engine (another driver, or one stored before engines existed) is not counted."""
    used: Counter[str] = Counter()
    for extra in extras:
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                continue
        if isinstance(extra, Mapping) and extra.get("engine"):
            used[str(extra["engine"])] += 1
    return dict(sorted(used.items()))


def used(generator: object) -> dict[str, Any] | None:
    """Why ``auto`` kept srgen in a run, for its environment (``engine_reasons``, each
    reason once; the trials per engine are :func:`engines_sent`'s, from the store); None
    for a generator of another driver."""
    reasons = getattr(generator, "engine_reasons", None)
    if not isinstance(reasons, list):
        return None
    return {"engine_reasons": list(reasons)}


__all__ = ["DEFAULT_ENGINE", "ENGINES", "LIVE_FRAMES_KERNEL", "TAP_REFUSAL",
           "XDP_MAX_FRAME_BYTES", "Traffic", "describe", "engine_asked", "engines_sent", "kernel_release",
           "live_frames_refusal", "port_driver", "port_refusal", "used", "xdp_refusal"]
