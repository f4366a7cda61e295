"""Client and server on either side of the SUT, where the tester's two ports are.

On the virtual testbed the tester's ports hang off the SUT's in and out ports
(``t0 -- s0``, ``s1 -- t1``).  For a stateful run the two tester veths move into
two namespaces of their own, ``<prefix>-client`` (``t0``) and ``<prefix>-server``
(``t1``), which get an IP stack: the client owns ``tester_tx_ip6`` on ``t0`` and
``src6`` on its loopback, the server ``tester_rx_ip6`` on ``t1`` and ``dst6`` (and
``dst6 + 1``, for a second chain) on its loopback.  So every route the CFG scripts
install towards the tester's rx port (the SUT's ``sid_prefix`` and ``dst_prefix6``
routes, its static neighbours) now leads to the server, and every packet the client
sends enters the SUT on its in port, where the proxies' programs are attached::

    <prefix>-client          <prefix>-sut             <prefix>-server
      t0 (fd00:1::1) ------- s0 ....... s1 ------- t1 (fd00:2::1)
      lo src6                  (behavior, VNFs)       lo dst6, End.DT6 sid_next

:meth:`VirtualEndpoints.down` (always called) moves the ports back, re-attaches the
tester's XDP sink and removes the two namespaces; a run killed meanwhile leaves a
testbed whose ``is_up`` is false, which the next ``up`` rebuilds.
"""

from __future__ import annotations

import logging
from typing import Any

from srperf.config.model import TestbedConfig
from srperf.util.netns import run
from srperf.stateful.base import Endpoint, Endpoints, StatefulError, second_address
from srperf.testbeds.base import Testbed
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

TOOLS = ("iperf3",)
"""Programs the goodput kind needs on both endpoints."""


class VirtualEndpoints:
    """The client and server namespaces of a virtual testbed (a context manager)."""

    def __init__(self, testbed: Testbed) -> None:
        tb: TestbedConfig = testbed.config
        if tb.tester.driver != "linux":
            raise StatefulError(f"{tb.source}: stateful experiments move the tester's veths "
                                f"into client and server namespaces; tester.driver "
                                f"{tb.tester.driver!r} holds them (use driver linux)")
        self.testbed, self.tb = testbed, tb
        self.client_ns, self.server_ns = f"{tb.prefix}-client", f"{tb.prefix}-server"
        self._moved: list[tuple[str, str]] = []
        self.endpoints: Endpoints | None = None

    def up(self) -> Endpoints:
        tb, a = self.tb, self.tb.addressing
        tx, rx = tb.tester.tx.name, tb.tester.rx.name
        try:
            for ns in (self.client_ns, self.server_ns):
                run(["ip", "netns", "del", ns], check=False)
                run(["ip", "netns", "add", ns])
                run(["ip", "link", "set", "dev", "lo", "up"], ns=ns)
                _sysctls(ns, {"net.ipv6.conf.all.forwarding": 1,
                              "net.ipv6.conf.all.seg6_enabled": 1,
                              "net.ipv6.conf.default.seg6_enabled": 1,
                              "net.ipv6.conf.default.accept_dad": 0,
                              "net.ipv6.conf.default.accept_ra": 0,
                              "net.ipv6.conf.default.router_solicitations": 0})
            from srperf.drivers.linux_sink import detach_sink

            detach_sink(tb.tester_ns, rx)
            for dev, ns in ((tx, self.client_ns), (rx, self.server_ns)):
                run(["ip", "-n", tb.tester_ns, "link", "set", "dev", dev, "netns", ns])
                self._moved.append((dev, ns))
            sut_mac = {tx: tb.sut.in_port.mac, rx: tb.sut.out_port.mac}
            for ns, dev, mine, lo_addrs, gw in (
                    (self.client_ns, tx, a.tester_tx_ip6, [a.src6], a.sut_in_ip6),
                    (self.server_ns, rx, a.tester_rx_ip6, [a.dst6, second_address(a.dst6)],
                     a.sut_out_ip6)):
                _sysctls(ns, {f"net.ipv6.conf.{dev}.disable_ipv6": 0,
                              f"net.ipv6.conf.{dev}.seg6_enabled": 1,
                              f"net.ipv6.conf.{dev}.accept_dad": 0})
                run(["ip", "link", "set", "dev", dev, "up"], ns=ns)
                run(["ip", "-6", "addr", "add", f"{mine}/{a.link_prefix_len6}", "dev", dev,
                     "nodad"], ns=ns)
                for addr in lo_addrs:
                    run(["ip", "-6", "addr", "add", f"{addr}/128", "dev", "lo"], ns=ns)
                run(["ip", "neigh", "replace", gw, "lladdr", sut_mac[dev], "dev", dev,
                     "nud", "permanent"], ns=ns)
                run(["ip", "-6", "route", "add", "default", "via", gw, "dev", dev], ns=ns)
                run(["ip", "sr", "tunsrc", "set", mine], ns=ns)
        except BaseException:
            self.down()
            raise
        self.endpoints = Endpoints(
            client=Endpoint("client", NetnsTransport(self.client_ns), a.src6, tx),
            server=Endpoint("server", NetnsTransport(self.server_ns), a.dst6, rx),
            sut=self.testbed.node("sut"), sut_cpu=tb.sut.cpu)
        log.info("stateful endpoints %s and %s up", self.client_ns, self.server_ns)
        return self.endpoints

    def down(self) -> None:
        """Move the tester's ports back, re-attach its sink, remove the namespaces."""
        tb = self.tb
        if self.endpoints is not None:
            for end in (self.endpoints.client, self.endpoints.server):
                end.node.close()
        for dev, ns in reversed(self._moved):
            res = run(["ip", "-n", ns, "link", "set", "dev", dev, "netns", tb.tester_ns],
                      check=False)
            if not res.ok:
                log.error("could not move %s back from %s: %s", dev, ns, res.stderr.strip())
                continue
            run(["ip", "-n", tb.tester_ns, "link", "set", "dev", dev, "up"], check=False)
        rx_back = (tb.tester.rx.name, self.server_ns) in self._moved
        self._moved.clear()
        for ns in (self.client_ns, self.server_ns):
            run(["ip", "netns", "del", ns], check=False)
        if rx_back:
            from srperf.drivers.linux_sink import attach_sink

            try:
                attach_sink(tb.tester_ns, tb.tester.rx.name)
            except Exception as exc:  # cleanup goes on; the testbed is then rebuilt
                log.error("could not re-attach the sink on %s: %s", tb.tester.rx.name, exc)
        self.endpoints = None

    def __enter__(self) -> Endpoints:
        return self.up()

    def __exit__(self, *exc: Any) -> None:
        self.down()


def _sysctls(ns: str, values: dict[str, int]) -> None:
    run(["sysctl", "-q", "-w"] + [f"{k}={v}" for k, v in values.items()], ns=ns)


def make_endpoints(testbed: Testbed) -> Any:
    """The endpoints of ``testbed`` (a context manager yielding :class:`Endpoints`):
    namespaces of this host, or the hosts its file names (``endpoints``)."""
    if testbed.config.endpoints is not None:
        from srperf.stateful.ssh_endpoints import SshEndpoints

        return SshEndpoints(testbed)
    if not testbed.makes_endpoints:   # srperf.measure.preflight.check_stateful refuses it earlier
        raise StatefulError(f"{testbed.config.source}: endpoints: no client and server "
                            f"hosts named, and a {testbed.kind} testbed makes none")
    return VirtualEndpoints(testbed)


__all__ = ["VirtualEndpoints", "make_endpoints", "TOOLS"]
