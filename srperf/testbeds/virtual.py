"""The virtual testbed: a tester and a SUT network namespace on one Linux host.

Topology (names from the testbed config, defaults shown)::

    <prefix>-tester                      <prefix>-sut
      t0 (tx) ---------- veth ---------- s0 (in)   GRO on + threaded NAPI,
      t1 (rx) ---------- veth ---------- s1 (out)  napi kthread pinned, FIFO 50
      XDP drop sink on t1
      (a pfifo on t0 only with tester.options.queue_mode qdisc)

The tester has no IP stack on its ports (IPv6 disabled, no IPv4 address): the
generator writes raw frames and counts with kernel counters, so no neighbour
discovery, MLD or ICMP error ever mixes with test traffic.  The SUT has static
neighbours for the tester's MACs, forwarding and seg6 sysctls, ``ip sr tunsrc``
and offloads off (GRO on its ingress port only, for NAPI mode: the mode that
measured best here, see machine-facts.md).

srperf never reuses a testbed it did not make, or made with other settings:
``up`` records the settings it builds with (:func:`build_settings`) in
``/run/srperf/virtual-PREFIX.testbed.json`` before it makes anything; finding
the namespaces already there, it compares that record with the testbed file
and refuses (exit 2) on a difference, or when there is no record (namespaces
srperf did not make), advising ``srperf testbed down``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srperf.safety import bounded_read, safe_paths
from srperf.config.model import TestbedConfig
from srperf.errors import ConfigError
from srperf.forwarders.base import Forwarder
from srperf.util.netns import CommandFailed, netns_names, run
from srperf.config.settings import Settings
from srperf.testbeds.base import SutHandle, Testbed, TestbedError
from srperf.testbeds.lock import LOCK_DIR
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

BPFFS = Path("/sys/fs/bpf")
PIN_PREFIX = "srperf-"
"""ebpf.sh pins namespace N's objects in ``BPFFS/srperf-N`` (no shared parent)."""
OFFLOADS = ("rx", "tx", "sg", "tso", "gso", "gro", "lro", "rxvlan", "txvlan")


BUILT_ADDRESSING = ("link_mtu", "link_prefix_len6", "link_prefix_len4", "sut_in_ip6",
                    "sut_out_ip6", "sut_in_ip4", "sut_out_ip4", "tester_tx_ip6",
                    "tester_rx_ip6", "tester_tx_ip4", "tester_rx_ip4", "tunsrc")
"""The ``addressing`` keys built into the namespaces by ``up`` (the others, SIDs and
prefixes, are configured by each run's CFG script)."""


@dataclass(frozen=True)
class NapiThread:
    """A threaded-NAPI kernel thread serving one SUT port."""

    pid: int
    name: str


class VirtualTestbed(Testbed):
    """The namespace testbed described by a :class:`TestbedConfig`: built, used, removed."""

    kind = "virtual"
    makes_namespaces = True

    def __init__(self, tb: TestbedConfig) -> None:
        if tb.kind not in ("virtual",):
            raise TestbedError(f"{tb.source}: kind = {tb.kind!r}: only a virtual testbed "
                               "can be brought up on this host")
        super().__init__(tb)
        self._vpp_sut: Any = None

    @property
    def tb(self) -> TestbedConfig:
        """This testbed's description (the same object as :attr:`config`)."""
        return self.config

    @classmethod
    def check_config(cls, config: TestbedConfig) -> None:
        if config.sut.transport.kind != "netns":
            raise ConfigError(config.source, "sut.transport.kind", config.sut.transport.kind,
                              "a virtual testbed reaches its SUT through 'netns'")
        if config.tester.netns is not None:
            raise ConfigError(config.source, "tester.netns", config.tester.netns,
                              f"a virtual testbed's tester is {config.tester_ns} (from prefix)")
        for key, cpu in (("tester.cpu", config.tester.cpu), ("sut.cpu", config.sut.cpu)):
            if cpu is not None and cpu >= (os.cpu_count() or 1):
                raise ConfigError(config.source, key, cpu,
                                  f"this host has CPUs 0-{(os.cpu_count() or 1) - 1}")

    def check_forwarder(self, forwarder: Forwarder, source: str) -> None:
        if not forwarder.runs_in_netns:
            raise ConfigError(source, "forwarder", forwarder.name,
                              f"the virtual testbed {self.tb.source} runs the Linux kernel in "
                              "network namespaces; this forwarder needs an ssh testbed")

    def sut(self, forwarder: Forwarder, options: Settings) -> SutHandle:
        """The SUT; srperf's own VPP when the forwarder is vpp and the testbed names a binary."""
        if forwarder.name == "vpp" and self.tb.sut.vpp_binary is not None:
            from srperf.testbeds.vpp_sut import VppSutControl

            self._vpp_sut = VppSutControl(forwarder, self.node("sut"), self.config, options)
            return self._vpp_sut
        if forwarder.name == "vpp":   # the CFG script runs it as root here: checked again
            from srperf.safety import programs

            programs.check_program("<experiment>", "options.vppctl",
                                   str(getattr(options, "vppctl", "")))
        return super().sut(forwarder, options)

    def environment(self, forwarder: Forwarder | None = None) -> dict[str, Any]:
        env = super().environment(forwarder)
        vpp_sut = self._vpp_sut
        sut = env["nodes"].get("sut", {})
        if vpp_sut is not None and vpp_sut.vpp is not None and "forwarder" in sut:
            sut["forwarder"].update(vpp_sut.versions())
        return env

    def _make_node(self, role: str) -> Transport:
        return NetnsTransport(self.tb.tester_ns if role == "tester" else self.tb.sut_ns)

    def tester_netns(self) -> str | None:
        return self.tb.tester_ns

    def forwarding_threads(self) -> str | None:
        """The SUT ingress port's threaded-NAPI kthreads (``napi/s0-ID``, pinned to
        ``sut.cpu``); srperf's own VPP forwards in its own worker instead."""
        return None if self._vpp_sut is not None else f"napi/{self.tb.sut.in_port.name}-"

    # -- queries ---------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """Every namespace of this testbed that exists now (VNFs included)."""
        return sorted(n for n in netns_names() if n.startswith(f"{self.tb.prefix}-"))

    def is_up(self) -> bool:
        """True when both namespaces and all four ports exist (and the TRex server runs,
        when srperf manages one)."""
        tb = self.tb
        have = set(self.namespaces())
        if not {tb.tester_ns, tb.sut_ns} <= have:
            return False
        for ns, dev in ((tb.tester_ns, tb.tester.tx.name), (tb.tester_ns, tb.tester.rx.name),
                        (tb.sut_ns, tb.sut.in_port.name), (tb.sut_ns, tb.sut.out_port.name)):
            if not run(["ip", "link", "show", "dev", dev], ns=ns, check=False).ok:
                return False
        server = self._trex_server()
        return server is None or server.pid() is not None

    def _trex_server(self) -> Any:
        """The TRex server srperf runs in the tester namespace (``tester.options.release``),
        on the tester's veths through AF_PACKET; None without one."""
        from srperf.drivers.trex_server import managed_server

        return managed_server(self.tb, self.node("tester"), kernel_ports=True,
                              cpu=self.tb.tester.cpu)

    # -- what it was made with ------------------------------------------------
    @property
    def record_path(self) -> Path:
        """The record of the settings this testbed was made with."""
        return Path(LOCK_DIR) / f"virtual-{self.tb.prefix}.testbed.json"

    def record(self) -> dict[str, Any] | None:
        """The settings the testbed now up was made with (None: no record)."""
        data = bounded_read.read_record(self.record_path)
        return data.get("settings") if isinstance(data, dict) else None

    def differences(self) -> dict[str, tuple[Any, Any]]:
        """Settings whose value in the record differs from the testbed file's:
        ``{key: (recorded, in the file)}``; every key when there is no record."""
        want, have = build_settings(self.tb), self.record() or {}
        return {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}

    def check_reusable(self) -> None:
        """Raise ConfigError (exit 2) unless the namespaces there now were made by
        srperf with this file's settings (nothing there is fine)."""
        there = self.namespaces()
        if not there:
            return
        tb, advice = self.tb, f"remove it first with `srperf testbed down {self.tb.source}`"
        if self.record() is None:
            raise ConfigError(tb.source, "prefix", tb.prefix,
                              f"network namespaces {', '.join(there)} exist but srperf has no "
                              f"record of making them ({self.record_path}): srperf never "
                              f"reuses a testbed it did not make; {advice}, or pick another "
                              "prefix")
        diff = self.differences()
        if diff:
            key, (was, now) = next(iter(diff.items()))
            others = "; ".join(f"{k}: {a!r} there, {b!r} in the file"
                               for k, (a, b) in list(diff.items())[1:])
            raise ConfigError(tb.source, key, now,
                              f"the virtual testbed {tb.prefix} is up, made with {key} = "
                              f"{was!r}" + (f" (other differences: {others})" if others else "")
                              + f"; srperf never reuses a testbed made with other settings: "
                              f"{advice}")

    # -- up / down -------------------------------------------------------------
    def up(self) -> bool:
        """Create the testbed; does nothing (returns False) when it is already complete
        and was made by srperf with the same settings (ConfigError otherwise).

        A partial testbed srperf made (left by a crash) is removed first, then rebuilt.
        """
        self.check_reusable()
        if self.is_up():
            log.info("virtual testbed %s already up (same settings)", self.tb.prefix)
            return False
        self.down()
        self._write_record()
        try:
            self._create()
            server = self._trex_server()
            if server is not None:
                server.start()
        except Exception:
            log.error("testbed creation failed; removing what was made")
            self.down()
            raise
        return True

    def _write_record(self) -> None:
        """Record the settings before anything is made (a crash mid-way leaves a
        partial testbed srperf knows it made)."""
        safe_paths.write_file(self.record_path, json.dumps(
            {"source": self.tb.source, "name": self.tb.name,
             "settings": build_settings(self.tb)}, sort_keys=True))

    def down(self) -> None:
        """Remove every namespace, link and pinned BPF object of this testbed, the record
        of its settings, and stop the TRex server srperf runs in it."""
        if self.tb.tester_ns in self.namespaces():
            server = self._trex_server()
            if server is not None:
                server.stop()
        for ns in self.namespaces():
            run(["ip", "netns", "del", ns], check=False)
            pinned = BPFFS / f"{PIN_PREFIX}{ns}"
            if pinned.exists():
                safe_paths.remove_tree(pinned)
        safe_paths.remove_file(self.record_path)

    def status(self) -> list[str]:
        lines = super().status()
        if self.namespaces():
            if self.record() is None:
                lines.insert(1, "not made by srperf (no record of its settings)")
            elif self.differences():
                lines.insert(1, "made with other settings: " + ", ".join(
                    f"{k} = {a!r} (file: {b!r})" for k, (a, b) in self.differences().items()))
        return lines

    # -- construction ----------------------------------------------------------
    def _create(self) -> None:
        tb, a = self.tb, self.tb.addressing
        tns, sns = tb.tester_ns, tb.sut_ns
        tx, rx = tb.tester.tx.name, tb.tester.rx.name
        sin, sout = tb.sut.in_port.name, tb.sut.out_port.name
        for ns in (tns, sns):
            run(["ip", "netns", "add", ns])
            run(["ip", "link", "set", "dev", "lo", "up"], ns=ns)
        # No IP stack on the tester's ports; quiet IPv6 on the SUT (no DAD, RS).
        self._sysctls(tns, {"net.ipv6.conf.all.disable_ipv6": 1,
                            "net.ipv6.conf.default.disable_ipv6": 1})
        self._sysctls(sns, {"net.ipv6.conf.default.accept_dad": 0,
                            "net.ipv6.conf.default.router_solicitations": 0,
                            "net.ipv6.conf.default.accept_ra": 0,
                            "net.ipv6.conf.default.addr_gen_mode": 1})
        for t_dev, t_mac, s_dev, s_mac in ((tx, tb.tester.tx.mac, sin, tb.sut.in_port.mac),
                                           (rx, tb.tester.rx.mac, sout, tb.sut.out_port.mac)):
            run(["ip", "link", "add", "name", t_dev, "netns", tns, "address", t_mac,
                 "mtu", str(a.link_mtu), "type", "veth", "peer", "name", s_dev, "netns", sns,
                 "address", s_mac, "mtu", str(a.link_mtu)])
        self._sysctls(sns, {
            "net.ipv6.conf.all.forwarding": 1,
            "net.ipv4.ip_forward": 1,
            "net.ipv6.conf.all.seg6_enabled": 1,
            "net.ipv6.conf.default.seg6_enabled": 1,
            f"net.ipv6.conf.{sin}.seg6_enabled": 1,
            f"net.ipv6.conf.{sout}.seg6_enabled": 1,
            "net.ipv4.conf.all.rp_filter": 0,
            "net.ipv4.conf.default.rp_filter": 0,
            f"net.ipv4.conf.{sin}.rp_filter": 0,
            f"net.ipv4.conf.{sout}.rp_filter": 0,
        })
        for dev, ip6, ip4 in ((sin, a.sut_in_ip6, a.sut_in_ip4),
                              (sout, a.sut_out_ip6, a.sut_out_ip4)):
            run(["ip", "-6", "addr", "add", f"{ip6}/{a.link_prefix_len6}", "dev", dev,
                 "nodad"], ns=sns)
            run(["ip", "addr", "add", f"{ip4}/{a.link_prefix_len4}", "dev", dev], ns=sns)
        for ns, dev in ((tns, tx), (tns, rx), (sns, sin), (sns, sout)):
            self._offloads_off(ns, dev)
            run(["ip", "link", "set", "dev", dev, "up"], ns=ns)
        # Static neighbours: the SUT never resolves the tester's addresses.
        for ip, mac, dev in ((a.tester_tx_ip6, tb.tester.tx.mac, sin),
                             (a.tester_rx_ip6, tb.tester.rx.mac, sout),
                             (a.tester_tx_ip4, tb.tester.tx.mac, sin),
                             (a.tester_rx_ip4, tb.tester.rx.mac, sout)):
            run(["ip", "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent"],
                ns=sns)
        run(["ip", "sr", "tunsrc", "set", a.tunsrc], ns=sns)
        self._napi_mode(sns, sin)
        if tb.tester.driver == "trex":
            # TRex reads its rx port through AF_PACKET, which an XDP drop would starve;
            # with no IP stack on the tester's ports the kernel drops each frame after
            # TRex's copy, answering nothing.
            log.info("no XDP sink on %s/%s: TRex receives there", tns, rx)
        else:
            from srperf.drivers.linux_sink import attach_sink

            attach_sink(tns, rx)
        log.info("virtual testbed %s up", tb.prefix)

    @staticmethod
    def _sysctls(ns: str, values: dict[str, int]) -> None:
        argv = ["sysctl", "-q", "-w"] + [f"{k}={v}" for k, v in values.items()]
        run(argv, ns=ns)

    @staticmethod
    def _offloads_off(ns: str, dev: str) -> None:
        for feature in OFFLOADS:
            # veth does not implement every feature; each is switched off alone.
            run(["ethtool", "-K", dev, feature, "off"], ns=ns, check=False)

    def _napi_mode(self, ns: str, dev: str) -> list[NapiThread]:
        """GRO on + threaded NAPI on the SUT ingress port, its thread pinned at FIFO."""
        run(["ethtool", "-K", dev, "gro", "on"], ns=ns)
        sut = self.tb.sut
        if sut.napi_defer_hard_irqs or sut.gro_flush_timeout_us:
            flush_ns = round(sut.gro_flush_timeout_us * 1000)
            run(["sh", "-c", f"echo {sut.napi_defer_hard_irqs} > "
                 f"/sys/class/net/{dev}/napi_defer_hard_irqs && "
                 f"echo {flush_ns} > /sys/class/net/{dev}/gro_flush_timeout"], ns=ns)
        before = {t.pid for t in napi_threads(dev)}
        run(["sh", "-c", f"echo 1 > /sys/class/net/{dev}/threaded"], ns=ns)
        threads: list[NapiThread] = []
        for _ in range(50):
            threads = [t for t in napi_threads(dev) if t.pid not in before]
            if threads:
                break
            time.sleep(0.02)
        if not threads:
            raise TestbedError(f"no threaded NAPI kthread appeared for {ns}/{dev}")
        cpu, prio = self.tb.sut.cpu, self.tb.sut.napi_fifo_priority
        for thread in threads:
            if cpu is not None:
                run(["taskset", "-pc", str(cpu), str(thread.pid)])
            if prio:
                run(["chrt", "-f", "-p", str(prio), str(thread.pid)])
        log.info("SUT %s/%s NAPI threads %s on CPU %s FIFO %s", ns, dev,
                 [t.pid for t in threads], cpu, prio)
        return threads


def build_settings(tb: TestbedConfig) -> dict[str, Any]:
    """What the virtual testbed is made with, by the key a testbed file sets it with."""
    ports = {"tester.tx": tb.tester.tx, "tester.rx": tb.tester.rx,
             "sut.in": tb.sut.in_port, "sut.out": tb.sut.out_port}
    out: dict[str, Any] = {}
    for key, port in ports.items():
        out[f"{key}.name"], out[f"{key}.mac"] = port.name, port.mac
    for name in ("cpu", "napi_fifo_priority", "napi_defer_hard_irqs", "gro_flush_timeout_us"):
        out[f"sut.{name}"] = getattr(tb.sut, name)
    for name in BUILT_ADDRESSING:
        out[f"addressing.{name}"] = getattr(tb.addressing, name)
    return json.loads(json.dumps(out))  # as a record reads back (tuples become lists)


def napi_threads(dev: str) -> list[NapiThread]:
    """Kernel threads named ``napi/<dev>-<id>`` (all namespaces)."""
    found = []
    for comm_file in Path("/proc").glob("[0-9]*/comm"):
        try:
            name = comm_file.read_text().strip()
        except OSError:
            continue
        if name.startswith(f"napi/{dev}-"):
            found.append(NapiThread(int(comm_file.parent.name), name))
    return found


def ensure_root() -> None:
    import os

    if os.geteuid() != 0:
        raise TestbedError("the virtual testbed needs root (network namespaces, veth, XDP)")


__all__ = ["VirtualTestbed", "TestbedError", "build_settings", "napi_threads", "CommandFailed",
           "ensure_root"]
