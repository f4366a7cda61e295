"""Facts about the host srperf runs on."""

from __future__ import annotations

import os


def host_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity: a container's cpuset too)."""
    return set(os.sched_getaffinity(0))


def host_memory_mb() -> int | None:
    """This host's memory in MiB (``MemTotal`` of /proc/meminfo; None when unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


__all__ = ["host_cpus", "host_memory_mb"]
