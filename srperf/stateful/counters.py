"""What the SUT did during a repetition: its forwarding CPU's busy share, and the
proxy's own counters as the caching-proxy paper's Table I shows them.

CPU busy share comes from ``/proc/stat`` of the SUT, read through its transport before
and after: ``busy = 1 - (idle + iowait) / total`` of the jiffies in between, on the
SUT's forwarding CPU (``sut.cpu``), or on all CPUs when unset.

Table I (ingress successes, egress successes, not cached) from the eBPF proxy's
counters (names from ``srproxy.h``, :mod:`srperf.forwarders.ebpf.counters`): ingress
successes are packets the proxy decapsulated and sent to the VNF (``in_cache``,
``in_ad``, ``in_as``), egress successes packets from the VNF whose header it restored
(``cache_hit``, ``from_ad``, ``from_as``), not cached the packets from the VNF it had no
header for (``cache_miss``, ``from_no_state``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from srperf.stateful.base import StatefulError
from srperf.transports.base import Transport

TABLE_I = {
    "ingress_ok": ("in_cache", "in_ad", "in_as", "in_am"),
    "egress_ok": ("cache_hit", "from_ad", "from_as", "from_am"),
    "not_cached": ("cache_miss", "from_no_state"),
    "duplicates": ("cache_dup",),
    "stale": ("cache_stale",),
}
"""Table I's columns (and the caching proxy's duplicates and stale entries), each the
sum of these eBPF counters (packets)."""


@dataclass(frozen=True)
class CpuTimes:
    """Jiffies of one ``/proc/stat`` CPU line."""

    busy: int
    total: int


def read_cpu(node: Transport, cpu: int | None) -> CpuTimes:
    """``/proc/stat`` of ``node``: CPU ``cpu`` (None: the ``cpu`` line of all CPUs)."""
    res = node.run(["cat", "/proc/stat"], timeout=15.0)
    if not res.ok:
        raise StatefulError(f"{node.where}: cannot read /proc/stat: {res.stderr.strip()}")
    label = "cpu" if cpu is None else f"cpu{cpu}"
    for line in res.stdout.splitlines():
        words = line.split()
        if words and words[0] == label:
            values = [int(v) for v in words[1:9]]   # user..steal (guest is inside user)
            idle = values[3] + values[4]
            return CpuTimes(busy=sum(values) - idle, total=sum(values))
    raise StatefulError(f"{node.where}: no {label} line in /proc/stat")


def busy_pct(before: CpuTimes, after: CpuTimes) -> float | None:
    """Busy share between two readings, percent (None when no time passed)."""
    total = after.total - before.total
    return None if total <= 0 else 100.0 * (after.busy - before.busy) / total


def table_i(delta: Mapping[str, int]) -> dict[str, int]:
    """Table I's columns from a delta of the proxy's counters."""
    return {col: sum(int(delta.get(name, 0)) for name in names)
            for col, names in TABLE_I.items()}


__all__ = ["CpuTimes", "read_cpu", "busy_pct", "table_i", "TABLE_I"]
