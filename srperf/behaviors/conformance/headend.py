"""Matrices of plain forwarding and the SR policy headends (RFC 8986 section 5).

H.Encaps/H.Encaps.Red (5.1, 5.2): new outer IPv6 + SRH (the reduced one without the
first SID), the inner hop limit/TTL decremented (5.1 S05) - so an inner hop limit 1
expires here (RFC 8200 3); the outer hop limit, traffic class and flow label are the
headend's choice (not compared).  H.Encaps.L2/L2.Red (5.3, 5.4): the received
Ethernet frame becomes the payload unchanged.  H.Insert (the SRv6 insertion draft):
an SRH of [original DA, policy] inserted where RFC 8200 4.1 puts a routing header
(after a hop-by-hop header), DA = first SID, forwarded (hop limit - 1).
"""

from __future__ import annotations

import struct
from typing import Callable, Sequence

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from srperf.traffic import packets as P
from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.build import CaseList, forward_each, max_inner
from srperf.behaviors.conformance.model import Forward, Outcome
from srperf.behaviors.policies import encap_segs, insert_segs
from srperf.behaviors.srv6 import encap_expect
from srperf.config.model import TestbedConfig


def _packet(tb: TestbedConfig, family: str, tag: int, l4: str = "udp", size: int = 64,
            hlim: int = P.HOP_LIMIT, hbh: bool = False) -> bytes:
    pkt = W.inner(tb, "ipv4" if family == "ipv4" else "ipv6", l4, size, tag, hlim)
    raw = bytes(pkt)
    if hbh:   # a hop-by-hop header between the IPv6 header and the L4 header
        ext = W.ext_header(W.NH_HBH, raw[6])
        raw = (raw[:4] + struct.pack("!H", len(raw) - W.IP6 + len(ext)) + bytes([W.NH_HBH])
               + raw[7:W.IP6] + ext + raw[W.IP6:])
    return raw


def _plain_cases(tb: TestbedConfig, cl: CaseList, family: str,
                 fwd: Callable[[Sequence[bytes]], Outcome], spec: str, overhead: int,
                 hop_limit_1: Callable[[Sequence[bytes]], Outcome] | None = None) -> None:
    """Variants of a plain IPv6/IPv4 packet to dst6/dst4 (``l2``: IPv6 in the frame)."""
    def frames(**kw: object) -> Callable[[int], list[bytes]]:
        return lambda tag: [bytes(P.to_sut(tb, IPv6(_packet(tb, family, tag, **kw))
                                           if family != "ipv4" else
                                           IP(_packet(tb, family, tag, **kw))))]

    cl.add("plain", "inner", frames(), fwd, spec)
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", frames(l4=l4), fwd, spec)
    cl.add("hop_limit_1", "hop_limit", frames(hlim=1), hop_limit_1 or cl.drop("hop_limit"),
           spec if hop_limit_1 else f"{spec}; RFC 8200 3 / RFC 791: hop limit/TTL expires")
    cl.add("hop_limit_2", "hop_limit", frames(hlim=2), fwd, spec)
    if family != "ipv4":
        cl.add("ext_hop_by_hop", "ext_header", frames(hbh=True), fwd, spec)
    fam = "ipv4" if family == "ipv4" else "ipv6"
    cl.add("fragments", "fragments", lambda tag: [
        bytes(P.to_sut(tb, IP(f) if fam == "ipv4" else IPv6(f)))
        for f in W.fragments(tb, fam, 600, tag)], fwd, f"{spec}; each fragment on its own")
    top = max_inner(tb, overhead) - (P.ETH_HDR if family == "l2" else 0)
    for size in (512, top):
        cl.add(f"size_{size}", "size", frames(size=size), fwd, spec)


def _routed(tb: TestbedConfig) -> Callable[[Sequence[bytes]], Outcome]:
    return forward_each(tb, lambda f: W.with_eth_type(tb, W.decrement_ip(W.ip_packet(f))),
                        "forwarded, hop limit/TTL - 1")


def ipv6(tb: TestbedConfig) -> CaseList:
    cl = CaseList(tb, "ipv6")
    _plain_cases(tb, cl, "ipv6", _routed(tb), "RFC 8200 3 (forwarding)", 0)
    return cl


def ipv4(tb: TestbedConfig) -> CaseList:
    cl = CaseList(tb, "ipv4")
    _plain_cases(tb, cl, "ipv4", _routed(tb), "RFC 791 / RFC 1812 5.3.1 (forwarding)", 0)
    return cl


def encap_outcome(tb: TestbedConfig, family: str, reduced: bool,
                  decrement: bool = True) -> Callable[[Sequence[bytes]], Outcome]:
    """H.Encaps*: each frame in a new outer IPv6 + SRH of the policy; the inner hop
    limit/TTL - 1 (5.1 S05) unless not ``decrement`` (Ethernet: the frame as received)."""
    segs = encap_segs(tb)
    nh = {"ipv6": P.NH_IPV6, "ipv4": P.NH_IPV4, "l2": P.NH_ETHERNET}[family]

    def outcome(frames: Sequence[bytes]) -> Outcome:
        out = []
        for f in frames:
            if family == "l2":
                payload = Ether(f)
            else:
                inner = W.ip_packet(f)
                inner = W.decrement_ip(inner) if decrement else inner
                payload = IPv6(inner) if family == "ipv6" else IP(inner)
            out.append(encap_expect(tb, segs, payload, nh, reduced,
                                    "received frame" if family == "l2"
                                    else "inner (hop limit/TTL - 1)"))
        return Forward(tuple(out))
    return outcome


def _encaps(tb: TestbedConfig, name: str, family: str, reduced: bool,
            spec: str) -> CaseList:
    srh_len = 8 + 16 * (len(encap_segs(tb)) - (1 if reduced else 0))
    outcome = encap_outcome(tb, family, reduced)
    cl = CaseList(tb, name)
    l2_hlim = (outcome if family == "l2" else None)
    _plain_cases(tb, cl, family, outcome, spec, P.IPV6_HDR + srh_len, l2_hlim)
    if family == "ipv6":
        a = tb.addressing
        cl.add("inner_srh", "inner", lambda tag: [bytes(P.to_sut(tb, IPv6(
            W.srv6(tb, a.dst6, W.srh([a.dst6, a.src6], 0, P.NH_IPV6), P.NH_ROUTING,
                   _packet(tb, "ipv6", tag), src=a.src6)[W.ETH:])))],
            outcome, f"{spec}; a received SRH is inner payload, left intact")
    return cl


def h_encaps(tb: TestbedConfig) -> CaseList:
    return _encaps(tb, "h_encaps", "ipv6", False, "RFC 8986 5.1 S01-S06")


def h_encaps_v4(tb: TestbedConfig) -> CaseList:
    return _encaps(tb, "h_encaps_v4", "ipv4", False, "RFC 8986 5.1 S01-S06")


def h_encaps_red(tb: TestbedConfig) -> CaseList:
    return _encaps(tb, "h_encaps_red", "ipv6", True, "RFC 8986 5.2")


def h_encaps_l2(tb: TestbedConfig) -> CaseList:
    return _encaps(tb, "h_encaps_l2", "l2", False, "RFC 8986 5.3")


def h_encaps_l2_red(tb: TestbedConfig) -> CaseList:
    return _encaps(tb, "h_encaps_l2_red", "l2", True, "RFC 8986 5.4")


def insert(tb: TestbedConfig, f: bytes, after_hbh: bool = True) -> bytes:
    """The SRH [original DA] + policy inserted after the IPv6 header and (``after_hbh``)
    any hop-by-hop header; DA = first SID; hop limit - 1."""
    segs = insert_segs(tb)
    ip = bytearray(W.ip_packet(f))
    at, nh = W.IP6, ip[6]
    if nh == W.NH_HBH and after_hbh:
        at, nh = W.IP6 + (ip[W.IP6 + 1] + 1) * 8, ip[W.IP6]
    stored = [str(IPv6(bytes(ip)).dst), *reversed(segs)]
    srh = W.srh(stored, len(segs), nh)
    if at == W.IP6:
        ip[6] = P.NH_ROUTING
    else:
        ip[W.IP6] = P.NH_ROUTING
    out = ip[:at] + srh + ip[at:]
    out[4:6] = struct.pack("!H", len(out) - W.IP6)
    out[24:40] = IPv6(dst=segs[0]).build()[24:40]
    out[7] -= 1
    return W.with_eth_type(tb, bytes(out))


def h_insert(tb: TestbedConfig) -> CaseList:
    cl = CaseList(tb, "h_insert")
    fwd = forward_each(tb, lambda f: insert(tb, f),
                       "SRH [DA, policy] inserted (after any hop-by-hop header), DA = first "
                       "SID, hop limit - 1")
    _plain_cases(tb, cl, "ipv6", fwd, "draft-filsfils-spring-srv6-net-pgm-insertion "
                 "(H.Insert); RFC 8200 4.1 (header order)", 8 + 16 * 2)
    cl.not_applicable("inner_srh", "inner", "inserting into a packet that has an SRH is "
                      "not specified", "draft-filsfils-spring-srv6-net-pgm-insertion")
    return cl


MATRICES = {"ipv6": ipv6, "ipv4": ipv4, "h_encaps": h_encaps, "h_encaps_v4": h_encaps_v4,
            "h_encaps_red": h_encaps_red, "h_encaps_l2": h_encaps_l2,
            "h_encaps_l2_red": h_encaps_l2_red, "h_insert": h_insert}
"""Behavior name -> the function that builds its cases."""
