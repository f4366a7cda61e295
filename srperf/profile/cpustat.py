"""Busy time of one CPU from ``/proc/stat`` (read on the SUT through its transport).

``cpuN user nice system idle iowait irq softirq steal guest guest_nice`` in clock
ticks (``getconf CLK_TCK``, USER_HZ: 100 on Linux, so 10 ms resolution).  A
forwarding CPU spends its packet work in ``system`` (threaded NAPI, a kernel thread
with bottom halves off), ``softirq`` (NAPI in softirq context) and ``irq``.
"""

from __future__ import annotations

from dataclasses import dataclass

from srperf.transports.base import Transport

BUSY_FIELDS = ("system", "irq", "softirq")
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class CpuStatError(RuntimeError):
    """The CPU's line could not be read or parsed."""


@dataclass(frozen=True)
class CpuTimes:
    """One CPU's cumulative times, clock ticks."""

    ticks: dict[str, int]

    def busy_ticks(self) -> int:
        return sum(self.ticks.get(k, 0) for k in BUSY_FIELDS)


def parse_proc_stat(text: str, cpu: int) -> CpuTimes:
    """The ``cpu<cpu>`` line of ``/proc/stat`` text."""
    name = f"cpu{cpu}"
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return CpuTimes({k: int(v) for k, v in zip(_FIELDS, parts[1:])})
    raise CpuStatError(f"/proc/stat has no line for {name}")


def read(transport: Transport, cpu: int) -> CpuTimes:
    res = transport.run(["cat", "/proc/stat"], timeout=10.0)
    if not res.ok:
        raise CpuStatError(f"{transport.where}: cat /proc/stat: {res.stderr.strip()}")
    return parse_proc_stat(res.stdout, cpu)


def clock_ticks(transport: Transport) -> int:
    """USER_HZ of the node (ticks per second of /proc/stat)."""
    res = transport.run(["getconf", "CLK_TCK"], timeout=10.0)
    try:
        return int(res.stdout.strip())
    except ValueError:
        raise CpuStatError(f"{transport.where}: getconf CLK_TCK: "
                           f"{(res.stderr or res.stdout).strip()}") from None




@dataclass(frozen=True)
class Thread:
    """A task on the node: pid, the CPU it last ran on, its name (``comm``)."""

    pid: int
    cpu: int
    comm: str


def parse_ps(text: str) -> list[Thread]:
    """``ps -e -L -o tid=,psr=,comm=`` output."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            out.append(Thread(int(parts[0]), int(parts[1]), parts[2].strip()))
    return out


def threads_named(transport: Transport, prefix: str) -> list[Thread]:
    """Tasks whose name starts with ``prefix`` (on any CPU)."""
    res = transport.run(["ps", "-e", "-L", "-o", "tid=,psr=,comm="], timeout=20.0)
    return [t for t in parse_ps(res.stdout) if t.comm.startswith(prefix)]


def parse_task_ticks(text: str) -> int:
    """utime + stime (clock ticks) from one ``/proc/PID/stat`` line."""
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[11]) + int(rest[12])   # fields 14 and 15 of proc(5)


def task_ticks(transport: Transport, pids: list[int]) -> dict[int, int]:
    """utime + stime (clock ticks) of each of ``pids`` that still exists."""
    if not pids:
        return {}
    res = transport.run(["cat", *(f"/proc/{p}/stat" for p in pids)], timeout=10.0)
    out = {}
    for line in res.stdout.splitlines():
        if line.strip():
            out[int(line.split()[0])] = parse_task_ticks(line)
    if not out and not res.ok:
        raise CpuStatError(f"{transport.where}: reading /proc/PID/stat of {pids}: "
                           f"{res.stderr.strip()}")
    return out


__all__ = ["CpuTimes", "CpuStatError", "parse_proc_stat", "read", "clock_ticks", "BUSY_FIELDS",
           "Thread", "parse_ps", "threads_named", "parse_task_ticks", "task_ticks"]
