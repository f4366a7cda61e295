"""Run time of the eBPF proxy's programs, from the kernel's BPF statistics.

With ``kernel.bpf_stats_enabled`` = 1 the kernel sums, per program, the number of runs
and the nanoseconds spent in them (``bpftool prog show``: ``run_cnt``, ``run_time_ns``).
The mean time per run is the proxy's own cost per packet, whatever the traffic
generator can send: benches quote it where the generator, not the SUT, limits the
throughput.  The statistic is global to the host and costs a little on every BPF
program while on, so :func:`bpf_stats` switches it on only around a measurement and
restores the previous value.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from srperf.safety import safe_paths
from srperf.util.netns import run

log = logging.getLogger(__name__)

SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


@dataclass(frozen=True)
class ProgRuns:
    """Runs of one program and the nanoseconds they took, since it was loaded."""

    runs: int
    ns: int

    def __sub__(self, other: "ProgRuns") -> "ProgRuns":
        return ProgRuns(self.runs - other.runs, self.ns - other.ns)

    @property
    def ns_per_run(self) -> float | None:
        return self.ns / self.runs if self.runs else None


@contextlib.contextmanager
def bpf_stats() -> Iterator[None]:
    """``kernel.bpf_stats_enabled`` = 1 inside the block, the previous value after."""
    old = SYSCTL.read_text().strip()
    safe_paths.write_sysctl(SYSCTL, "1\n")
    try:
        yield
    finally:
        safe_paths.write_sysctl(SYSCTL, f"{old}\n")


def attached_programs(ns: str, prefix: str = "srp_") -> dict[str, int]:
    """``{program name: id}`` of the tc programs named ``prefix*`` attached in ``ns``."""
    found: dict[str, int] = {}
    for line in run(["bpftool", "net", "show"], ns=ns).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[2].startswith(prefix):
            found[parts[2].split(":")[0]] = int(parts[4])
    return found


def prog_runs(ns: str, prefix: str = "srp_") -> dict[str, ProgRuns]:
    """Runs and run time of each attached ``prefix*`` program in ``ns``."""
    out: dict[str, ProgRuns] = {}
    for name, prog_id in attached_programs(ns, prefix).items():
        info = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog_id)]).stdout)
        out[name] = ProgRuns(int(info.get("run_cnt", 0)), int(info.get("run_time_ns", 0)))
    return out


__all__ = ["ProgRuns", "bpf_stats", "attached_programs", "prog_runs"]
