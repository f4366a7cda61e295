"""Matrices of the SR proxies (draft-ietf-spring-sr-service-programming, section 6) and
the caching proxy (the caching SFC proxy paper), behind a VNF that forwards.

SR side (towards the VNF): the proxy SID is processed as an SR endpoint (RFC 8754
4.3.1.1: hop limit 1 expires, Segments Left 0 or beyond Last Entry + 1 is an error,
SL = Last Entry + 1 - the reduced SRH - is valid, extension headers before the SRH
are part of the outer headers); the outer headers with SL - 1 and DA = Segment
List[SL] (and hop limit - 1) are kept (End.AD: per VNF, learned; caching proxy: per
packet; End.AS: the configured header instead) and an inner IPv6/IPv4 packet
(ENH 41/4) goes to the VNF; any other ENH is dropped (End.AD2/AS2 for Ethernet are
behaviors of their own).  Legacy side (from the VNF): the proxy forwards the inner
packet as a router (hop limit/TTL - 1, IPv4 checksum updated; 1 expires here) in
the kept outer headers.  So the tester receives the outer headers of the frame it
sent with SL - 1, DA = next SID, hop limit - 1, and the inner packet with hop
limit/TTL - 2 (VNF, proxy).

End.AM (masquerading): no inner packet; DA = Segment List[0] towards the VNF (SL -
1), DA = Segment List[SL] again on return; the hop limit drops by 2 (VNF and SUT).
The caching proxy keeps one entry per packet: packets that differ only in their SRH
each get their own SRH back, or the second is dropped while an identical one is in
the VNF (the paper), never another packet's SRH.
"""

from __future__ import annotations

from typing import Callable, Sequence

from scapy.layers.l2 import Ether

from srperf.traffic import packets as P
from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.build import (CaseList, extra_sids, max_inner,
                                                sr_frame)
from srperf.behaviors.conformance.endpoint import (PAD1S, SRH2, TLVS, body, frag_bodies,
                                                   sr_frames)
from srperf.behaviors.conformance.model import Forward, Outcome
from srperf.behaviors.proxies import am_segments, target_sid
from srperf.measure.checks import Expectation
from srperf.config.model import TestbedConfig

NH = {"ipv6": P.NH_IPV6, "ipv4": P.NH_IPV4, "l2": P.NH_ETHERNET}
DRAFT = "draft-ietf-spring-sr-service-programming 6"
_OUTER_FREE = ((1, "hlim"), (1, "tc"), (1, "fl"))


def _returned(tb: TestbedConfig, static: bool) -> Callable[[bytes], Expectation]:
    """What comes back for one sent frame: outer kept (or End.AS's configured one), inner
    hop limit/TTL - 2."""
    a = tb.addressing

    def expect(f: bytes) -> Expectation:
        lay = W.walk(f)
        inner = W.decrement_ip(W.ip_packet(f, lay.upper), 2)
        if static:   # cfg: SID list (VNF, SRPERF_AS_SEGS = sid_next), source tester_tx_ip6
            outer = W.srv6(tb, a.sid_next, W.srh([a.sid_next, target_sid(tb)], 0,
                                                  lay.upper_nh), P.NH_ROUTING, inner,
                           src=a.tester_tx_ip6)
            return Expectation(Ether(W.eth_from_sut(tb, outer)),
                               "the configured outer header, inner hop limit/TTL - 2",
                               _OUTER_FREE)
        advanced = W.end_step(f[:lay.upper])
        out = bytearray(advanced + inner)
        out[W.ETH + 4:W.ETH + 6] = (len(out) - W.ETH - W.IP6).to_bytes(2, "big")
        return Expectation(Ether(W.eth_from_sut(tb, bytes(out))),
                           "outer kept with SL - 1, DA = next SID, hop limit - 1; inner "
                           "hop limit/TTL - 2 (VNF, proxy)")
    return expect


def _each(fn: Callable[[bytes], Expectation]) -> Callable[[Sequence[bytes]], Outcome]:
    return lambda frames: Forward(tuple(fn(f) for f in frames))


def _decap_proxy(tb: TestbedConfig, name: str, family: str, static: bool = False,
                 caching: bool = False) -> CaseList:
    a = tb.addressing
    cl = CaseList(tb, name)
    vnf, nxt = target_sid(tb), a.sid_next
    e = extra_sids(tb, 14)
    back = _returned(tb, static)
    fwd = _each(back)
    other = "ipv4" if family == "ipv6" else "ipv6"

    one = sr_frames(tb, family)

    base = [vnf, nxt]
    sr = f"{DRAFT}; RFC 8754 4.3.1.1"
    cl.add("sl_0", "sl", one([nxt, vnf], 0), cl.drop("segments_left"),
           f"{DRAFT} (SL > 0 needed)")
    cl.add("sl_1", "sl", one([e[0], vnf, nxt], 1), fwd, sr)
    cl.add("sl_last_entry", "sl", one([vnf, nxt, e[0]], 2), fwd, sr)
    cl.add("sl_last_entry_plus_1", "sl", one([vnf, nxt, e[0]], 2, reduced=True), fwd,
           f"{sr}; RFC 8986 4.1 S09 (reduced SRH valid)")
    cl.add("sl_beyond", "sl", one([vnf, nxt], 2, reduced=True, dst=vnf), cl.drop("bad_srh"),
           "RFC 8754 4.3.1.1 / RFC 8986 4.1 S09-S10")
    cl.add("segments_1", "segments", one([vnf, nxt], 1, reduced=True), fwd, sr)
    cl.add("segments_2", "segments", one(base, 1), fwd, sr)
    cl.add("segments_8", "segments", one([vnf, nxt, *e[:6]], 7), fwd, sr)
    cl.add("segments_16", "segments", one([vnf, nxt, *e[:14]], 15), fwd, sr)
    cl.add("srh_tlv", "srh_tlv", one(base, 1, tlvs=TLVS), fwd, f"{sr}; RFC 8754 2.1")
    cl.add("srh_pad1", "srh_tlv", one(base, 1, tlvs=PAD1S), fwd, f"{sr}; RFC 8754 2.1.1.1")
    cl.add("ext_hop_by_hop", "ext_header", one(base, 1, before=W.NH_HBH), fwd,
           f"{sr}; RFC 8200 4.1 (the outer extension headers are kept)")
    cl.add("ext_dest_opts", "ext_header", one(base, 1, before=W.NH_DEST), fwd,
           f"{sr}; RFC 8200 4.1")
    cl.add("hop_limit_1", "hop_limit", one(base, 1, hlim=1), cl.drop("hop_limit"),
           "RFC 8986 4.1 S05-S06 (End at the proxy SID)")
    cl.add("hop_limit_2", "hop_limit", one(base, 1, hlim=2), fwd, sr)
    cl.add("inner_hop_limit_1", "hop_limit", one(base, 1, inner_hlim=1), cl.drop("vnf"),
           "RFC 8200 3 / RFC 791 (the VNF forwards it)")
    cl.add("inner_hop_limit_2", "hop_limit", one(base, 1, inner_hlim=2),
           cl.drop("inner_hop_limit"),
           f"{DRAFT}, legacy-to-SR: decrement the inner hop limit/TTL (expires here)")
    cl.add("inner_hop_limit_3", "hop_limit", one(base, 1, inner_hlim=3), fwd,
           f"{DRAFT}, legacy-to-SR: inner hop limit/TTL - 1 at the proxy")
    cl.add(f"inner_{other}", "inner", one(base, 1, other), fwd,
           f"{DRAFT} (ENH 4 or 41: the same SID serves both families)")
    cl.add("inner_l2", "inner", one(base, 1, "l2"), cl.drop("upper_layer"),
           f"{DRAFT} (ENH 143: End.AD2/End.AS2 are behaviors of their own; here: drop)")
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", one(base, 1, l4=l4), fwd, sr)
    cl.add("fragments", "fragments", lambda tag: [
        sr_frame(tb, base, 1, f, NH[family]) for f in frag_bodies(tb, family, tag)], fwd,
        f"{sr}; each fragment is a packet of its own")
    for size in (512, max_inner(tb, P.IPV6_HDR + SRH2)):
        cl.add(f"size_{size}", "size", one(base, 1, size=size), fwd, sr)
    _flows(tb, cl, family, back, static, caching)
    return cl


def _flows(tb: TestbedConfig, cl: CaseList, family: str,
           back: Callable[[bytes], Expectation], static: bool, caching: bool) -> None:
    """Several packets inside the VNF at once (sent as a burst)."""
    a = tb.addressing
    vnf, nxt = target_sid(tb), a.sid_next
    e = extra_sids(tb, 2)
    path_a, path_b = [vnf, nxt], [vnf, e[0], e[1]]
    paper = "caching SFC proxy paper IV (one entry per packet; identical key: dropped)"
    if not caching:
        why = ("End.AS restores the configured header" if static else
               "End.AD keeps one header per VNF (the draft's dynamic proxy)")
        for name in ("same_inner_two_srhs", "tcp_ack_differs", "tcp_dport_differs"):
            cl.not_applicable(name, "flow", why, DRAFT)
        return

    def pair(**b_fields: int) -> Callable[[int], list[bytes]]:
        def frames(tag: int) -> list[bytes]:
            fa = body(tb, family, tag, "tcp")
            fb = body(tb, family, tag, "tcp", **b_fields)
            return [sr_frame(tb, path_a, 1, fa, NH[family]),
                    sr_frame(tb, path_b, 2, fb, NH[family])]
        return frames

    def alternating(tag: int) -> list[bytes]:
        inner = body(tb, family, tag)
        return [sr_frame(tb, path_a if i % 2 == 0 else path_b, 1 if i % 2 == 0 else 2,
                         inner, NH[family]) for i in range(8)]

    cl.add("same_inner_two_srhs", "flow", alternating,
           lambda frames: Forward(tuple(back(f) for f in frames), at_least=1), paper,
           burst=True, description="8 identical inner packets, SRH A and B alternating: "
           "each comes back with its own SRH or is dropped")
    cl.add("tcp_ack_differs", "flow", pair(ack=3000), _each(back),
           f"{paper}; the key holds the TCP acknowledgment number", burst=True)
    cl.add("tcp_dport_differs", "flow", pair(dport=P.UDP_DPORT + 1), _each(back),
           f"{paper}; the key holds both TCP ports", burst=True)


def end_ad(tb: TestbedConfig) -> CaseList:
    return _decap_proxy(tb, "end_ad", "ipv6")


def end_ad_v4(tb: TestbedConfig) -> CaseList:
    return _decap_proxy(tb, "end_ad_v4", "ipv4")


def end_as(tb: TestbedConfig) -> CaseList:
    return _decap_proxy(tb, "end_as", "ipv6", static=True)


def end_cache(tb: TestbedConfig) -> CaseList:
    return _decap_proxy(tb, "end_cache", "ipv6", caching=True)


def end_cache_v4(tb: TestbedConfig) -> CaseList:
    return _decap_proxy(tb, "end_cache_v4", "ipv4", caching=True)


def end_am(tb: TestbedConfig) -> CaseList:
    """End.AM: SRH kept through the VNF, DA masqueraded as Segment List[0]."""
    a = tb.addressing
    cl = CaseList(tb, "end_am")
    vnf, nxt, last = am_segments(tb)
    e = extra_sids(tb, 14)
    spec = f"{DRAFT}.4 (End.AM)"

    def back(f: bytes) -> bytes:
        return W.eth_from_sut(tb, W.end_step(f, hops=2))

    fwd = _each(lambda f: Expectation(Ether(back(f)), "DA = Segment List[SL] restored, SL "
                                      "- 1, hop limit - 2 (VNF, SUT), rest intact"))

    def one(path: Sequence[str], sl: int, l4: str = "udp", size: int = 64, **kw: object):
        def frames(tag: int) -> list[bytes]:
            pkt = bytes(W.inner(tb, "ipv6", l4, size + P.IPV6_HDR, tag))[P.IPV6_HDR:]
            nh = {"udp": 17, "tcp": 6, "icmp": 58}[l4]
            return [sr_frame(tb, path, sl, pkt, nh, src=a.src6,
                             **kw)]  # type: ignore[arg-type]
        return frames

    base = [vnf, nxt, last]
    cl.add("sl_0", "sl", one([nxt, last, vnf], 0), cl.drop("segments_left"),
           f"{spec} (SL > 0 needed)")
    cl.add("sl_1", "sl", one([e[0], vnf, last], 1), fwd, spec)
    cl.add("sl_last_entry", "sl", one(base, 2), fwd, spec)
    cl.add("sl_last_entry_plus_1", "sl", one(base, 2, reduced=True), fwd,
           f"{spec}; RFC 8986 4.1 S09 (reduced SRH valid)")
    cl.add("sl_beyond", "sl", one([vnf, last], 2, reduced=True, dst=vnf),
           cl.drop("bad_srh"), "RFC 8754 4.3.1.1 / RFC 8986 4.1 S09-S10")
    cl.add("segments_8", "segments", one([vnf, nxt, *e[:5], last], 7), fwd, spec)
    cl.add("segments_16", "segments", one([vnf, nxt, *e[:13], last], 15), fwd, spec)
    cl.add("srh_tlv", "srh_tlv", one(base, 2, tlvs=TLVS), fwd, spec)
    cl.add("srh_pad1", "srh_tlv", one(base, 2, tlvs=PAD1S), fwd, spec)
    cl.add("ext_hop_by_hop", "ext_header", one(base, 2, before=W.NH_HBH), fwd, spec)
    cl.add("ext_dest_opts", "ext_header", one(base, 2, before=W.NH_DEST), fwd, spec)
    cl.add("hop_limit_1", "hop_limit", one(base, 2, hlim=1), cl.drop("hop_limit"),
           "RFC 8986 4.1 S05-S06")
    cl.not_applicable("hop_limit_2", "hop_limit", "the draft does not say which pass "
                      "through the proxy decrements the hop limit", spec)
    for family in ("ipv4", "l2"):
        cl.not_applicable(f"inner_{family}", "inner", "End.AM carries no inner packet", spec)
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", one(base, 2, l4=l4), fwd, spec)
    for size in (512, max_inner(tb, SRH2 + 16)):
        cl.add(f"size_{size}", "size", one(base, 2, size=size - P.IPV6_HDR), fwd, spec)
    return cl


MATRICES = {"end_ad": end_ad, "end_ad_v4": end_ad_v4, "end_as": end_as,
            "end_cache": end_cache, "end_cache_v4": end_cache_v4, "end_am": end_am}
"""Behavior name -> the function that builds its cases."""
