"""SRv6 steering of the measured TCP connections through the behavior, both ways.

The client is an H.Encaps edge: a ``seg6 encap`` route sends its packets to the server's
address inside an outer IPv6 header whose segment list starts with the behavior's SID
on the SUT (``sid_sut`` for End, the VNF's SID for the proxies) and ends at the server,
which decapsulates (End.DT6).  A list longer than those two SIDs is made in one of two
ways (``segment_mode``): ``carried`` (default), the extra SIDs ride in the SRH as
segments already visited (:mod:`srperf.stateful.carry`: the caching-proxy paper's label
stack, carried through the proxy, used by nobody); ``visited``, they are End SIDs of the
server between the two, each processed on the way.  The server is the reverse edge: its
answers go encapsulated to the client's End.DT6 SID, through End on the SUT for
``end``, through the caching proxy and its VNF for ``end_cache`` (its header is cached
per packet, so the two directions are two chains through one VNF), and by plain
routing for End.AD and End.AS (one stored header per VNF serves one direction: so they
cannot carry the connections of a source-NATing VNF, whose answers must pass it too;
:func:`refusal` says so before anything is configured).

With ``chains`` 2, the server's second address (``dst6 + 1``) is reached through a
second segment list ending at another server SID; each last SID decapsulates into a
table of its own holding only its own address, so a proxy that gave a packet the
other chain's header would lose it (End.AD's one header per VNF; End.AS's static one).

Plain ``ipv6`` (the calibration's bypass) steers nothing: routes only.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass

from srperf.config.model import TestbedConfig, vnf_sid
from srperf.errors import UnsupportedBehavior
from srperf.stateful import carry, undo_journal
from srperf.stateful.base import Endpoints, StatefulError, second_address
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

CLIENT_SID = "fc00:c::1"
"""The client's End.DT6 SID (reverse direction); the SUT routes it to the client."""
CHAIN_TABLE = 1000
"""Server table of chain k's End.DT6 is CHAIN_TABLE + k (only that chain's address)."""
CLIENT_TABLE = 1100
"""Client table of its End.DT6 (only the client's address)."""
FILTER_PREF = 4242
"""tc filter preference of ebpf.sh's programs (its FILTER_PREF)."""
PROXY_PREF = 4243
"""tc filter preference of the caching proxy attached to the SUT's out port."""
PROXIES = ("end_ad", "end_as", "end_cache", "end_baseline")
VISITED_SIDS = 2
"""SIDs of a steered forward list that process a packet: the behavior's and the server's
End.DT6 (every Route's ``forward`` has one SID)."""


@dataclass(frozen=True)
class Route:
    """How one behavior is steered: SIDs of the SUT in front of each direction's list."""

    forward: tuple[str, ...] | None
    """SIDs before the server's (None: no encapsulation, plain IPv6)."""
    reverse: tuple[str, ...] | None
    """SIDs before the client's on the way back (None: plain IPv6)."""
    proxy_both_ways: bool = False
    """Attach the caching proxy to the SUT's out port too (the reverse chain)."""
    fixed_segments: int | None = None
    """The only segment-list length the behavior can carry (End.AS: its static header)."""
    one_chain: str = ""
    """Why a second chain cannot pass (empty: it can)."""
    no_snat: str = ""
    """Why the connections of a source-NATing VNF cannot pass (empty: they can)."""


_NO_SNAT = ("the answers to the VNF's NAT address must pass the VNF to be de-NATed, and "
            "they come back out of its one interface, where {name} gives every packet "
            "{header} forward header (towards the server): a static proxy carries a NAT's "
            "two directions only with one VNF interface per direction, which the VNFs of "
            "this topology do not have")


def refusal(behavior: str, tb: TestbedConfig, segments: int = 2, chains: int = 1,
            vnf_mode: str | None = None) -> str:
    """Why ``behavior`` cannot carry TCP with these settings (empty: it can); known
    before anything is configured.  UnsupportedBehavior for one srperf cannot steer."""
    route = route_for(behavior, tb)
    if route.fixed_segments and segments != route.fixed_segments:
        return f"{segments} segments: its static header has {route.fixed_segments}"
    if chains > 1 and route.one_chain:
        return f"{chains} chains through one VNF: {route.one_chain}"
    if vnf_mode == "snat" and route.no_snat:
        return f"vnf snat: {route.no_snat}"
    return ""


def route_for(behavior: str, tb: TestbedConfig) -> Route:
    """The steering of ``behavior`` (UnsupportedBehavior for one srperf cannot steer)."""
    a = tb.addressing
    if behavior == "ipv6":
        return Route(None, None)
    if behavior == "end":
        return Route((a.sid_sut,), (a.sid_sut,))
    vnf = vnf_sid(a, a.vnf_target)
    if behavior == "end_cache":
        return Route((vnf,), (vnf,), proxy_both_ways=True)
    if behavior == "end_ad":
        return Route((vnf,), (), one_chain="End.AD stores one header per VNF: packets of "
                     "two chains through one VNF leave with the last learned one",
                     no_snat=_NO_SNAT.format(name="End.AD", header="its last learned"))
    if behavior == "end_as":
        return Route((vnf,), (), fixed_segments=2,
                     one_chain="End.AS restores one static header per VNF",
                     no_snat=_NO_SNAT.format(name="End.AS", header="its static"))
    if behavior == "end_baseline":
        return Route((vnf,), ())
    raise UnsupportedBehavior(behavior, "no TCP steering for it in srperf.stateful "
                              "(steered: ipv6, end, end_ad, end_as, end_cache, end_baseline)")


def chain_sids(tb: TestbedConfig, chain: int, count: int) -> list[str]:
    """The server's ``count`` SIDs of ``chain``: End SIDs, then its End.DT6 SID last."""
    last = int(ipaddress.IPv6Address(tb.addressing.sid_next)) + 0x10000 * chain
    pads = [str(ipaddress.IPv6Address(last + i)) for i in range(1, count)]
    return pads + [str(ipaddress.IPv6Address(last))]


def segment_lists(route: Route, tb: TestbedConfig, segments: int, chains: int,
                  mode: str = carry.VISITED) -> list[list[str]]:
    """The forward segment list of each chain, in path order (empty lists for plain
    IPv6): ``visited``, the behavior's SIDs then the server's (End SIDs, its End.DT6
    last); ``carried``, the extra SIDs first (marked visited by srh_carry), then the
    behavior's and the server's End.DT6."""
    if route.forward is None:
        return [[] for _ in range(chains)]
    server_count = segments - len(route.forward)
    if server_count < 1:
        raise StatefulError(f"{segments} segments: the list needs the behavior's "
                            f"{len(route.forward)} and at least one of the server")
    lists = []
    for k in range(chains):
        server = chain_sids(tb, k, server_count)
        if mode == carry.CARRIED:
            lists.append(server[:-1] + list(route.forward) + server[-1:])
        else:
            lists.append(list(route.forward) + server)
    return lists


class Steering:
    """Install and remove the routes that steer the endpoints' TCP through a behavior."""

    def __init__(self, endpoints: Endpoints, tb: TestbedConfig, behavior: str,
                 segments: int = 2, chains: int = 1, mode: str = carry.CARRIED,
                 vnf_mode: str | None = None) -> None:
        self.ep, self.tb, self.behavior = endpoints, tb, behavior
        self.route = route_for(behavior, tb)
        why = refusal(behavior, tb, segments, chains, vnf_mode)
        if why:
            raise UnsupportedBehavior(behavior, why)
        if mode not in carry.MODES:
            raise ValueError(f"segment mode {mode!r}: must be one of {carry.MODES}")
        self.segments, self.chains = segments, chains
        self.visit = 1 + len(self.route.forward or ())
        """SIDs of the forward list that process a packet (the behavior's, the server's
        End.DT6); the others are carried, or visited as End SIDs of the server."""
        self.carried = segments - self.visit if self.route.forward is not None and \
            mode == carry.CARRIED else 0
        self.lists = segment_lists(self.route, tb, segments, chains,
                                   carry.CARRIED if self.carried > 0 else carry.VISITED)
        self.addresses = [endpoints.server.ip6, second_address(endpoints.server.ip6)][:chains]
        self._undo: list[tuple[Transport, list[str]]] = []
        self._journal = tb.kind == "ssh"
        """Write each undo on its node first (undo_journal: a run killed then leaves
        what unprepare or the next run undoes); a virtual testbed is rebuilt instead."""

    def _role(self, node: Transport) -> str:
        ep = self.ep
        return "client" if node is ep.client.node else \
            "server" if node is ep.server.node else "sut"

    def _remember(self, node: Transport, undo: list[str]) -> None:
        """Keep ``undo`` to run in :meth:`remove` (noted on the node by :meth:`_note`)."""
        self._undo.append((node, undo))

    def _note(self, node: Transport, undo: list[str]) -> None:
        """Write ``undo`` in the node's journal, before the change it undoes."""
        if self._journal:
            undo_journal.note(node, self.tb, self._role(node), undo)

    def describe(self) -> str:
        if self.route.forward is None:
            return "plain IPv6 both ways"
        back = "plain IPv6" if not self.route.reverse else \
            f"[{', '.join([*self.route.reverse, CLIENT_SID])}]"
        carried = f" (the first {self.carried} carried, not visited)" if self.carried else ""
        return "; ".join(f"to {addr}: [{', '.join(segs)}]"
                         for addr, segs in zip(self.addresses, self.lists)) + \
            f"{carried}; back: {back}"

    def _do(self, node: Transport, argv: list[str], undo: list[str] | None = None) -> None:
        """Run ``argv`` on ``node``; remember ``undo`` (default, for ``ip -6 route replace
        [local] PREFIX ... [table T]``: the matching ``ip -6 route del``)."""
        if undo is None and argv[:4] == ["ip", "-6", "route", "replace"]:
            rest = argv[4:]
            undo = ["ip", "-6", "route", "del", *rest[:2 if rest[0] == "local" else 1]]
            if "table" in rest:
                undo += ["table", rest[rest.index("table") + 1]]
            if "seg6local" in rest:   # its table argument is End.DT6's, not the route's
                undo = undo[:5 + (rest[0] == "local")]
        if undo is not None:
            self._note(node, undo)
        node.check(argv, timeout=30.0)
        if undo is not None:
            self._remember(node, undo)

    def install(self) -> None:
        try:
            self._install()
        except BaseException:
            self.remove()
            raise
        log.info("%s steered: %s", self.behavior, self.describe())

    def _install(self) -> None:
        a, ep, tb = self.tb.addressing, self.ep, self.tb
        client, server, sut = ep.client.node, ep.server.node, ep.sut
        sin = tb.sut.in_port.name
        # the SUT reaches the client's address and SID through its in port
        for prefix in (f"{ep.client.ip6}/128", f"{CLIENT_SID}/128"):
            self._do(sut, ["ip", "-6", "route", "replace", prefix, "via", a.tester_tx_ip6,
                           "dev", sin])
        if self.route.reverse is not None:
            # End.DT6 looks the inner address up in one table: the client's own there
            table = str(CLIENT_TABLE)
            self._do(client, ["ip", "-6", "route", "replace", "local", f"{ep.client.ip6}/128",
                              "dev", "lo", "table", table])
            self._do(client, ["ip", "-6", "route", "replace", f"{CLIENT_SID}/128", "encap",
                              "seg6local", "action", "End.DT6", "table", table, "dev",
                              ep.client.dev])
        for k, (addr, segs) in enumerate(zip(self.addresses, self.lists)):
            if not segs:
                continue
            table = str(CHAIN_TABLE + k)
            self._do(server, ["ip", "-6", "route", "replace", "local", f"{addr}/128",
                              "dev", "lo", "table", table])
            server_sids = segs[self.carried + len(self.route.forward or ()):]
            for sid in server_sids[:-1]:
                self._do(server, ["ip", "-6", "route", "replace", f"{sid}/128", "encap",
                                  "seg6local", "action", "End", "dev", ep.server.dev])
            self._do(server, ["ip", "-6", "route", "replace", f"{server_sids[-1]}/128",
                              "encap", "seg6local", "action", "End.DT6", "table", table,
                              "dev", ep.server.dev])
            # src: a client that binds no address (wrk) connects from the client's
            # address too, so the answers are steered back (not sent to the link's)
            self._do(client, ["ip", "-6", "route", "replace", f"{addr}/128", "encap", "seg6",
                              "mode", "encap", "segs", ",".join(segs), "dev", ep.client.dev,
                              "src", ep.client.ip6])
        if self.route.reverse is not None:
            back = [*self.route.reverse, CLIENT_SID]
            # answers to the address an SNAT VNF gave the client go back through it
            # (the reverse chain), which restores the client's
            targets = [ep.client.ip6] + ([a.vnf_snat6] if self.route.proxy_both_ways else [])
            for target in targets:
                self._do(server, ["ip", "-6", "route", "replace", f"{target}/128", "encap",
                                  "seg6", "mode", "encap", "segs", ",".join(back), "dev",
                                  ep.server.dev])
        if self.route.proxy_both_ways:
            self._attach_reverse_proxy()
        if self.carried:
            dev = ep.client.dev
            self._note(client, carry.detach_argv(dev))
            self._remember(client, carry.detach_argv(dev))
            carry.attach(client, dev, self.visit)

    def carry_counts(self) -> dict[str, int] | None:
        """Packets the client's srh_carry changed and left alone (None: not attached)."""
        return carry.counts(self.ep.client.node, self.ep.client.dev) if self.carried else None

    def _attach_reverse_proxy(self) -> None:
        """The caching proxy's inbound program (the one attached to the SUT's in port)
        attached to its out port too: pinned for a moment on a bpffs, as tc attaches
        only pinned programs (ebpf.sh's own pins live in its own mount namespace)."""
        sin, out = self.tb.sut.in_port.name, self.tb.sut.out_port.name
        script = f"""set -euo pipefail
id=$(tc filter show dev {sin} ingress pref {FILTER_PREF} | sed -n 's/.* id \\([0-9]*\\).*/\\1/p' | head -n 1)
[ -n "$id" ] || {{ echo "no proxy program on {sin} ingress (pref {FILTER_PREF})" >&2; exit 1; }}
[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] || mount -t bpf bpf /sys/fs/bpf
pin=/sys/fs/bpf/srperf-stateful-$$
bpftool prog pin id "$id" "$pin"
trap 'rm -f "$pin"' EXIT
tc qdisc show dev {out} clsact | grep -q clsact || tc qdisc add dev {out} clsact
tc filter replace dev {out} ingress pref {PROXY_PREF} handle 1 bpf object-pinned "$pin" direct-action
"""
        self._do(self.ep.sut, ["bash", "-c", script],
                 ["tc", "filter", "del", "dev", out, "ingress", "pref", str(PROXY_PREF)])

    def remove(self) -> None:
        """Undo what :meth:`install` did, last first (errors are logged)."""
        while self._undo:
            node, argv = self._undo.pop()
            res = node.run(argv, timeout=30.0)
            if not res.ok:
                log.warning("%s: %s failed: %s", node.where, " ".join(argv),
                            res.stderr.strip())
        if self._journal:   # every node: a change that failed was noted, not kept
            for node in (self.ep.client.node, self.ep.server.node, self.ep.sut):
                undo_journal.clear(node, self.tb, self._role(node))

    def __enter__(self) -> "Steering":
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


__all__ = ["Steering", "Route", "route_for", "refusal", "segment_lists", "chain_sids", "CLIENT_SID"]
