"""Counters of the eBPF proxy dataplane (srp_stats), as ``{name: packets}``.

The counter names and their order come from the ``SRP_COUNTERS`` X-macro of
``testbed/dataplanes/ebpf/srproxy.h``, so C and Python cannot drift apart.
``ebpf.sh counters`` (run on the SUT) finds the proxy through its tc
attachments and prints the per-CPU map as bpftool JSON; this module sums the
CPUs and names the entries.  Every value is a number of packets since the
proxy was loaded; a SUT without a proxy attached yields ``{}``.
"""

from __future__ import annotations

import logging
from typing import Callable

from srperf.forwarders.stats_map import CountersError, StatsMap
from srperf.util.netns import run
from srperf.resources import cfg_script, ebpf_dir

log = logging.getLogger(__name__)

_STATS = StatsMap(lambda: ebpf_dir() / "srproxy.h", "SRP_COUNTERS", "srp_stats")
counter_names = _STATS.counter_names
"""Counter names in map-index order, read from srproxy.h."""
parse_dump = _STATS.parse_dump
"""``{name: packets}`` from ``bpftool -j map dump`` of srp_stats (CPUs summed)."""


Runner = Callable[[list[str]], str]
"""Runs argv on the SUT and returns its stdout (raises on failure)."""


def read_with(runner: Runner, script: str | None = None) -> dict[str, int]:
    """Counters through ``runner`` (any transport); ``script`` = path of ebpf.sh there."""
    return parse_dump(runner(["bash", script or str(cfg_script("ebpf")), "counters"]))


def read_counters(ns: str) -> dict[str, int]:
    """Counters of the proxy attached in network namespace ``ns`` ({} if none)."""
    def runner(argv: list[str]) -> str:
        res = run(argv, ns=ns, check=False)
        if not res.ok:
            raise CountersError(f"ebpf.sh counters in {ns} failed: {res.stderr.strip()}")
        return res.stdout

    return read_with(runner)


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before`` per counter (packets counted in between)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


__all__ = ["counter_names", "parse_dump", "read_counters", "read_with", "delta",
           "CountersError"]
