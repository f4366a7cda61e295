"""Counters of the fast path (fp_stats in xdp_fp.c), as ``{name: packets}``.

Names and order come from the ``FP_COUNTERS`` X-macro of
``testbed/dataplanes/xdp/xdp_fp.h``.  ``xdp.sh counters`` prints the per-CPU map as
bpftool JSON (nothing when no fast path is attached); this module sums the CPUs.
"""

from __future__ import annotations

from srperf.forwarders.stats_map import CountersError, StatsMap
from srperf.resources import xdp_dir

_STATS = StatsMap(lambda: xdp_dir() / "xdp_fp.h", "FP_COUNTERS", "fp_stats")
counter_names = _STATS.counter_names
"""Counter names in fp_stats index order, read from xdp_fp.h."""
parse_dump = _STATS.parse_dump
"""``{name: packets}`` from ``bpftool -j map dump`` of fp_stats (CPUs summed)."""


__all__ = ["counter_names", "parse_dump", "CountersError"]
