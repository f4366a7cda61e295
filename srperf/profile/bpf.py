"""Each BPF program's run time per packet, from the kernel's BPF statistics.

With ``kernel.bpf_stats_enabled`` = 1 the kernel sums, per program, its runs and the
nanoseconds they took (``bpftool prog show``: ``run_cnt``, ``run_time_ns``).  The
statistic is global to the host and costs a little on every program while on, so
:class:`BpfPrograms` switches it on only for the trial and restores the value it found.
Programs are those attached (tc or XDP) in the SUT's network namespace, read through
the SUT's transport (``bpftool -j net show``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from srperf.profile.model import Profile, ProgramCost
from srperf.profile.sources import ProfileSource
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"


def attached(net_show: str) -> dict[int, str]:
    """``bpftool -j net show`` output: {program id: name} of every tc and XDP program."""
    found: dict[int, str] = {}
    data: Any = json.loads(net_show or "[]")
    for block in data if isinstance(data, list) else [data]:
        for kind in ("xdp", "tc", "tcx"):
            for entry in block.get(kind, []) or []:
                pid = entry.get("prog_id", entry.get("id"))
                if pid is not None:
                    name = str(entry.get("name") or entry.get("prog_name") or f"id{pid}")
                    found[int(pid)] = name.split(":")[0]
    return found


def prog_stats(prog_show: str) -> tuple[str, int, int]:
    """``bpftool -j prog show id N``: (name, run_cnt, run_time_ns)."""
    info = json.loads(prog_show)
    return str(info.get("name", "")), int(info.get("run_cnt", 0)), \
        int(info.get("run_time_ns", 0))


class BpfPrograms(ProfileSource):
    """Run time of the BPF programs attached in the SUT's namespace during the trial."""

    name = "bpf"

    def __init__(self, node: Transport, bpftool: str = "bpftool") -> None:
        self.node, self.bpftool = node, bpftool
        self._old: str | None = None
        self._before: dict[int, tuple[str, int, int]] = {}
        self._why = ""

    def _snapshot(self) -> dict[int, tuple[str, int, int]]:
        res = self.node.run([self.bpftool, "-j", "net", "show"], timeout=20.0)
        if not res.ok:
            raise RuntimeError(f"{self.bpftool} net show: {(res.stderr or res.stdout).strip()}")
        out = {}
        for pid, attach_name in attached(res.stdout).items():
            prog = self.node.run([self.bpftool, "-j", "prog", "show", "id", str(pid)],
                                 timeout=20.0)
            if prog.ok:
                name, runs, ns = prog_stats(prog.stdout)
                out[pid] = (name or attach_name, runs, ns)
        return out

    def start(self) -> None:
        self._why = ""
        res = self.node.run(["cat", SYSCTL], timeout=10.0)
        if not res.ok:
            self._why = f"BPF statistics not available ({SYSCTL}: {res.stderr.strip()})"
            return
        self._old = res.stdout.strip()
        if self._old != "1":
            self._write("1")
        try:
            self._before = self._snapshot()
        except (RuntimeError, ValueError) as exc:
            self._why = f"BPF programs not read: {exc}"

    def _write(self, value: str) -> None:
        res = self.node.run(["sh", "-c", f"echo {int(value)} > {SYSCTL}"], timeout=10.0)
        if not res.ok:
            raise RuntimeError(f"{self.node.where}: cannot set {SYSCTL} to {value}: "
                               f"{res.stderr.strip()}")

    def stop(self, profile: Profile) -> None:
        try:
            if self._why:
                profile.notes.append(self._why)
                return
            try:
                after = self._snapshot()
            except (RuntimeError, ValueError) as exc:
                profile.notes.append(f"BPF programs not read: {exc}")
                return
            for pid, (name, runs, ns) in sorted(after.items()):
                _, runs0, ns0 = self._before.get(pid, (name, 0, 0))
                profile.programs.append(ProgramCost(name, pid, runs - runs0, ns - ns0))
            if not after:
                profile.notes.append("no BPF program attached in the SUT's namespace")
        finally:
            if self._old is not None and self._old != "1":
                self._write(self._old)
            self._old = None


__all__ = ["BpfPrograms", "attached", "prog_stats", "SYSCTL"]
