"""The SRv6 behaviors of RFC 8986 (and plain forwarding baselines), as catalogue specs.

Each :class:`Behavior` knows the frame the tester sends for it
(:meth:`Behavior.build_frame`), the CFG script function that configures it on
the SUT, the forwarders that implement it, and how to check that the SUT
transformed a frame exactly as specified (:meth:`Behavior.check`).

Test frames follow the SRPerf paper: an inner IP packet of ``packet_size``
bytes (64 by default; for layer-2 behaviors the inner Ethernet frame is
``packet_size`` bytes).  Endpoint behaviors receive it behind an outer IPv6
header and an SRH holding 2 SIDs: no-decap behaviors are addressed to the first
SID (SL=1, DA=sid_sut, then sid_next), decap behaviors to the last (SL=0,
DA=sid_sut).  Headend and plain behaviors receive the plain packet (for L2
encapsulation the whole received frame is what gets encapsulated).

Addressing (from :class:`srperf.config.model.Addressing`): the SUT's SID is
``sid_sut``; other SIDs under ``sid_prefix`` route to the tester's rx port
(next hop ``tester_rx_ip6``); plain traffic goes ``src6 -> dst6`` /
``src4 -> dst4``; End.T/End.DT* use table ``table``; NEXT-C-SID uses the
``csid_*`` parameters.

What the checks expect is what Linux 6.x does (observed on real namespaces by
tests/test_linux_cfg.py):

* End, End.X, End.T, NEXT-C-SID, H.Insert: the (outer) hop limit drops by 1.
* End.DX6/DT6/DT46 and End.DX4/DT4: the exposed inner packet is forwarded, so
  its hop limit / TTL drops by 1 (IPv4 checksum updated); End.DX2 emits the
  inner Ethernet frame byte for byte.
* H.Encaps*, End.B6.Encaps: the inner packet is left untouched (End.B6.Encaps
  first does SL-1 and DA = next SID on it); the new outer header has source
  tunsrc and, on Linux, hop limit = inner hop limit - 1 (IPv4 inner: the
  default 64 - 1), traffic class and flow label 0.  RFC 8986 leaves these three
  outer fields to the encapsulating node, so they are reported, not compared.

Every other byte of the frame is compared, Ethernet addresses included.
"""

from __future__ import annotations

import dataclasses

from typing import TYPE_CHECKING, Sequence

from srperf.traffic import frame_sizes
from srperf.util.lazy_import import lazy_module
from srperf.behaviors.policies import b6_segs, encap_segs, insert_segs
from srperf.behaviors.spec import Behavior, Expectation, Expecter, FrameBuilder
from srperf.config.model import TestbedConfig

if TYPE_CHECKING:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from scapy.layers.l2 import Ether
    from scapy.packet import Packet

P = lazy_module("srperf.traffic.packets")
"""Frame building (scapy), imported when a frame is first built or checked."""

# --- frame builders ---------------------------------------------------------------

def _plain6(tb: TestbedConfig, size: int) -> Packet:
    return P.to_sut(tb, P.udp6(tb, size))


def _plain4(tb: TestbedConfig, size: int) -> Packet:
    return P.to_sut(tb, P.udp4(tb, size))


def _l2_to_sut(tb: TestbedConfig, size: int) -> Packet:
    """H.Encaps.L2 input: the frame itself is ``size`` bytes and gets encapsulated."""
    from scapy.layers.inet6 import IPv6

    inner = P.l2_frame(tb, size)   # checks the size
    return P.to_sut(tb, inner[IPv6])


def _srv6_endpoint(inner: str, decap: bool) -> FrameBuilder:
    """Outer IPv6 + 2-SID SRH + inner packet, addressed to the SUT's SID."""
    if inner not in ("ipv6", "ipv4", "l2"):
        raise KeyError(inner)

    def build(tb: TestbedConfig, size: int) -> Packet:
        nh = {"ipv6": P.NH_IPV6, "ipv4": P.NH_IPV4, "l2": P.NH_ETHERNET}[inner]
        a = tb.addressing
        payload = {"ipv6": P.udp6, "ipv4": P.udp4, "l2": P.l2_frame}[inner](tb, size)
        if decap:   # SID list (previous, sut): the SUT's SID is the last one
            outer = P.srv6(a.tester_tx_ip6, [a.sid_next, a.sid_sut], 0, nh)
        else:       # SID list (sut, next): the SUT's SID is the first one
            outer = P.srv6(a.tester_tx_ip6, [a.sid_sut, a.sid_next], 1, nh)
        return P.to_sut(tb, outer / payload)

    return build


def _csid_frame(tb: TestbedConfig, size: int) -> Packet:
    """Outer IPv6 whose DA is a C-SID container (SUT's C-SID, then the next one), no SRH."""
    from scapy.layers.inet6 import IPv6

    a = tb.addressing
    outer = IPv6(src=a.tester_tx_ip6, dst=a.csid_address(a.csid_sut, a.csid_next),
                 hlim=P.HOP_LIMIT, nh=P.NH_IPV6)
    return P.to_sut(tb, outer / P.udp6(tb, size))


# --- expectations -------------------------------------------------------------------

def _route6(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet6 import IPv6

    ip = sent[IPv6].copy()
    ip.hlim -= 1
    return Expectation(P.from_sut(tb, ip), f"IPv6 to {ip.dst} forwarded, hop limit {ip.hlim}")


def _route4(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet import IP

    ip = sent[IP].copy()
    ip.ttl -= 1
    ip.chksum = None
    return Expectation(P.from_sut(tb, ip), f"IPv4 to {ip.dst} forwarded, TTL {ip.ttl}")


def _end(tb: TestbedConfig, sent: Packet) -> Expectation:
    """End/End.X/End.T: SL decremented, DA = next SID, hop limit - 1, rest intact."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    ip = sent[IPv6].copy()
    srh = ip[IPv6ExtHdrSegmentRouting]
    srh.segleft -= 1
    ip.dst = srh.addresses[srh.segleft]
    ip.hlim -= 1
    return Expectation(P.from_sut(tb, ip),
                       f"DA {ip.dst}, SL {srh.segleft}, hop limit {ip.hlim}, SRH and inner intact")


def _next_csid(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet6 import IPv6

    a = tb.addressing
    ip = sent[IPv6].copy()
    ip.dst = P.csid_shift(ip.dst, a.csid_lblen, a.csid_nflen)
    ip.hlim -= 1
    return Expectation(P.from_sut(tb, ip),
                       f"DA shifted to {ip.dst} (NEXT-C-SID), hop limit {ip.hlim}, rest intact")


def _decap6(tb: TestbedConfig, sent: Packet) -> Expectation:
    """End.DX6/End.DT6/End.DT46: outer IPv6+SRH removed, inner forwarded (hop limit - 1)."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    inner = sent[IPv6ExtHdrSegmentRouting][IPv6].copy()
    inner.hlim -= 1
    return Expectation(P.from_sut(tb, inner),
                       f"SRv6 removed, inner IPv6 to {inner.dst} intact but hop limit {inner.hlim}")


def _decap4(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    inner = sent[IPv6ExtHdrSegmentRouting][IP].copy()
    inner.ttl -= 1
    inner.chksum = None
    return Expectation(P.from_sut(tb, inner),
                       f"SRv6 removed, inner IPv4 to {inner.dst} intact but TTL {inner.ttl}")


def _decap2(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    inner = Ether(bytes(sent[IPv6ExtHdrSegmentRouting].payload))
    return Expectation(inner, "SRv6 removed, inner Ethernet frame out unchanged")


# Fields of an outer IPv6 header that the encapsulating node chooses.
_OUTER_FREE = ((1, "hlim"), (1, "tc"), (1, "fl"))


def _encap_expect(tb: TestbedConfig, segs: Sequence[str], payload: Packet, nh: int,
                  reduced: bool, what: str) -> Expectation:
    """New outer IPv6 (src tunsrc, DA first SID) + SRH of ``segs`` around ``payload``."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    src = tb.addressing.tunsrc
    stored = list(segs[1:] if reduced else segs)
    if not stored:  # a reduced single-SID policy carries no SRH at all
        outer = IPv6(src=src, dst=segs[0], nh=nh) / payload
        srh_text = "no SRH"
    else:
        srh = IPv6ExtHdrSegmentRouting(nh=nh, addresses=list(reversed(stored)),
                                       segleft=len(segs) - 1, lastentry=len(stored) - 1)
        outer = IPv6(src=src, dst=segs[0], nh=P.NH_ROUTING) / srh / payload
        srh_text = (f"SRH {list(reversed(stored))} SL {len(segs) - 1}"
                    + (" (first SID not in SRH)" if reduced else ""))
    return Expectation(P.from_sut(tb, outer),
                       f"outer IPv6 {src} -> {segs[0]}, {srh_text}, {what} intact",
                       free=_OUTER_FREE)


encap_expect = _encap_expect
"""The expectation of a new outer IPv6 + SRH around a payload (public for the matrices)."""


def _h_encaps(inner: str, reduced: bool = False) -> Expecter:
    def expect(tb: TestbedConfig, sent: Packet) -> Expectation:
        from scapy.layers.inet import IP
        from scapy.layers.inet6 import IPv6
        from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

        if inner == "l2":
            payload, nh = Ether(bytes(sent)), P.NH_ETHERNET
        elif inner == "ipv4":
            payload, nh = sent[IP].copy(), P.NH_IPV4
        else:
            payload, nh = sent[IPv6].copy(), P.NH_IPV6
        return _encap_expect(tb, encap_segs(tb), payload, nh, reduced,
                             {"l2": "received Ethernet frame", "ipv4": "inner IPv4",
                              "ipv6": "inner IPv6"}[inner])
    return expect


def _h_insert(tb: TestbedConfig, sent: Packet) -> Expectation:
    """SRH inserted after the IPv6 header: [original DA] + policy; DA = first SID."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    ip = sent[IPv6]
    segs = insert_segs(tb)
    stored = [ip.dst] + list(reversed(segs))
    srh = IPv6ExtHdrSegmentRouting(nh=ip.nh, addresses=stored, segleft=len(segs),
                                   lastentry=len(stored) - 1)
    new = IPv6(version=ip.version, tc=ip.tc, fl=ip.fl, hlim=ip.hlim - 1, src=ip.src,
               dst=segs[0], nh=P.NH_ROUTING) / srh / ip.payload.copy()
    return Expectation(P.from_sut(tb, new),
                       f"SRH {stored} SL {len(segs)} inserted, DA {segs[0]}, "
                       f"hop limit {ip.hlim - 1}, payload intact")


def _b6_encaps(tb: TestbedConfig, sent: Packet) -> Expectation:
    """End.B6.Encaps: received packet gets SL - 1 / DA = next SID, then a new outer IPv6 + SRH."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    inner = sent[IPv6].copy()
    srh = inner[IPv6ExtHdrSegmentRouting]
    srh.segleft -= 1
    inner.dst = srh.addresses[srh.segleft]
    exp = _encap_expect(tb, b6_segs(tb), inner, P.NH_IPV6, False,
                        f"inner IPv6 (DA {inner.dst}, SL {srh.segleft})")
    return exp


# --- the entries -------------------------------------------------------------------


def _add(name: str, display: str, kind: str, builder: FrameBuilder, expect: Expecter,
         min_size: str = "ipv6", description: str = "") -> Behavior:
    return Behavior(name=name, display_name=display, cfg_function=name, kind=kind,
                    frame_builder=builder, expect=expect, description=description,
                    min_packet_size=frame_sizes.min_size(min_size))


BEHAVIORS: tuple[Behavior, ...] = (
    dataclasses.replace(_add("ipv6", "IPv6", "plain", _plain6, _route6,
                             description="plain IPv6 forwarding src6 -> dst6"),
                        reverse_builder=lambda tb, size: P.to_sut_reverse(
                            tb, P.reverse_udp6(tb, size))),
    dataclasses.replace(_add("ipv4", "IPv4", "plain", _plain4, _route4, min_size="ipv4",
                             description="plain IPv4 forwarding src4 -> dst4"),
                        reverse_builder=lambda tb, size: P.to_sut_reverse(
                            tb, P.reverse_udp4(tb, size))),
    _add("h_insert", "H.Insert", "headend", _plain6, _h_insert,
         description="SRH inserted into IPv6 packets to dst_prefix6"),
    _add("h_encaps", "H.Encaps", "headend", _plain6, _h_encaps("ipv6"),
         description="IPv6 packets encapsulated in IPv6 + SRH"),
    _add("h_encaps_v4", "H.Encaps (IPv4)", "headend", _plain4, _h_encaps("ipv4"), min_size="ipv4",
         description="IPv4 packets encapsulated in IPv6 + SRH"),
    _add("h_encaps_l2", "H.Encaps.L2", "headend", _l2_to_sut, _h_encaps("l2"), min_size="l2",
         description="received Ethernet frames encapsulated in IPv6 + SRH"),
    _add("h_encaps_red", "H.Encaps.Red", "headend", _plain6, _h_encaps("ipv6", reduced=True),
         description="H.Encaps with the first SID left out of the SRH"),
    _add("h_encaps_l2_red", "H.Encaps.L2.Red", "headend", _l2_to_sut,
         _h_encaps("l2", reduced=True), min_size="l2",
         description="H.Encaps.L2 with the first SID left out of the SRH"),
    _add("end", "End", "endpoint", _srv6_endpoint("ipv6", decap=False), _end),
    _add("end_x", "End.X", "endpoint", _srv6_endpoint("ipv6", decap=False), _end,
         description="End, then to the layer-3 adjacency tester_rx_ip6"),
    _add("end_t", "End.T", "endpoint", _srv6_endpoint("ipv6", decap=False), _end,
         description="End, then a lookup in table `table`"),
    _add("end_dx2", "End.DX2", "decap", _srv6_endpoint("l2", decap=True), _decap2, min_size="l2",
         description="decapsulate, send the inner Ethernet frame out of the SUT's out port"),
    _add("end_dx4", "End.DX4", "decap", _srv6_endpoint("ipv4", decap=True), _decap4,
         min_size="ipv4", description="decapsulate, inner IPv4 to next hop tester_rx_ip4"),
    _add("end_dx6", "End.DX6", "decap", _srv6_endpoint("ipv6", decap=True), _decap6,
         description="decapsulate, inner IPv6 to next hop tester_rx_ip6"),
    _add("end_dt4", "End.DT4", "decap", _srv6_endpoint("ipv4", decap=True), _decap4,
         min_size="ipv4", description="decapsulate, inner IPv4 looked up in table `table` (VRF)"),
    _add("end_dt6", "End.DT6", "decap", _srv6_endpoint("ipv6", decap=True), _decap6,
         description="decapsulate, inner IPv6 looked up in table `table`"),
    _add("end_dt46", "End.DT46", "decap", _srv6_endpoint("ipv6", decap=True), _decap6,
         description="decapsulate, inner IPv6 or IPv4 looked up in table `table` (VRF)"),
    _add("end_dt6_vrf", "End.DT6 (VRF)", "decap", _srv6_endpoint("ipv6", decap=True), _decap6,
         description="decapsulate, inner IPv6 looked up in the VRF of table `table` "
                     "(vrftable mode)"),
    dataclasses.replace(
        _add("end_dt46_v4", "End.DT46 (IPv4)", "decap", _srv6_endpoint("ipv4", decap=True),
             _decap4, min_size="ipv4",
             description="End.DT46 measured with inner IPv4 (the same SID as end_dt46)"),
        cfg_function="end_dt46"),
    _add("end_b6_encaps", "End.B6.Encaps", "endpoint", _srv6_endpoint("ipv6", decap=False),
         _b6_encaps,
         description="End, then encapsulated in the policy bound to the SID"),
    _add("end_next_csid", "End (NEXT-C-SID)", "endpoint", _csid_frame, _next_csid,
         description="End with the NEXT-C-SID flavor: the C-SID container DA is shifted"),
)
"""Every behavior of this module, in catalogue order."""
