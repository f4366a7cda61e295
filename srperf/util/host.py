"""Facts about the host srperf runs on."""

from __future__ import annotations

import os


def host_cpus() -> set[int]:
    """The CPUs this process may run on (its affinity: a container's cpuset too)."""
    return set(os.sched_getaffinity(0))


__all__ = ["host_cpus"]
