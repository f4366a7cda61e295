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

The columns add up (caching proxy): every ingress success inserts one cache entry, which
its packet's return takes (an egress success), a later packet with its key replaces
when it is older than the VNF's age (``stale``: that packet was lost in the VNF), or
which is still there when the repetition ends (``left_in_cache``: the entries counted
in ``srp_cache`` after minus before, read by :func:`cache_entries`: lost in the VNF, or
on their way back).  So ``ingress_ok = egress_ok + stale + left_in_cache``; a
difference (LRU evictions, a read that failed) is shown as ``unaccounted``.

``duplicates`` are packets not sent to the VNF at all (not in ``ingress_ok``): the
proxy's key (srproxy.h ``struct srp_cache_key``) equals that of a packet still inside
the VNF.  The key once left the TCP options out, so duplicate ACKs that differ only
in their SACK blocks or timestamps were dropped as duplicates (600-1900 per 2 s
repetition); with the options hashed into the key (issue 35) the rest, captured from
the proxy (4 streams, 2 repetitions of 2-4 s), were identical packets: the server's
RSTs answering the segments still in flight after iperf3 closed its connections (20
bytes, no options, one sequence number: indistinguishable by design), and the same
data segment, timestamp included, again within the millisecond of the timestamp
clock while its first copy was in the VNF (a retransmission: iperf3 counted tens of
thousands per repetition at that rate).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Mapping

from srperf.stateful.base import StatefulError
from srperf.stateful.steering import FILTER_PREF
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

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


def table_i(delta: Mapping[str, int], left_in_cache: int | None = None) -> dict[str, int]:
    """Table I's columns from a delta of the proxy's counters; with ``left_in_cache``
    (the change of the caching proxy's entry count) also that and ``unaccounted``
    (``ingress_ok - egress_ok - stale - left_in_cache``: 0 when the columns add up)."""
    out = {col: sum(int(delta.get(name, 0)) for name in names)
           for col, names in TABLE_I.items()}
    if left_in_cache is not None:
        out["left_in_cache"] = left_in_cache
        out["unaccounted"] = (out["ingress_ok"] - out["egress_ok"] - out["stale"]
                              - left_in_cache)
    return out


def cache_entries(node: Transport, in_port: str) -> int | None:
    """Entries in the ``srp_cache`` map of the proxy attached to ``in_port`` of ``node``
    (None: no caching proxy's map there, or it could not be read)."""
    script = f"""set -euo pipefail
id=$(tc filter show dev {in_port} ingress pref {FILTER_PREF} | sed -n 's/.* id \\([0-9]*\\).*/\\1/p' | head -n 1)
[ -n "$id" ] || exit 3
for m in $(bpftool prog show id "$id" | sed -n 's/.*map_ids \\([0-9,]*\\).*/\\1/p' | tr ',' ' '); do
  if [[ "$(bpftool map show id "$m")" == *" name srp_cache "* ]]; then
    bpftool -j map dump id "$m"
    exit 0
  fi
done
exit 3
"""
    res = node.run(["bash", "-c", script], timeout=30.0)
    if not res.ok:
        log.warning("%s: srp_cache entries not read: %s", node.where,
                    (res.stderr or res.stdout).strip() or f"exit {res.returncode}")
        return None
    try:
        return len(json.loads(res.stdout or "[]"))
    except ValueError:
        return None


__all__ = ["CpuTimes", "read_cpu", "busy_pct", "table_i", "TABLE_I", "cache_entries"]
