"""An SSH SUT's base setup from its testbed file, applied and undone: ``srperf testbed
prepare`` and ``srperf testbed unprepare``.

What a forwarder's CFG script takes for granted on the SUT (the virtual testbed
makes the same when it comes up), from the testbed file's ``addressing`` and
ports:

* sysctls: IPv6 and IPv4 forwarding, ``seg6_enabled`` on all, default and both
  test ports, reverse-path filtering off on them; quiet IPv6 on the test ports
  (no DAD, no router solicitations or advertisements accepted);
* the test ports up, with the SUT's IPv6 and IPv4 addresses
  (``addressing.sut_in_ip6`` ... with ``link_prefix_len6``/``4``);
* static neighbours for the tester's addresses and MACs (``tester.tx.mac`` ...),
  so that the SUT never resolves the tester (TRex answers no ND/ARP);
* ``ip sr tunsrc set addressing.tunsrc`` (else the kernel chooses a source
  address per encapsulated packet).

``prepare`` first records, on the SUT, what it changes
(``/run/srperf/prepared-<testbed>.json``: every sysctl's previous value, the
previous tunsrc, the addresses and neighbours it added); ``unprepare`` puts those
back from that record and removes it, so nothing srperf did stays, and what was
there before (an address the lab had set) is not removed.  Preparing twice is
harmless (the record of the first is kept).
"""

from __future__ import annotations

import json
import logging
import posixpath
from dataclasses import dataclass, field
from typing import Any

from srperf.config.model import TestbedConfig
from srperf.errors import SrperfError
from srperf.testbeds.lock import LOCK_DIR
from srperf.transports.base import Transport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Address:
    """An address srperf puts on a SUT port (``ip`` syntax: ``fd00:1::1/64``)."""

    dev: str
    cidr: str
    family: str
    """``-6`` or ``-4``."""


@dataclass(frozen=True)
class Neighbour:
    """A permanent neighbour entry for one of the tester's addresses."""

    dev: str
    ip: str
    mac: str


@dataclass(frozen=True)
class RouteEntry:
    """A route srperf adds on a host towards the SUT (``ip -6 route replace PREFIX via
    VIA dev DEV [src SRC]``)."""

    prefix: str
    via: str
    dev: str
    src: str = ""
    """Preferred source address of connections the route carries (empty: the kernel's
    choice, an address of ``dev``)."""

    def argv(self, verb: str) -> list[str]:
        return (["ip", "-6", "route", verb, self.prefix, "via", self.via, "dev", self.dev]
                + (["src", self.src] if self.src and verb != "del" else []))


@dataclass(frozen=True)
class BaseSetup:
    """What ``prepare`` applies to an SSH SUT (see the module docstring)."""

    sysctls: dict[str, str]
    ports: tuple[str, ...]
    addresses: tuple[Address, ...]
    neighbours: tuple[Neighbour, ...]
    tunsrc: str
    mtu: int | None
    """MTU set on ``ports`` (None: left as it is)."""
    record: str = field(default="")
    """The record of what was changed, on the node."""
    routes: tuple[RouteEntry, ...] = ()
    """Routes added (an endpoint host's routes towards the SUT)."""
    ports_key: str = "sut.in/out name"
    """The testbed key naming ``ports`` (in the message refusing a missing one)."""

    def commands(self) -> list[list[str]]:
        """The commands ``prepare`` runs, in order (what ``--dry-run`` prints)."""
        out: list[list[str]] = [["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in
                                                         self.sysctls.items())]]
        for dev in self.ports:
            out.append(["ip", "link", "set", "dev", dev]
                       + (["mtu", str(self.mtu)] if self.mtu is not None else []) + ["up"])
        for a in self.addresses:
            out.append(["ip", a.family, "addr", "replace", a.cidr, "dev", a.dev]
                       + (["nodad"] if a.family == "-6" else []))
        for n in self.neighbours:
            out.append(["ip", "neigh", "replace", n.ip, "lladdr", n.mac, "dev", n.dev,
                        "nud", "permanent"])
        for r in self.routes:
            out.append(r.argv("replace"))
        out.append(["ip", "sr", "tunsrc", "set", self.tunsrc])
        return out


RECORDED = "<recorded>"
"""What ``unprepare --dry-run`` shows for a value only the record on the SUT holds."""


def undo_commands(record: dict[str, Any] | None,
                  setup: BaseSetup) -> list[tuple[list[str], bool]]:
    """The commands ``unprepare`` runs, in order, each with whether its failure counts
    (a route or neighbour already gone does not).  ``record`` None: what ``--dry-run``
    prints without reading the SUT, from the file's setup, with :data:`RECORDED` for
    the values the record holds (only what ``prepare`` changed is undone)."""
    if record is None:
        record = {"tunsrc": RECORDED, "routes": [r.__dict__ for r in setup.routes],
                  "neighbours": [n.__dict__ for n in setup.neighbours],
                  "addresses": [a.__dict__ for a in setup.addresses],
                  "sysctls": {k: RECORDED for k in setup.sysctls}}
    out: list[tuple[list[str], bool]] = [
        (["ip", "sr", "tunsrc", "set", str(record.get("tunsrc") or "::")], True)]
    out += [(RouteEntry(**r).argv("del"), False) for r in record.get("routes", [])]
    out += [(["ip", "neigh", "del", n["ip"], "dev", n["dev"]], False)
            for n in record.get("neighbours", [])]
    out += [(["ip", a["family"], "addr", "del", a["cidr"], "dev", a["dev"]], True)
            for a in record.get("addresses", [])]
    sysctls = record.get("sysctls", {})
    if sysctls:
        out.append((["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in sysctls.items())], True))
    out.append((["rm", "-f", setup.record], True))
    return out


def record_path(tb: TestbedConfig) -> str:
    """Where ``prepare`` records what it changed, on the SUT."""
    from srperf.drivers.trex_server import file_key

    return posixpath.join(LOCK_DIR, f"prepared-{file_key(tb.name)}.json")


def base_setup(tb: TestbedConfig) -> BaseSetup:
    """The base setup of ``tb``'s SUT, from its file."""
    a, sut, tester = tb.addressing, tb.sut, tb.tester
    sin, sout = sut.in_port.name, sut.out_port.name
    sysctls = {"net.ipv6.conf.all.forwarding": "1", "net.ipv4.ip_forward": "1",
               "net.ipv6.conf.all.seg6_enabled": "1",
               "net.ipv6.conf.default.seg6_enabled": "1",
               "net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0"}
    for dev in (sin, sout):
        sysctls.update({f"net.ipv6.conf.{dev}.seg6_enabled": "1",
                        f"net.ipv4.conf.{dev}.rp_filter": "0",
                        f"net.ipv6.conf.{dev}.accept_dad": "0",
                        f"net.ipv6.conf.{dev}.accept_ra": "0",
                        f"net.ipv6.conf.{dev}.router_solicitations": "0"})
    addresses = tuple(
        Address(dev, f"{ip}/{length}", fam)
        for dev, ip6, ip4 in ((sin, a.sut_in_ip6, a.sut_in_ip4),
                              (sout, a.sut_out_ip6, a.sut_out_ip4))
        for ip, length, fam in ((ip6, a.link_prefix_len6, "-6"), (ip4, a.link_prefix_len4, "-4")))
    neighbours = (Neighbour(sin, a.tester_tx_ip6, tester.tx.mac),
                  Neighbour(sout, a.tester_rx_ip6, tester.rx.mac),
                  Neighbour(sin, a.tester_tx_ip4, tester.tx.mac),
                  Neighbour(sout, a.tester_rx_ip4, tester.rx.mac))
    return BaseSetup(sysctls, (sin, sout), addresses, neighbours, a.tunsrc, a.link_mtu,
                     record_path(tb))


class PrepareError(SrperfError):
    """A base-setup step the SUT refused (the command and its output named)."""


def _check(node: Transport, argv: list[str]) -> str:
    res = node.run(argv, timeout=30.0)
    if not res.ok:
        raise PrepareError(f"{node.where}: {' '.join(argv)} failed (exit {res.returncode}): "
                           f"{(res.stderr or res.stdout).strip() or 'no output'}")
    return res.stdout


def _tunsrc(node: Transport) -> str:
    """The SUT's current ``ip sr tunsrc`` (``::`` when unset)."""
    out = _check(node, ["ip", "sr", "tunsrc", "show"]).split()
    return out[-1] if out else "::"


def _has_address(node: Transport, a: Address) -> bool:
    res = node.run(["ip", a.family, "-o", "addr", "show", "dev", a.dev], timeout=30.0)
    return res.ok and f" {a.cidr} " in f" {res.stdout} "


def _read_record(node: Transport, path: str) -> Any:
    """The record on the SUT (not ok: none); PrepareError when something other than a
    regular file stands in its place (a FIFO would block the read and the write)."""
    from srperf.testbeds.lock import STATE_REFUSED, read_state_argv

    res = node.run(read_state_argv(path), timeout=30.0)
    if res.returncode == STATE_REFUSED:
        raise PrepareError(f"{node.where}: {res.stderr.strip()}: nothing changed")
    return res


def prepare(node: Transport, setup: BaseSetup) -> dict[str, object]:
    """Apply ``setup`` on the SUT reached by ``node``, recording what it changes first;
    returns the record.  A port that does not exist is refused before any change."""
    for dev in setup.ports:
        if not node.run(["ip", "link", "show", "dev", dev], timeout=30.0).ok:
            raise PrepareError(f"{node.where}: no interface {dev} ({setup.ports_key}): "
                               "nothing changed")
    old = _read_record(node, setup.record)
    if old.ok and old.stdout.strip():
        record: dict[str, object] = json.loads(old.stdout)
    else:
        values = _check(node, ["sysctl", "-n", *setup.sysctls]).split()
        record = {"sysctls": dict(zip(setup.sysctls, values)), "tunsrc": _tunsrc(node),
                  "addresses": [a.__dict__ for a in setup.addresses
                                if not _has_address(node, a)],
                  "neighbours": [n.__dict__ for n in setup.neighbours],
                  "routes": [r.__dict__ for r in setup.routes]}
        for r in setup.routes:
            there = node.run(["ip", "-6", "route", "show", "exact", r.prefix], timeout=30.0)
            if there.ok and there.stdout.strip():
                raise PrepareError(f"{node.where}: a route to {r.prefix} is already there "
                                   f"({there.stdout.strip()}); srperf would replace it: "
                                   "nothing changed")
        _check(node, ["mkdir", "-p", posixpath.dirname(setup.record)])
        res = node.run(["tee", setup.record], input_text=json.dumps(record, indent=1),
                       timeout=30.0)
        if not res.ok:
            raise PrepareError(f"{node.where}: cannot write {setup.record}: {res.stderr}")
    for argv in setup.commands():
        _check(node, argv)
    log.info("%s: base setup applied (record %s)", node.where, setup.record)
    return record


def unprepare(node: Transport, setup: BaseSetup) -> bool:
    """Undo what :func:`prepare` recorded; False when there was no record (nothing
    srperf prepared there)."""
    old = _read_record(node, setup.record)
    if not old.ok or not old.stdout.strip():
        return False
    record = json.loads(old.stdout)
    problems: list[str] = []

    def undo(argv: list[str]) -> None:
        res = node.run(argv, timeout=30.0)
        if not res.ok:
            problems.append(f"{' '.join(argv)}: {(res.stderr or res.stdout).strip()}")

    *steps, (remove, _) = undo_commands(record, setup)
    for argv, counts in steps:
        if counts:
            undo(argv)
        else:
            node.run(argv, timeout=30.0)
    if problems:
        raise PrepareError(f"{node.where}: undoing the base setup: " + "; ".join(problems)
                           + f" (record kept: {setup.record})")
    _check(node, remove)
    return True


__all__ = ["Address", "BaseSetup", "Neighbour", "PrepareError", "RouteEntry", "base_setup",
           "prepare", "record_path", "undo_commands", "unprepare"]
