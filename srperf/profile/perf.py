"""perf on the SUT: sampled functions of one CPU, and cycles/instructions where a PMU is.

Sampling uses the software ``cpu-clock`` event, which every kernel has (a VM without a
virtual PMU has no ``cycles``): ``perf record -g -C CPU -e cpu-clock -F HZ -- sleep D``
records each sample's call chain (the kernel's own unwinder: frame pointers or ORC),
and ``perf script`` prints them for :mod:`srperf.profile.stacks`, which gives both the
functions' self time and the inclusive time of the route lookup.  An idle CPU takes
no cpu-clock samples, so shares are shares of the CPU's busy time.

Cycles and instructions come from ``perf stat -x, -C CPU -e cycles,instructions``
only when the node has a hardware PMU (``/sys/bus/event_source/devices/cpu``, or
``cpu_core`` on hybrid CPUs); otherwise the reason is stated.
"""

from __future__ import annotations

import logging
import shlex

from srperf.transports.base import Transport

log = logging.getLogger(__name__)

PMU_DEVICES = ("/sys/bus/event_source/devices/cpu", "/sys/bus/event_source/devices/cpu_core")
"""A hardware PMU shows up as one of these perf event sources."""

def parse_stat(text: str) -> dict[str, int | None]:
    """``perf stat -x,`` lines ``VALUE,UNIT,EVENT,...``: event -> count (None when perf
    says ``<not supported>`` or ``<not counted>``)."""
    out: dict[str, int | None] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[2]:
            continue
        event = parts[2].split(":")[0]
        try:
            out[event] = int(float(parts[0]))
        except ValueError:
            out[event] = None
    return out


def has_perf(node: Transport, perf: str = "perf") -> str:
    """'' when ``perf`` runs on the node, else why it does not."""
    res = node.run([perf, "--version"], timeout=15.0)
    if res.ok:
        return ""
    why = (res.stderr or res.stdout).strip().splitlines()
    return (f"perf not usable on {node.where} ({perf} --version: exit {res.returncode}"
            + (f", {why[-1]}" if why else "") + "); provisioning installs Debian linux-perf")


def pmu_reason(node: Transport) -> str:
    """'' when the node has a hardware PMU, else the reason there is none."""
    test = " || ".join(f"test -e {shlex.quote(p)}" for p in PMU_DEVICES)
    res = node.run(["sh", "-c", test], timeout=10.0)
    if res.ok:
        return ""
    return ("no hardware PMU: /sys/bus/event_source/devices has no cpu or cpu_core "
            "(software events only, as in a VM without a virtual PMU), so no cycles or "
            "instructions")


def record_argv(perf: str, cpu: int, hz: int, out: str, duration_s: float) -> list[str]:
    """Sample CPU ``cpu`` with call chains (``-g``) for ``duration_s`` into ``out``."""
    return [perf, "record", "-q", "-g", "-C", str(cpu), "-e", "cpu-clock", "-F", str(hz),
            "-o", out, "--", "sleep", f"{duration_s:g}"]


def stat_argv(perf: str, cpu: int, duration_s: float) -> list[str]:
    return [perf, "stat", "-x", ",", "-C", str(cpu), "-e", "cycles,instructions",
            "--", "sleep", f"{duration_s:g}"]


def other_cpus(node: Transport, cpu: int) -> str | None:
    """The node's online CPUs but ``cpu`` (a taskset list), None when there are none:
    perf itself then runs off the CPU it measures."""
    res = node.run(["cat", "/sys/devices/system/cpu/online"], timeout=10.0)
    cpus: list[int] = []
    for part in res.stdout.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            return None
    rest = [c for c in cpus if c != cpu]
    return ",".join(map(str, rest)) if rest else None


__all__ = ["parse_stat", "has_perf", "pmu_reason", "record_argv", "stat_argv", "other_cpus",
           "PMU_DEVICES"]
