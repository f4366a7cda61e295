"""xdpgen's kernel objects of one tester namespace, found without names (tests).

Other helpers may run xdpgen on this host at the same time, so its programs are not
found by name: :class:`Seen` reads *our* xdpgen's program from the XDP program it holds on
the loopback device of our tester namespace (the dispatcher hold, xdpgen.c ``hold``), and
that program's maps and links, while a run goes; afterwards none of those ids may exist.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from srperf.util.netns import netns_names

BPFFS = Path("/sys/fs/bpf")


def _json(argv: list[str]) -> Any:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return json.loads(proc.stdout)


def bpftool_list(what: str, tries: int = 20) -> list[dict[str, Any]]:
    """``bpftool -j WHAT show``: every program, map or link the kernel holds.  A listing
    fails (exit 255) when an object it walks is freed meanwhile, which other xdpgen runs
    on the host make likely; such a listing is read again, and after ``tries`` failures
    this raises: an unread listing is never taken for an empty one."""
    for _ in range(tries):
        proc = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True,
                              text=True)
        if proc.returncode == 0:
            return json.loads(proc.stdout) if proc.stdout.strip() else []
        time.sleep(0.05)
    raise RuntimeError(f"bpftool {what} show failed {tries} times: {proc.stderr.strip()}")


@dataclass
class Seen:
    """xdpgen's kernel objects seen in one tester namespace while a run went on."""

    ns: str
    progs: set[int] = field(default_factory=set)
    maps: set[int] = field(default_factory=set)
    links: set[int] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)

    def look(self) -> None:
        if self.ns not in netns_names():
            return
        lo = _json(["ip", "-n", self.ns, "-j", "link", "show", "lo"]) or [{}]
        prog = lo[0].get("xdp", {}).get("prog", {})
        if prog.get("name") != "xdpgen_tx":
            return
        self.progs.add(int(prog["id"]))
        info = _json(["bpftool", "-j", "prog", "show", "id", str(prog["id"])]) or {}
        self.maps.update(int(m) for m in info.get("map_ids", []))
        for lk in bpftool_list("link"):
            if lk.get("prog_id") == prog["id"]:
                self.links.add(int(lk["id"]))
        pids = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True,
                              text=True).stdout.split()
        self.pids.update(int(p) for p in pids)

    def left(self) -> list[str]:
        """Those objects (and processes of the namespace) that still exist."""
        out = []
        for what, ids in (("prog", self.progs), ("map", self.maps), ("link", self.links)):
            live = {int(o["id"]) for o in bpftool_list(what)}
            out += [f"{what} {i}" for i in sorted(ids & live)]
        out += [f"process {p}" for p in sorted(self.pids) if Path(f"/proc/{p}").exists()
                and "xdpgen" in Path(f"/proc/{p}/comm").read_text()]
        return out

    def gone(self, timeout_s: float = 10.0) -> list[str]:
        """What is left once the kernel had time to free closed objects (RCU)."""
        end = time.monotonic() + timeout_s
        left = self.left()
        while left and time.monotonic() < end:
            time.sleep(0.1)
            left = self.left()
        return left


@contextlib.contextmanager
def watching(ns: str) -> Iterator[Seen]:
    """Look for xdpgen's objects in ``ns`` every 50 ms in a thread for the block."""
    seen, stop = Seen(ns), threading.Event()

    def loop() -> None:
        while not stop.is_set():
            seen.look()
            stop.wait(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=10)


def pinned(prefix: str) -> list[str]:
    """Pinned BPF objects of a testbed of ``prefix`` or of xdpgen (which pins none)."""
    return sorted(p.name for p in BPFFS.iterdir() if prefix in p.name or "xdpgen" in p.name)


__all__ = ["Seen", "pinned", "watching"]
