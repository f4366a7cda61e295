"""Packets of the conformance matrix, on the wire: builders and byte-level transformations.

Every case frame carries a *tag* (2 bytes :data:`TAG_PREFIX` + the case's
2-byte number) repeated through its payload, so that the frames of many cases
can be sent in one capture and each received frame told to its case even after
encapsulation, decapsulation or fragmentation.  L4 headers carry the test
ports (:data:`srperf.traffic.packets.SIGNATURE`) as every srperf test packet does.

Expected frames are derived from the sent bytes: :func:`walk` finds the SRH
and the upper-layer header behind any extension headers, and the helpers
below apply one step of a specification (SL - 1 and DA = Segment List[SL],
hop limit - 1, removing the outer headers, ...) to the bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

from scapy.layers.inet import ICMP, IP, TCP, UDP, fragment
from scapy.layers.inet6 import (ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt,
                                IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, fragment6)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from srperf.traffic import packets as P
from srperf.config.model import TestbedConfig

TAG_PREFIX = b"\xc5\x17"
"""First bytes of every tag (a pattern no header of the testbed's frames holds)."""
ETH = P.ETH_HDR
IP6 = P.IPV6_HDR
NH_HBH, NH_DEST, NH_FRAG, NH_TCP, NH_UDP, NH_ICMP6, NH_ICMP4 = 0, 60, 44, 6, 17, 58, 1
EXT_HEADERS = (NH_HBH, NH_DEST, P.NH_ROUTING)
"""Extension headers :func:`walk` steps over (a fragment header ends the walk)."""
L4_HDR = {"udp": 8, "tcp": 20, "icmp": 8}
MIN_PAYLOAD = 4


def tag_bytes(tag: int) -> bytes:
    """The 4 bytes that mark the frames of case number ``tag``."""
    return TAG_PREFIX + struct.pack("!H", tag)


def payload(size: int, tag: int) -> bytes:
    """``size`` bytes: (tag, marker) blocks of 16 bytes, repeated and cut to size."""
    block = tag_bytes(tag) + P.MARKER
    return (block * (size // len(block) + 1))[:size]


def tag_of(frame: bytes) -> int | None:
    """The case number a frame carries (None: not a case frame)."""
    at = frame.find(TAG_PREFIX)
    while at >= 0 and at + 4 <= len(frame):
        # a tag is followed by the marker (or by the end of the frame)
        rest = frame[at + 4:at + 4 + len(P.MARKER)]
        if P.MARKER.startswith(rest):
            return struct.unpack("!H", frame[at + 2:at + 4])[0]
        at = frame.find(TAG_PREFIX, at + 1)
    return None


def min_size(family: str, l4: str) -> int:
    """Smallest inner packet (bytes) of ``family`` (ipv6|ipv4) and ``l4`` with a tag."""
    return (IP6 if family == "ipv6" else P.IPV4_HDR) + L4_HDR[l4] + MIN_PAYLOAD


def inner(tb: TestbedConfig, family: str, l4: str, size: int, tag: int,
          hlim: int = P.HOP_LIMIT, **l4_fields: int) -> Packet:
    """An IPv6/IPv4 packet of exactly ``size`` bytes (src6/4 -> dst6/4) with ``l4``
    (udp | tcp | icmp: an echo request) and a tagged payload."""
    low = min_size(family, l4)
    if size < low:
        raise ValueError(f"inner {family}/{l4} packet of {size} bytes: needs >= {low}")
    a = tb.addressing
    data = Raw(payload(size - low + MIN_PAYLOAD, tag))
    if l4 == "udp":
        upper: Packet = UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT)
    elif l4 == "tcp":
        upper = TCP(sport=P.UDP_SPORT, dport=l4_fields.pop("dport", P.UDP_DPORT),
                    flags=l4_fields.pop("flags", 0x18),
                    seq=l4_fields.pop("seq", 1000), ack=l4_fields.pop("ack", 2000),
                    **l4_fields)
    elif family == "ipv6":
        upper = ICMPv6EchoRequest(id=P.UDP_SPORT, seq=P.UDP_DPORT)
    else:
        upper = ICMP(type=8, id=P.UDP_SPORT, seq=P.UDP_DPORT)
    if family == "ipv6":
        return IPv6(src=a.src6, dst=a.dst6, hlim=hlim) / upper / data
    return IP(src=a.src4, dst=a.dst4, ttl=hlim) / upper / data


def fragments(tb: TestbedConfig, family: str, size: int, tag: int,
              hlim: int = P.HOP_LIMIT) -> list[bytes]:
    """A UDP packet of ``size`` bytes (before fragmentation) as 2-3 fragments."""
    pkt = inner(tb, family, "udp", size, tag, hlim)
    if family == "ipv4":
        pkt[IP].flags = 0
        return [bytes(f) for f in fragment(pkt, fragsize=(size // 3) & ~7)]
    frag_pkt = IPv6(bytes(pkt[IPv6])[:IP6]) / IPv6ExtHdrFragment(id=0x5352) / pkt[UDP]
    frag_pkt[IPv6].plen = None
    frag_pkt[IPv6].nh = NH_FRAG
    return [bytes(f) for f in fragment6(frag_pkt, size // 2)]


def l2(tb: TestbedConfig, ip_packet: Packet | bytes, dst_mac: str | None = None,
       src_mac: str | None = None) -> bytes:
    """An Ethernet frame carrying ``ip_packet`` (default: tester tx -> tester rx MAC)."""
    raw = bytes(ip_packet)
    ethertype = 0x86DD if raw[0] >> 4 == 6 else 0x0800
    return (Ether(src=src_mac or tb.tester.tx.mac, dst=dst_mac or tb.tester.rx.mac,
                  type=ethertype) / Raw(raw)).build()


# --- the SRH ------------------------------------------------------------------------

def srh(stored: Sequence[str], sl: int, nh: int, tlvs: bytes = b"",
        last_entry: int | None = None) -> bytes:
    """An SRH whose Segment List is ``stored`` (Segment List[0] first, i.e. the last SID
    of the path first), with ``tlvs`` after it (their length must make the header a
    multiple of 8 bytes)."""
    import ipaddress

    body = b"".join(ipaddress.IPv6Address(s).packed for s in stored) + tlvs
    if (8 + len(body)) % 8:
        raise ValueError(f"SRH of {8 + len(body)} bytes is not a multiple of 8")
    le = len(stored) - 1 if last_entry is None else last_entry
    return struct.pack("!BBBBBBH", nh, (8 + len(body)) // 8 - 1, 4, sl, le, 0, 0) + body


def tlv(kind: int, data: bytes) -> bytes:
    """One SRH TLV (RFC 8754 2.1): type, length, value."""
    return struct.pack("!BB", kind, len(data)) + data


PAD1 = b"\x00"
"""The Pad1 TLV (RFC 8754 2.1.1.1): one byte, no length."""


def ext_header(nh_kind: int, next_header: int) -> bytes:
    """An 8-byte hop-by-hop or destination options header holding only padding."""
    cls = IPv6ExtHdrHopByHop if nh_kind == NH_HBH else IPv6ExtHdrDestOpt
    return bytes(cls(nh=next_header))


def srv6(tb: TestbedConfig, dst: str, headers: bytes, first_nh: int, body: bytes,
         hlim: int = P.HOP_LIMIT, src: str | None = None) -> bytes:
    """Ether(tester tx -> SUT in) / IPv6(src, dst, ``first_nh``) / ``headers`` / ``body``."""
    ip = IPv6(src=src or tb.addressing.tester_tx_ip6, dst=dst, hlim=hlim, nh=first_nh,
              plen=len(headers) + len(body))
    return bytes(P.to_sut(tb, ip / Raw(headers + body)))


# --- reading and transforming bytes ---------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where the parts of an IPv6 frame are (byte offsets from the frame's start)."""

    srh: int | None
    """The SRH (None: none)."""
    upper: int
    """The header after the last extension header :func:`walk` steps over."""
    upper_nh: int
    """Its type (next header value)."""


def walk(frame: bytes) -> Layout:
    """Step over the extension headers of the IPv6 packet behind Ethernet."""
    nh, off, srh_at = frame[ETH + 6], ETH + IP6, None
    while nh in EXT_HEADERS and off + 2 <= len(frame):
        if nh == P.NH_ROUTING and frame[off + 2] == 4:
            srh_at = off
        nh, off = frame[off], off + (frame[off + 1] + 1) * 8
    return Layout(srh_at, off, nh)


def eth_from_sut(tb: TestbedConfig, frame: bytes) -> bytes:
    """``frame`` with the Ethernet addresses the SUT's out port puts towards the tester."""
    return bytes(P.from_sut(tb, Raw(b"")))[:12] + frame[12:]


def with_eth_type(tb: TestbedConfig, packet: bytes) -> bytes:
    """An IP packet in the Ethernet header from the SUT's out port."""
    return bytes(P.from_sut(tb, Raw(b"")))[:12] + (
        b"\x86\xdd" if packet[0] >> 4 == 6 else b"\x08\x00") + packet


def end_step(frame: bytes, hops: int = 1) -> bytes:
    """RFC 8986 4.1 S12-S14: hop limit - ``hops``, SL - 1, DA = Segment List[SL]."""
    out = bytearray(frame)
    at = walk(frame).srh
    if at is None:
        raise ValueError("no SRH to advance")
    sl = out[at + 3] - 1
    out[at + 3] = sl
    out[ETH + 24:ETH + 40] = out[at + 8 + 16 * sl:at + 24 + 16 * sl]
    out[ETH + 7] -= hops
    return bytes(out)


def decrement_ip(packet: bytes, by: int = 1) -> bytes:
    """An IPv6 (hop limit) or IPv4 (TTL, header checksum updated) packet, ``by`` fewer."""
    if packet[0] >> 4 == 6:
        out = bytearray(packet)
        out[7] -= by
        return bytes(out)
    ip = IP(packet)
    ip.ttl -= by
    ip.chksum = None
    return bytes(ip)


def ip_packet(frame: bytes, offset: int = ETH) -> bytes:
    """The IP packet at ``offset`` of ``frame``, cut to its own length (no padding)."""
    first = frame[offset]
    if first >> 4 == 6:
        plen = struct.unpack("!H", frame[offset + 4:offset + 6])[0]
        return frame[offset:offset + IP6 + plen]
    total = struct.unpack("!H", frame[offset + 2:offset + 4])[0]
    return frame[offset:offset + total]


__all__ = ["TAG_PREFIX", "tag_bytes", "payload", "tag_of", "min_size", "inner", "fragments",
           "l2", "srh", "tlv", "PAD1", "ext_header", "srv6", "Layout", "walk", "eth_from_sut",
           "with_eth_type", "end_step", "decrement_ip", "ip_packet", "NH_HBH", "NH_DEST",
           "NH_FRAG"]
