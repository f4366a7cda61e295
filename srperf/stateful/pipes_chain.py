"""A line of namespaces for SRv6Pipes: client, N middle nodes, server.

    <prefix>-c  r0 ---- l0  <prefix>-m1  r0 ---- l0  <prefix>-m2 ... r0 ---- l0  <prefix>-s
    client                   router | proxy(FUNC)                                server

Link ``i`` (0: client-m1, ..., N: mN-server) is ``fd00:0:0:i::/64`` (left ``::1``,
right ``::2``).  Middle node ``k`` has the SID ``fc00:0:0:k::100``; the server's edge
has ``fc00:0:0:ff::100`` (End.DT6 into its local table: decapsulation and delivery).  The client
steers its TCP to the server with H.Encaps over ``[SID m1, ..., SID mN, server SID]``
(as SRv6Pipes' client put an SRH on wrk's sockets) up to the first proxy node; a router
node runs End, a proxy node is the last segment of its list (stock End.DX6 decapsulates
only at Segments Left 0), terminates the connection (:mod:`srperf.forwarders.pipes`) and
re-encapsulates toward the following nodes up to the next proxy or the server.  Replies go back by plain IPv6 routing through the same
nodes (SRv6Pipes' on-path mode), where the proxies divert them to their relay.

With ``options.node_cpu`` (and ``endpoint_cpu``) the middle nodes get a CPU of their own,
as SRv6Pipes' M1 was a machine of its own: their relays are pinned to it and the receive
processing of their links' ends is steered to it (RPS), while wrk, the HTTP server and
their links' ends go to the endpoint CPU.  Without them the scheduler places everything.

Every link is a veth pair with the given MTU, offloads as the kernel sets them.  veth
has no line rate (a transfer goes as fast as the CPUs copy it); :meth:`PipesChain.set_rate`
gives every link one, per direction, with a tbf qdisc on each end's egress (SRv6Pipes'
lab: 10 Gb/s links, 1 Gb/s for the chained proxies).
:meth:`PipesChain.down` removes everything (namespaces, hence processes' sockets; the
relays are stopped by their script's ``clean`` first).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from srperf.traffic import tcp_congestion
from srperf.forwarders import pipes
from srperf.util.netns import netns_exists, run
from srperf.stateful.base import Endpoint, Endpoints
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

ROUTER = "router"
"""Role of a middle node that forwards (End) instead of running a function."""
SERVER_SID = "fc00:0:0:ff::100"
MAX_MIDDLE = 8
RATE_BURST_S = 0.004
"""tbf bucket of a rate cap, in seconds of the rate (one tick of a 250 Hz kernel)."""
RATE_MIN_BURST = 256 * 1024
"""Smallest tbf bucket (bytes): above two 64 KiB GSO packets, so tbf never splits them."""
LINK_UP_TIMEOUT_S = 3.0
"""Longest wait for a fresh chain's links to be operationally up (link watch: ~1 s)."""
RATE_LATENCY_MS = 20
"""Longest a packet waits in a rate cap's queue (tbf latency, ms)."""


class RateUnsupported(RuntimeError):
    """A link's rate cap could not be set (tc's words)."""


def tbf_args(rate_mbit: float) -> list[str]:
    """``tc qdisc add ... root`` arguments of a rate cap of ``rate_mbit`` Mb/s."""
    burst = max(int(rate_mbit * 1e6 / 8 * RATE_BURST_S), RATE_MIN_BURST)
    return ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(burst),
            "latency", f"{RATE_LATENCY_MS}ms"]


def link_addr(link: int, side: int) -> str:
    """Address of ``side`` (1 left, 2 right) of link ``link``."""
    return f"fd00:0:0:{link:x}::{side}"


def node_sid(k: int) -> str:
    """SID of middle node ``k`` (1-based)."""
    return f"fc00:0:0:{k:x}::100"


@dataclass
class PipesChain:
    """Client, middle nodes with ``roles`` (``router`` or a bytestream function), server."""

    prefix: str
    """Prefix of the namespace names."""
    roles: Sequence[str]
    """One entry per middle node: ``router`` or a function (relay, xor:N, xormask)."""
    mtu: int = 1500
    """MTU of every link (bytes)."""
    options: pipes.PipesOptions = field(default_factory=pipes.PipesOptions)
    """How the relays run."""
    relay: Path | None = None
    """pipes_relay binary to run (None: the one ``srperf build`` makes); a benchmark
    sets it to compare two builds."""
    rate_mbit: float = 0.0
    """Current line rate of every link per direction (Mb/s); 0: none."""
    _envs: dict[int, dict[str, str]] = field(default_factory=dict, init=False)
    _nodes: dict[str, NetnsTransport] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.roles) <= MAX_MIDDLE:
            raise ValueError(f"a chain has 1-{MAX_MIDDLE} middle nodes, not {len(self.roles)}")
        for role in self.roles:
            if role != ROUTER:
                pipes.check_function(role)
        for name in ("node_cpu", "endpoint_cpu"):
            cpu = getattr(self.options, name)
            last = (os.cpu_count() or 1) - 1
            if cpu is not None and cpu > last:
                raise ValueError(f"{name} {cpu}: this host has CPUs 0-{last}")

    # -- names -----------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Namespace names, client first, server last."""
        n = len(self.roles)
        return [f"{self.prefix}-c", *(f"{self.prefix}-m{k}" for k in range(1, n + 1)),
                f"{self.prefix}-s"]

    @property
    def client_ip6(self) -> str:
        return link_addr(0, 1)

    @property
    def server_ip6(self) -> str:
        return link_addr(len(self.roles), 2)

    def node(self, index: int) -> NetnsTransport:
        """Transport into node ``index`` (0 client, 1..N middles, N+1 server)."""
        name = self.names[index]
        if name not in self._nodes:
            self._nodes[name] = NetnsTransport(name)
        return self._nodes[name]

    def link_devs(self, link: int) -> tuple[tuple[str, str], tuple[str, str]]:
        """((left ns, its dev), (right ns, its dev)) of link ``link``."""
        return (self.names[link], "r0"), (self.names[link + 1], "l0")

    # -- life cycle ------------------------------------------------------------------
    def up(self) -> Endpoints:
        """Build the chain and configure every middle node; the endpoints across it."""
        try:
            self._build()
            relay = self._relay_path()
            for k, role in enumerate(self.roles, start=1):
                self._configure(k, role, relay)
        except BaseException:
            self.down()
            raise
        return self.endpoints()

    def endpoints(self) -> Endpoints:
        n, cpu = len(self.roles), self.options.endpoint_cpu
        return Endpoints(client=Endpoint("client", self.node(0), self.client_ip6, cpu=cpu),
                         server=Endpoint("server", self.node(n + 1), self.server_ip6,
                                         cpu=cpu),
                         sut=self.node(1), sut_cpu=self.options.node_cpu)

    def reconfigure(self, roles: Sequence[str]) -> None:
        """Give the middle nodes new roles (same count), keeping the chain."""
        if len(roles) != len(self.roles):
            raise ValueError("reconfigure keeps the number of middle nodes")
        relay = self._relay_path()
        for role in roles:
            if role != ROUTER:
                pipes.check_function(role)
        self.roles = list(roles)
        for k, role in enumerate(self.roles, start=1):
            self._configure(k, role, relay)
        self._steer_client()

    def _relay_path(self) -> Path:
        return self.relay if self.relay is not None else pipes.build_relay()

    def _devices(self) -> list[tuple[str, str]]:
        """(namespace, device) of both ends of every link."""
        return [end for link in range(len(self.roles) + 1) for end in self.link_devs(link)]

    def set_rate(self, rate_mbit: float) -> None:
        """Give every link ``rate_mbit`` Mb/s per direction (0: remove the caps).

        A tbf qdisc at the root of each veth end's egress; RateUnsupported (tc's words)
        when tc refuses, e.g. a netem impairment holds the root of that device.  On
        failure no cap is left.
        """
        if rate_mbit == self.rate_mbit:
            return
        if self.rate_mbit:
            for ns, dev in self._devices():
                run(["tc", "qdisc", "del", "dev", dev, "root"], ns=ns, check=False)
            self.rate_mbit = 0.0
        if not rate_mbit:
            return
        done: list[tuple[str, str]] = []
        for ns, dev in self._devices():
            res = run(["tc", "qdisc", "add", "dev", dev, "root", *tbf_args(rate_mbit)],
                      ns=ns, check=False)
            if res.returncode != 0:
                for dns, ddev in done:
                    run(["tc", "qdisc", "del", "dev", ddev, "root"], ns=dns, check=False)
                raise RateUnsupported(f"{rate_mbit:g} Mb/s on {ns}/{dev}: tc qdisc add "
                                      f"tbf: {(res.stderr or res.stdout).strip()}")
            done.append((ns, dev))
        self.rate_mbit = rate_mbit

    def set_congestion(self, algorithm: str) -> None:
        """Make ``algorithm`` the default TCP congestion control of every namespace of
        the chain (client, middle nodes, server); CongestionUnsupported (sysctl's words)
        when a namespace refuses it."""
        for name in self.names:
            tcp_congestion.set_default(name, algorithm)

    def congestion(self) -> str:
        """The client namespace's default TCP congestion control."""
        return tcp_congestion.get(self.names[0])

    def counters(self) -> dict[str, dict[str, int]]:
        """Relay counters per proxy node (namespace -> counters)."""
        return {self.names[k]: pipes.counters(self.node(k), env)
                for k, env in self._envs.items() if env.get("SRPERF_PIPES_FUNC")}

    def down(self) -> None:
        """Stop the relays and delete the namespaces (idempotent, best effort)."""
        for k, env in list(self._envs.items()):
            try:
                pipes.clean(self.node(k), env)
            except Exception as exc:  # the namespace goes anyway
                log.warning("cleaning %s: %s", self.names[k], exc)
        self._envs.clear()
        for node in self._nodes.values():
            node.close()
        self._nodes.clear()
        for name in self.names:
            if netns_exists(name):
                run(["ip", "netns", "del", name], check=False)

    def __enter__(self) -> "PipesChain":
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- building --------------------------------------------------------------------
    def _build(self) -> None:
        n = len(self.roles)
        for name in self.names:
            if netns_exists(name):
                raise RuntimeError(f"namespace {name} exists already (a chain left behind? "
                                   f"ip netns del {name})")
        for name in self.names:
            run(["ip", "netns", "add", name])
            run(["ip", "-n", name, "link", "set", "lo", "up"])
            for key in ("net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.seg6_enabled=1",
                        "net.ipv6.conf.default.seg6_enabled=1",
                        "net.ipv6.conf.all.keep_addr_on_down=1",
                        # no DAD on the links made next (see wait_links_up)
                        "net.ipv6.conf.all.accept_dad=0",
                        "net.ipv6.conf.default.accept_dad=0"):
                run(["ip", "netns", "exec", name, "sysctl", "-qw", key])
        for link in range(n + 1):
            (lns, ldev), (rns, rdev) = self.link_devs(link)
            run(["ip", "-n", lns, "link", "add", ldev, "mtu", str(self.mtu), "type", "veth",
                 "peer", "name", rdev, "mtu", str(self.mtu), "netns", rns])
            for ns, dev, side in ((lns, ldev, 1), (rns, rdev, 2)):
                run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                     f"net.ipv6.conf.{dev}.seg6_enabled=1"])
                run(["ip", "-n", ns, "addr", "add", f"{link_addr(link, side)}/64", "dev", dev,
                     "nodad"])
                run(["ip", "-n", ns, "link", "set", dev, "up"])
        # routes: left of node i is link i-1, right is link i
        for i, name in enumerate(self.names):
            if i > 0:   # toward the client: every link left of this node
                for link in range(0, i - 1):
                    run(["ip", "-n", name, "-6", "route", "add", f"{link_addr(link, 0)}/64",
                         "via", link_addr(i - 1, 1), "dev", "l0"])
            if i < n + 1:   # toward the server: later links, SIDs right of this node
                for link in range(i + 1, n + 1):
                    run(["ip", "-n", name, "-6", "route", "add", f"{link_addr(link, 0)}/64",
                         "via", link_addr(i, 2), "dev", "r0"])
                for k in range(i + 1, n + 1):
                    run(["ip", "-n", name, "-6", "route", "add", f"{node_sid(k)}/128",
                         "via", link_addr(i, 2), "dev", "r0"])
                run(["ip", "-n", name, "-6", "route", "add", f"{SERVER_SID}/128",
                     "via", link_addr(i, 2), "dev", "r0"])
            if 0 < i <= n:
                run(["ip", "-n", name, "sr", "tunsrc", "set", link_addr(i, 1)])
        self.wait_links_up()
        if self.options.node_cpu is not None:
            self._steer_receive()
        client, server = self.names[0], self.names[-1]
        run(["ip", "-n", client, "sr", "tunsrc", "set", self.client_ip6])
        self._steer_client()
        run(["ip", "-n", server, "-6", "route", "add", f"{SERVER_SID}/128", "encap",
             "seg6local", "action", "End.DT6", "table", "255", "dev", "l0"])

    def links_down(self) -> list[str]:
        """``ns/dev`` of every link end not yet operationally up."""
        down = []
        for link in range(len(self.roles) + 1):
            for ns, dev in self.link_devs(link):
                state = run(["cat", f"/sys/class/net/{dev}/operstate"], ns=ns,
                            check=False).stdout.strip()
                if state != "up":
                    down.append(f"{ns}/{dev}")
        return down

    def addresses_tentative(self) -> list[str]:
        """``ns/dev`` of every device of the chain with an IPv6 address still tentative
        (duplicate address detection not finished)."""
        found = []
        for name in self.names:
            out = run(["ip", "-o", "-6", "addr", "show", "tentative"], ns=name,
                      check=False).stdout
            found += [f"{name}/{line.split()[1]}" for line in out.splitlines()
                      if line.strip()]
        return found

    def wait_links_up(self, timeout_s: float = LINK_UP_TIMEOUT_S) -> None:
        """Wait until every link end is operationally up and no address is tentative.

        A veth set up is not yet forwarding: until the kernel's link watch activates its
        qdisc (up to about 1 s later, its events are batched per second) every frame sent
        on it is dropped, so the first SYN through a fresh chain was lost and retransmitted
        1 s later (measured: the first fetch through relay, router connected after 1.01 s,
        now 0.0002 s).

        The second wait of about 1 s was neighbour discovery: a middle node forwards
        packets whose source is not an address of the outgoing link (the client's, the
        server's, its own tunsrc on the other link), so it solicits the next hop from its
        link-local address, and while that address is tentative (DAD: a random delay up
        to 1 s, then one probe and 1 s) the kernel sends no solicitation at all
        (ndisc_send_ns); the entry stays incomplete until its next try 1 s later, holding
        the SYN.  Measured (``ip -ts monitor neigh address`` in the middle nodes, two
        routers): the connect began at .333 s, the SYN reached m1 at .392, m1's r0
        link-local left DAD at .437, its next hop became REACHABLE at 1.399 s and the
        connect took 1.009 s (m1 sent 3 solicitations, not 1); without DAD the next hops
        were REACHABLE within 40 ms and the connect took 0.006 s.  The chain's namespaces
        make their links without DAD (``accept_dad=0``); this check also waits until no
        address is tentative, should one be added with DAD.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            down = self.links_down() or self.addresses_tentative()
            if not down:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"links not up (or addresses tentative) within "
                                   f"{timeout_s:g} s: {', '.join(down)}")
            time.sleep(0.02)

    def _steer_receive(self) -> None:
        """RPS: each link end's receive processing on its node's CPU (the middle nodes'
        or the endpoints')."""
        last = len(self.roles) + 1
        for link in range(last):
            for (ns, dev) in self.link_devs(link):
                index = self.names.index(ns)
                cpu = self.options.endpoint_cpu if index in (0, last) else self.options.node_cpu
                mask = format(1 << int(cpu or 0), "x")
                run(["sh", "-c", f"for q in /sys/class/net/{dev}/queues/rx-*/rps_cpus; do "
                     f"echo {mask} > \"$q\"; done"], ns=ns)

    def _steer_client(self) -> None:
        """The client's H.Encaps route to the server (replaced when roles change)."""
        run(["ip", "-n", self.names[0], "-6", "route", "replace", f"{self.server_ip6}/128",
             "encap", "seg6", "mode", "encap", "segs", ",".join(self.segments_after(0)),
             "via", link_addr(0, 2), "dev", "r0"])

    def segments_after(self, k: int) -> list[str]:
        """The segment list node ``k`` (0: the client) encapsulates with: the SIDs of the
        following nodes up to the next proxy (which decapsulates: End.DX6 needs Segments
        Left 0), else up to the server's SID."""
        segs = []
        for j in range(k + 1, len(self.roles) + 1):
            segs.append(node_sid(j))
            if self.roles[j - 1] != ROUTER:
                return segs
        return segs + [SERVER_SID]

    def _configure(self, k: int, role: str, relay_path: object) -> None:
        node = pipes.PipesNode(
            sid=node_sid(k), out_if="r0", out_nh=link_addr(k, 2),
            next_segs=tuple(self.segments_after(k)),
            dst_prefix=f"{self.server_ip6}/128",
            function=None if role == ROUTER else role)
        if k in self._envs:   # stop the running relay before its binary is pushed again
            pipes.clean(self.node(k), self._envs.pop(k))
        self._envs[k] = pipes.configure(self.node(k), node, self.options,
                                        relay_path)  # type: ignore[arg-type]
        if self.options.node_cpu is not None:
            pipes.pin_relay(self.node(k), self._envs[k], self.options.node_cpu)


__all__ = ["PipesChain", "ROUTER", "SERVER_SID", "node_sid", "link_addr", "tbf_args",
           "RateUnsupported"]
