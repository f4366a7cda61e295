"""A user-space delay line at an interface's ingress, for kernels without netem.

This kernel has neither the netem qdisc nor fq (so eBPF cannot delay by EDT either).
:func:`insert` puts ``delay_line`` (``testbed/dataplanes/delay/delay_line.c``) on the
receive path of interface DEV in namespace NS, without touching DEV's addresses or
routes::

    NS:   DEV ingress --divert--> dl-DEV (veth) ==== d0  <NS>-dl<DEV>: delay_line d0
    NS:   DEV ingress <-give_back-- dl-DEV  <========= d0  (after DELAY ms)

* ``divert`` (tc cls_bpf on DEV's ingress, ``delay_divert.c``) redirects every frame to
  the egress of a veth ``dl-DEV`` whose peer ``d0`` lives in a namespace of its own;
* ``delay_line`` reads ``d0`` (AF_PACKET, GSO state kept by ``PACKET_VNET_HDR``), holds
  each frame DELAY ms in a FIFO, drops a share if asked, and sends it back on ``d0``;
* ``give_back`` (on ``dl-DEV``'s ingress) marks the frame and hands it to DEV's ingress,
  where ``divert`` lets marked frames pass: the stack sees them arrive on DEV, late.

The delay line is a :class:`~srperf.transports.base.Held` process: it ends when srperf
lets go of it (even when srperf is killed).  :meth:`DelayLine.remove` undoes everything;
so does deleting NS (the veth goes with it) and the delay line's namespace.
Delays are milliseconds; loss is a share in percent of the frames the delay line sees
(a GSO frame is one frame: turn GSO off upstream for a per-segment loss).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srperf.build import ensure_built
from srperf.errors import SrperfError, TransportError
from srperf.resources import testbed_dir
from srperf.transports.base import Held, Transport
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

CFLAGS = ["-O2", "-Wall", "-Wextra"]
BPF_CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-target", "bpf", "-mcpu=v3",
              "-I/usr/include/x86_64-linux-gnu"]
PEER = "d0"
"""The delay line's interface, in its own namespace."""
TC_PREF = "7"
"""tc filter preference of the divert program (the drop program uses 1)."""
MAX_DELAY_MS = 10_000.0
READY_TIMEOUT_S = 10.0


class DelayLineError(SrperfError):
    """The delay line could not be inserted or did not answer."""


def source_dir() -> Path:
    return testbed_dir() / "dataplanes" / "delay"


def build_delay_line() -> Path:
    """Compile ``delay_line`` (warning-free with ``-Wall -Wextra``); its path."""
    src = source_dir() / "delay_line.c"
    return ensure_built("delay_line", [src], ["gcc", *CFLAGS, "-o", "{out}", str(src)])


def divert_object() -> Path:
    """Compile the tc programs that divert a link's frames through the delay line."""
    src = source_dir() / "delay_divert.c"
    return ensure_built("delay_divert.o", [src],
                        ["clang", *BPF_CFLAGS, "-c", str(src), "-o", "{out}"])


def divert_dev(dev: str) -> str:
    """Name of the veth end beside ``dev`` that frames are diverted to (15 characters
    at most, the kernel's limit)."""
    return f"dl-{dev}"[:15]


def line_ns(ns: str, dev: str) -> str:
    """Name of the delay line's namespace for ``dev`` in ``ns``."""
    return f"{ns}-dl{dev}"


@dataclass
class DelayLine:
    """A delay line inserted at ``dev``'s ingress in namespace ``ns``."""

    machine: Transport
    """The machine the namespaces are on."""
    ns: str
    """Namespace of the impaired interface."""
    dev: str
    """The impaired interface: what it receives arrives ``delay_ms`` late."""
    delay_ms: float
    """Added one-way delay (ms)."""
    loss_pct: float = 0.0
    """Share of the frames dropped by the delay line (%)."""
    final: dict[str, Any] = field(default_factory=dict)
    """The delay line's last counters (after :meth:`remove`)."""
    _held: Held | None = field(default=None, init=False, repr=False)
    _made: list[str] = field(default_factory=list, init=False, repr=False)

    @property
    def line_ns(self) -> str:
        return line_ns(self.ns, self.dev)

    def _run(self, argv: list[str], ns: str | None = None, check: bool = True) -> str:
        full = ["ip", "netns", "exec", ns, *argv] if ns else argv
        res = self.machine.run(full)
        if check and not res.ok:
            raise DelayLineError(f"{' '.join(full)}: {(res.stderr or res.stdout).strip()}")
        return res.stdout

    def _local_path(self, path: Path) -> str:
        local = isinstance(self.machine, NetnsTransport) and self.machine.ns is None
        return str(path) if local else self.machine.push(path)

    def insert(self) -> "DelayLine":
        """Build the diversion and start the delay line; on failure nothing stays."""
        if not 0 <= self.delay_ms <= MAX_DELAY_MS:
            raise ValueError(f"delay_ms {self.delay_ms!r}: 0-{MAX_DELAY_MS:g}")
        if not 0 <= self.loss_pct <= 100:
            raise ValueError(f"loss_pct {self.loss_pct!r}: 0-100")
        exe = self._local_path(build_delay_line())
        obj = self._local_path(divert_object())
        try:
            self._insert(exe, obj)
        except BaseException:
            self.remove()
            raise
        log.info("delay line on %s/%s: %g ms, loss %g %%", self.ns, self.dev, self.delay_ms,
                 self.loss_pct)
        return self

    def _insert(self, exe: str, obj: str) -> None:
        ns, dev, lns, div = self.ns, self.dev, self.line_ns, divert_dev(self.dev)
        mtu = json.loads(self._run(["ip", "-j", "link", "show", "dev", dev], ns))[0]["mtu"]
        self._run(["ip", "netns", "add", lns])
        self._made.append("ns")
        # no IPv6 on the diversion: neither end may answer or solicit anything
        self._run(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1",
                   "net.ipv6.conf.all.disable_ipv6=1"], lns)
        self._run(["ip", "-n", lns, "link", "add", PEER, "mtu", str(mtu), "type", "veth",
                   "peer", "name", div, "mtu", str(mtu), "netns", ns])
        self._run(["sysctl", "-qw", f"net.ipv6.conf.{div}.disable_ipv6=1"], ns)
        self._run(["ip", "-n", lns, "link", "set", PEER, "up"])
        self._run(["ip", "-n", ns, "link", "set", div, "up"])
        argv = [exe, "-d", f"{self.delay_ms:g}", "-l", f"{self.loss_pct:g}", PEER]
        self._held = self.machine.hold(["ip", "netns", "exec", lns, *argv])
        line = self._held.readline(READY_TIMEOUT_S)
        if line != "ready":
            raise DelayLineError(f"delay line in {lns}: {line or 'ended without a word'}")
        self._run(["tc", "qdisc", "replace", "dev", div, "clsact"], ns)
        self._run(["tc", "filter", "add", "dev", div, "ingress", "pref", "1", "handle", "1",
                   "bpf", "direct-action", "object-file", obj, "section", "tc/give_back"], ns)
        self._set_map(div, "dl_return_cfg", self._ifindex(dev))
        self._run(["tc", "qdisc", "replace", "dev", dev, "clsact"], ns)
        self._made.append("divert")
        self._run(["tc", "filter", "add", "dev", dev, "ingress", "pref", TC_PREF, "handle",
                   "1", "bpf", "direct-action", "object-file", obj, "section", "tc/divert"],
                  ns)
        self._set_map(dev, "dl_divert_cfg", self._ifindex(div))

    def _ifindex(self, dev: str) -> int:
        return int(json.loads(self._run(["ip", "-j", "link", "show", "dev", dev],
                                        self.ns))[0]["ifindex"])

    def _set_map(self, dev: str, name: str, value: int) -> None:
        filters = json.loads(self._run(["tc", "-j", "filter", "show", "dev", dev, "ingress"],
                                       self.ns) or "[]")
        for f in filters:
            prog = f.get("options", {}).get("prog", {})
            if "id" not in prog:
                continue
            info = json.loads(self._run(["bpftool", "-j", "prog", "show", "id",
                                         str(prog["id"])]))
            for map_id in info.get("map_ids", []):
                m = json.loads(self._run(["bpftool", "-j", "map", "show", "id",
                                          str(map_id)]))
                if m.get("name") == name:
                    hexval = [f"{(value >> s) & 0xff:02x}" for s in (0, 8, 16, 24)]
                    self._run(["bpftool", "map", "update", "id", str(map_id), "key", "hex",
                               "00", "00", "00", "00", "value", "hex", *hexval])
                    return
        raise DelayLineError(f"{self.ns}/{dev}: no BPF map {name} on its tc ingress")

    def counters(self) -> dict[str, int]:
        """The delay line's counters now, summed over its paths (frames, bytes)."""
        if self._held is None:
            return _totals(self.final)
        if not self._held.alive():
            raise DelayLineError(f"the delay line in {self.line_ns} has ended")
        try:
            self._held.send("stats")
            line = self._held.readline(5.0)
        except TransportError as exc:
            raise DelayLineError(f"delay line in {self.line_ns}: {exc}") from exc
        tag, _, body = line.partition(" ")
        if tag != "stats":
            raise DelayLineError(f"delay line in {self.line_ns} answered {line!r}")
        return _totals(json.loads(body))

    def remove(self) -> None:
        """Take the delay line out (idempotent, best effort): frames arrive on time again.
        Its last counters are kept in :attr:`final`."""
        if "divert" in self._made:
            self._run(["tc", "filter", "del", "dev", self.dev, "ingress", "pref", TC_PREF],
                      self.ns, check=False)
            rest = self._run(["tc", "filter", "show", "dev", self.dev, "ingress"], self.ns,
                             check=False)
            if not rest.strip():
                self._run(["tc", "qdisc", "del", "dev", self.dev, "clsact"], self.ns,
                          check=False)
        if self._held is not None:
            held, self._held = self._held, None
            try:
                if held.alive():
                    self._stop(held)
                else:
                    held.close()
            except TransportError as exc:
                log.warning("stopping the delay line in %s: %s", self.line_ns, exc)
        if "ns" in self._made:
            # the veth first: a deleted namespace's devices go later, in the kernel's
            # own time, so its peer dl-DEV would still be beside DEV for a moment
            self._run(["ip", "link", "del", divert_dev(self.dev)], self.ns, check=False)
            self._run(["ip", "netns", "del", self.line_ns], check=False)
        self._made.clear()

    def _stop(self, held: Held) -> None:
        try:
            held.send("quit")   # it prints its final counters and exits
            line = held.readline(5.0)
            if line.startswith("final "):
                self.final = json.loads(line.split(" ", 1)[1])
        finally:
            held.close()


def _totals(stats: dict[str, Any]) -> dict[str, int]:
    keys = ("rx", "rx_bytes", "tx", "tx_bytes", "lost", "overflow", "tx_errors",
            "kernel_drops", "pending")
    return {k: sum(int(p.get(k, 0)) for p in stats.get("paths", [])) for k in keys}


def insert(machine: Transport, ns: str, dev: str, delay_ms: float,
           loss_pct: float = 0.0) -> DelayLine:
    """Delay what ``dev`` in ``ns`` receives by ``delay_ms`` (and drop ``loss_pct`` % of
    it); the inserted :class:`DelayLine` (call :meth:`DelayLine.remove`)."""
    return DelayLine(machine, ns, dev, delay_ms, loss_pct).insert()


def stale_namespaces(names: list[str], ns: str) -> list[str]:
    """Delay-line namespaces of interfaces of ``ns`` among ``names``."""
    return [n for n in names if n.startswith(f"{ns}-dl")]


__all__ = ["DelayLine", "DelayLineError", "insert", "build_delay_line", "divert_object",
           "divert_dev", "line_ns", "stale_namespaces"]
