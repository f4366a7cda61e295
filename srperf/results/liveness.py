"""Which process runs a run, and whether it still lives.

A run row names its process by PID, host name and the process's start time (in
clock ticks since boot, field 22 of ``/proc/PID/stat``), so that a PID reused by
another process after a crash is not taken for the run's.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessId:
    """A process on a host: PID, host name and start time (None when unknown)."""

    pid: int
    host: str
    start: str | None


def start_time(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot; None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def this_process() -> ProcessId:
    pid = os.getpid()
    return ProcessId(pid, socket.gethostname(), start_time(pid))


def is_alive(proc: ProcessId) -> bool | None:
    """True if the process runs, False if it is gone, None if it cannot be told
    (another host, or no PID stored)."""
    if not proc.pid or proc.host != socket.gethostname():
        return None
    now = start_time(proc.pid)
    if now is None:
        return False
    return proc.start is None or now == proc.start


__all__ = ["ProcessId", "is_alive", "start_time", "this_process"]
