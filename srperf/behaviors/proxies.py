"""SRv6 proxy behaviors (End.AD, End.AS, End.AM, a caching proxy) and SRNK's End baseline.

Forwarder-independent specs: every behavior here needs legacy VNFs behind the
SUT (:class:`srperf.testbeds.vnf.VnfSet`); srperf's eBPF dataplane
(:mod:`srperf.forwarders.ebpf`) implements them today.

Test frames (SRNK's methodology): an inner IPv6 (or IPv4) UDP packet of
``packet_size`` bytes behind an outer IPv6 header (source ``tester_tx_ip6``)
and an SRH of two SIDs: the SID of VNF ``vnf_target``, then ``sid_next`` (SL 1,
DA = the VNF's SID).  After the proxy, the VNF (which forwards the inner
packet: hop limit/TTL - 1) and the proxy again (which forwards the inner packet
from the VNF as a router: hop limit/TTL - 1, IPv4 checksum updated; the proxy
draft's "Decrement TTL and update checksum" / "Decrement Hop Limit"), the tester
must receive the same outer header with SL 0, DA ``sid_next`` and hop limit - 1
(End at the proxy SID, RFC 8986 4.1 S12), and the inner packet intact except its
hop limit/TTL, 2 less (or, behind an SNAT VNF, also its source address and
checksums).

End.AM (masquerading) carries no inner packet: its frame is a ``packet_size``
byte IPv6/UDP packet with an SRH inserted (SIDs: the VNF's, ``sid_next``,
``dst6``; SL 2).  The VNF sees DA ``dst6`` (the last SID) and forwards it; the
tester must receive DA ``sid_next``, SL 1, hop limit - 2 (VNF and SUT), the rest
intact.

The baseline (``end_baseline``, SRNK's "End"): no proxy; the VNF is SR-aware
and runs End on its SID; the SUT only forwards (outer hop limit - 3: SUT, VNF,
SUT), inner untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from srperf.traffic import frame_sizes
from srperf.util.lazy_import import lazy_module
from srperf.behaviors.spec import Behavior, CheckResult, Expectation
from srperf.measure.checks import compare
from srperf.config.model import TestbedConfig, vnf_sid

if TYPE_CHECKING:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from scapy.packet import Packet

P = lazy_module("srperf.traffic.packets")
"""Frame building (scapy), imported when a frame is first built or checked."""


def target_sid(tb: TestbedConfig) -> str:
    """SID of the VNF the test frames are addressed to."""
    return vnf_sid(tb.addressing, tb.addressing.vnf_target)


# --- frames ------------------------------------------------------------------------

def _encap_frame(inner: str) -> Callable[[TestbedConfig, int], Packet]:
    def build(tb: TestbedConfig, size: int) -> Packet:
        a = tb.addressing
        payload = P.udp6(tb, size) if inner == "ipv6" else P.udp4(tb, size)
        nh = P.NH_IPV6 if inner == "ipv6" else P.NH_IPV4
        outer = P.srv6(a.tester_tx_ip6, [target_sid(tb), a.sid_next], 1, nh)
        return P.to_sut(tb, outer / payload)
    return build


def am_segments(tb: TestbedConfig) -> list[str]:
    """SIDs of the End.AM frame, first first: the VNF, sid_next, dst6."""
    a = tb.addressing
    return [target_sid(tb), a.sid_next, a.dst6]


def _am_frame(tb: TestbedConfig, size: int) -> Packet:
    """A ``size``-byte IPv6/UDP packet to dst6 with an SRH inserted, DA = the VNF's SID."""
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6

    a = tb.addressing
    plain = P.udp6(tb, size)
    segs = am_segments(tb)
    return P.to_sut(tb, IPv6(src=a.src6, dst=segs[0], hlim=P.HOP_LIMIT, nh=P.NH_ROUTING)
                    / P.srh(segs, len(segs) - 1, 17) / plain[UDP].copy())


# --- expectations ----------------------------------------------------------------------

def _advanced_outer(sent: Packet, hops: int) -> IPv6:
    """The outer IPv6 + SRH of ``sent`` with SL - 1, DA = next SID, hop limit - hops."""
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    ip = sent[IPv6].copy()
    srh = ip[IPv6ExtHdrSegmentRouting]
    srh.segleft -= 1
    ip.dst = srh.addresses[srh.segleft]
    ip.hlim -= hops
    return ip


INNER_HOPS = 2
"""Routers the inner packet crosses between the proxy's two halves: the VNF, then the
proxy itself, which forwards packets from the VNF as a router (proxy draft)."""


def _inner_after_vnf(sent: Packet, snat_src: str | None) -> Packet:
    """The inner packet once the VNF and the proxy forwarded it (hop limit/TTL - 2),
    maybe SNATed by the VNF."""
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    srh = sent[IPv6ExtHdrSegmentRouting]
    inner = srh.payload.copy()
    if isinstance(inner, IPv6):
        inner.hlim -= INNER_HOPS
    else:
        inner.ttl -= INNER_HOPS
        inner.chksum = None
    if snat_src is not None:
        inner.src = snat_src
        if UDP in inner:
            inner[UDP].chksum = None
    return inner


def _proxy_checker(tb: TestbedConfig, sent: Packet,
                   received: Sequence[Packet | bytes]) -> CheckResult:
    """Outer restored with SL - 1 / DA = next SID / hop limit - 1; inner forwarded by the VNF
    and the proxy."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    outer = _advanced_outer(sent, 1)
    srh = outer[IPv6ExtHdrSegmentRouting]
    inner_v4 = isinstance(sent[IPv6ExtHdrSegmentRouting].payload, IP)
    snat = tb.addressing.vnf_snat4 if inner_v4 else tb.addressing.vnf_snat6
    text = (f"outer IPv6 {outer.src} -> {outer.dst}, SRH {srh.addresses} SL {srh.segleft}, "
            f"hop limit {outer.hlim}; inner {'IPv4' if inner_v4 else 'IPv6'} forwarded "
            f"by the VNF and the proxy (hop limit/TTL - {INNER_HOPS})")
    plain = Expectation(P.from_sut(tb, _with_payload(outer, _inner_after_vnf(sent, None))),
                        text)
    result = compare(plain, received)
    if result.ok:
        return result
    natted = Expectation(P.from_sut(tb, _with_payload(outer, _inner_after_vnf(sent, snat))),
                         text + f", source NATed to {snat}")
    alt = compare(natted, received)
    return alt if alt.ok else result


def _with_payload(outer: IPv6, inner: Packet) -> IPv6:
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    ip = outer.copy()
    srh = ip[IPv6ExtHdrSegmentRouting]
    srh.remove_payload()
    srh.add_payload(inner)
    ip.plen = None
    return ip


def _am_expect(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    ip = _advanced_outer(sent, 2)
    srh = ip[IPv6ExtHdrSegmentRouting]
    return Expectation(P.from_sut(tb, ip),
                       f"DA {ip.dst} restored from the SRH, SL {srh.segleft}, hop limit "
                       f"{ip.hlim} (VNF and SUT), SRH and payload intact")


def _baseline_expect(tb: TestbedConfig, sent: Packet) -> Expectation:
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    ip = _advanced_outer(sent, 3)
    srh = ip[IPv6ExtHdrSegmentRouting]
    return Expectation(P.from_sut(tb, ip),
                       f"End in the VNF: DA {ip.dst}, SL {srh.segleft}, hop limit {ip.hlim} "
                       "(SUT, VNF, SUT), SRH and inner intact")


# --- the catalogue entries --------------------------------------------------------------

def _proxy(name: str, display: str, cfg: str, builder: Callable[[TestbedConfig, int], Packet],
           min_size: str, description: str, distinct: bool = False) -> Behavior:
    return Behavior(name=name, display_name=display, cfg_function=cfg, kind="proxy",
                    frame_builder=builder, checker=_proxy_checker, needs_vnf=True,
                    description=description, distinct_frames=distinct,
                    min_packet_size=frame_sizes.min_size(min_size) + (frame_sizes.COUNTER_LEN
                                                                       if distinct else 0))


BEHAVIORS: tuple[Behavior, ...] = (
    _proxy("end_ad", "End.AD", "end_ad", _encap_frame("ipv6"), "ipv6",
           "dynamic proxy: outer IPv6 + SRH learned per VNF (rewritten at most once per "
           "age), removed towards the VNF, restored with SL - 1 on return; inner IPv6"),
    _proxy("end_ad_v4", "End.AD (IPv4)", "end_ad", _encap_frame("ipv4"), "ipv4",
           "End.AD with an inner IPv4 packet"),
    _proxy("end_as", "End.AS", "end_as", _encap_frame("ipv6"), "ipv6",
           "static proxy: configured outer IPv6 + SRH pushed on packets from the VNF"),
    _proxy("end_cache", "Caching proxy", "end_cache", _encap_frame("ipv6"), "ipv6",
           "per-packet outer header cached in an LRU map keyed by inner fields; inner IPv6",
           distinct=True),
    _proxy("end_cache_v4", "Caching proxy (IPv4)", "end_cache", _encap_frame("ipv4"), "ipv4",
           "caching proxy with an inner IPv4 packet", distinct=True),
    Behavior(name="end_am", display_name="End.AM", cfg_function="end_am", kind="proxy",
             frame_builder=_am_frame, expect=_am_expect, needs_vnf=True,
             min_packet_size=frame_sizes.min_size("ipv6"),
             description="masquerading proxy: DA = last SID towards the VNF, SRH kept; "
                         "DA = SRH[SL] on return"),
    Behavior(name="end_baseline", display_name="End (in the VNF)", cfg_function="end_baseline",
             kind="proxy", frame_builder=_encap_frame("ipv6"), expect=_baseline_expect,
             needs_vnf=True, min_packet_size=frame_sizes.min_size("ipv6"),
             description="SRNK's baseline: no proxy, an SR-aware VNF runs End itself"),
)
"""Every behavior of this module, in catalogue order."""

__all__ = ["BEHAVIORS", "target_sid", "am_segments"]
