"""Scapy building blocks for the test frames of the behavior catalogue.

Sizes are bytes.  As in the SRPerf paper, the *inner packet* of every test
frame is an IP packet of exactly ``packet_size`` bytes (64 by default): an
IPv6 (or IPv4) header, a UDP header and a payload that starts with
:data:`MARKER` and is padded with zeros.  For layer-2 behaviors the inner
packet is the Ethernet frame (without FCS) of ``packet_size`` bytes.
Test frames are told apart from other traffic on the tester's receive port
(ND, ARP, MLD, ...) by their UDP ports, which spell :data:`SIGNATURE`; the
payload starts with :data:`MARKER` when it has room for it (after the counter slot,
:data:`COUNTER_SLOT`, in frames whose packets must all differ).
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Sequence

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

from srperf.config.model import TestbedConfig
from srperf.traffic.frame_sizes import (COUNTER_LEN, COUNTER_SLOT, ETH_HDR, IPV4_HDR, IPV6_HDR, UDP_HDR,
                                 min_size)

MARKER = b"srperf-test\x00"
"""First bytes of the UDP payload (truncated when the payload is shorter)."""

UDP_SPORT = 0x5352  # "SR"
UDP_DPORT = 0x5046  # "PF"
SIGNATURE = struct.pack("!HH", UDP_SPORT, UDP_DPORT)
"""The UDP source and destination ports of every test packet, as bytes ("SRPF")."""
HOP_LIMIT = 64
"""Hop limit (IPv6) / TTL (IPv4) of every header the tester builds."""

NH_IPV4 = 4
NH_IPV6 = 41
NH_ROUTING = 43
NH_ETHERNET = 143

# Let scapy decode (and set next-header for) Ethernet carried by SRv6 (RFC 8986).
bind_layers(IPv6ExtHdrSegmentRouting, Ether, nh=NH_ETHERNET)
bind_layers(IPv6, Ether, nh=NH_ETHERNET)


def _payload(size: int) -> Raw:
    """A UDP payload of ``size`` bytes: the marker, zero padded."""
    if size < len(MARKER):
        return Raw(MARKER[:size])
    return Raw(MARKER + bytes(size - len(MARKER)))


def _check_size(inner: str, size: int) -> None:
    low = min_size(inner)
    if size < low:
        raise ValueError(f"packet_size {size} bytes is below the {low} bytes an inner "
                         f"{inner} test packet needs (headers + UDP)")


def _udp6(src: str, dst: str, sport: int, dport: int, size: int) -> Packet:
    _check_size("ipv6", size)
    return (IPv6(src=src, dst=dst, hlim=HOP_LIMIT) / UDP(sport=sport, dport=dport)
            / _payload(size - IPV6_HDR - UDP_HDR))


def _udp4(src: str, dst: str, sport: int, dport: int, size: int) -> Packet:
    _check_size("ipv4", size)
    return (IP(src=src, dst=dst, ttl=HOP_LIMIT) / UDP(sport=sport, dport=dport)
            / _payload(size - IPV4_HDR - UDP_HDR))


def udp6(tb: TestbedConfig, size: int) -> Packet:
    """Inner IPv6/UDP test packet (src6 -> dst6) of exactly ``size`` bytes."""
    a = tb.addressing
    return _udp6(a.src6, a.dst6, UDP_SPORT, UDP_DPORT, size)


def udp4(tb: TestbedConfig, size: int) -> Packet:
    """Inner IPv4/UDP test packet (src4 -> dst4) of exactly ``size`` bytes."""
    a = tb.addressing
    return _udp4(a.src4, a.dst4, UDP_SPORT, UDP_DPORT, size)


def l2_frame(tb: TestbedConfig, size: int) -> Packet:
    """Inner Ethernet frame of ``size`` bytes (no FCS) carrying IPv6/UDP.

    Its destination is the tester's rx MAC, so that the frame is accepted
    there once a decapsulating SUT (End.DX2) emits it as is.
    """
    _check_size("l2", size)
    return (Ether(src=tb.tester.tx.mac, dst=tb.tester.rx.mac)
            / udp6(tb, size - ETH_HDR))


def reverse_udp6(tb: TestbedConfig, size: int) -> Packet:
    """The reverse direction's IPv6/UDP packet (dst6 -> the tester's tx address), which a
    SUT forwards back over its in link with no more than its base setup."""
    a = tb.addressing
    return _udp6(a.dst6, a.tester_tx_ip6, UDP_DPORT, UDP_SPORT, size)


def reverse_udp4(tb: TestbedConfig, size: int) -> Packet:
    """The reverse direction's IPv4/UDP packet (dst4 -> the tester's tx address)."""
    a = tb.addressing
    return _udp4(a.dst4, a.tester_tx_ip4, UDP_DPORT, UDP_SPORT, size)


def to_sut_reverse(tb: TestbedConfig, pkt: Packet) -> Packet:
    """``pkt`` in the Ethernet header of the tester's rx port towards the SUT's out port."""
    return Ether(src=tb.tester.rx.mac, dst=tb.sut.out_port.mac) / pkt


def to_sut(tb: TestbedConfig, pkt: Packet) -> Packet:
    """``pkt`` in the Ethernet header of the tester's tx port towards the SUT."""
    return Ether(src=tb.tester.tx.mac, dst=tb.sut.in_port.mac) / pkt


def from_sut(tb: TestbedConfig, pkt: Packet) -> Packet:
    """``pkt`` in the Ethernet header the SUT's out port puts towards the tester."""
    return Ether(src=tb.sut.out_port.mac, dst=tb.tester.rx.mac) / pkt


def srh(segments_in_order: Sequence[str], segleft: int, nh: int) -> Packet:
    """An SRH whose SID list is visited in ``segments_in_order`` (first SID first).

    The SRH stores the list reversed (segments[0] is the last SID); ``segleft``
    indexes that stored list.
    """
    addresses = list(reversed(segments_in_order))
    return IPv6ExtHdrSegmentRouting(nh=nh, addresses=addresses, segleft=segleft,
                                    lastentry=len(addresses) - 1)


def srv6(src: str, segments_in_order: Sequence[str], segleft: int, nh: int,
         hlim: int = HOP_LIMIT) -> Packet:
    """Outer IPv6 header + SRH, destination = the active SID."""
    stored = list(reversed(segments_in_order))
    return IPv6(src=src, dst=stored[segleft], hlim=hlim, nh=NH_ROUTING) / srh(
        segments_in_order, segleft, nh)


def split_segs(text: str) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]`` (a SID list as iproute2 writes it)."""
    return [s.strip() for s in text.split(",") if s.strip()]


def csid_shift(address: str, lblen: int, nflen: int) -> str:
    """The destination after a NEXT-C-SID End: the argument shifted left by ``nflen`` bits.

    The locator block (``lblen`` bits) stays; the bits after the active
    C-SID move up by one C-SID; zeros fill in from the right.
    """
    value = int(ipaddress.IPv6Address(address))
    block_mask = ((1 << lblen) - 1) << (128 - lblen)
    rest_bits = 128 - lblen
    rest = value & ((1 << rest_bits) - 1)
    shifted = (rest << nflen) & ((1 << rest_bits) - 1)
    return str(ipaddress.IPv6Address((value & block_mask) | shifted))




def _last_udp(pkt: Packet) -> UDP:
    udps = [layer for layer in pkt.iterpayloads() if isinstance(layer, UDP)]
    if not udps:
        raise ValueError("the frame carries no UDP packet to put a counter into")
    return udps[-1]


def with_counter_slot(frame: Packet) -> Packet:
    """A copy of ``frame`` whose innermost UDP payload starts with :data:`COUNTER_SLOT`
    (the marker follows, the payload keeps its length; the UDP checksum is recomputed).

    The slot comes first so that it lies in the bytes a caching proxy hashes (the
    first 16 bytes of the payload) even for the smallest packets.
    """
    pkt = frame.copy()
    udp = _last_udp(pkt)
    payload = bytes(udp.payload)
    if len(payload) < COUNTER_LEN:
        raise ValueError(f"UDP payload of {len(payload)} bytes: a counter slot needs "
                         f"{COUNTER_LEN}")
    udp.remove_payload()
    udp.add_payload(Raw((COUNTER_SLOT + payload)[:len(payload)]))
    udp.chksum = None
    return Ether(bytes(pkt)) if isinstance(pkt, Ether) else pkt


def counter_offset(frame: bytes) -> int:
    """Byte offset of the counter slot in ``frame`` (built by :func:`with_counter_slot`).

    Raises ValueError when the innermost UDP payload does not start with the slot.
    """
    udp = _last_udp(Ether(frame))
    offset = len(frame) - len(bytes(udp.payload))
    if offset % 2 or frame[offset:offset + COUNTER_LEN] != COUNTER_SLOT:
        raise ValueError("the frame has no counter slot at the start of its UDP payload")
    return offset


def as_frame(frame: Packet | bytes) -> Packet:
    """A scapy Ether packet from raw bytes (or the packet itself)."""
    return Ether(frame) if isinstance(frame, (bytes, bytearray)) else frame


FLOW_SPORTS = 0x10000 - UDP_SPORT
"""Source ports a test packet may have: UDP_SPORT and the next ones, which flows
(:mod:`srperf.traffic.flows`, ``src_port``) use."""
_DPORT = struct.pack("!H", UDP_DPORT)


def is_test_frame(frame: Packet | bytes) -> bool:
    """True when the frame carries a test packet: its UDP ports spell :data:`SIGNATURE`,
    or (a flow varying the source port) the destination port is :data:`UDP_DPORT`
    after a source port of :data:`UDP_SPORT` or above."""
    raw = bytes(frame)
    if SIGNATURE in raw:
        return True
    at = raw.find(_DPORT, 2)
    while at >= 2:
        if int.from_bytes(raw[at - 2:at], "big") >= UDP_SPORT:
            return True
        at = raw.find(_DPORT, at + 1)
    return False
