"""Many flows from one test frame: which fields vary, and the frame of every flow.

A *flow* is one value of the varied fields.  Flow i (0 <= i < ``count``) is the
behavior's test frame with ``i`` added to the last 16 bits of every varied
field (the field's value in the frame is flow 0), so ``count`` flows are
``count`` distinct field values and every flow stays inside the /112 (IPv6) or
/16 (IPv4) of the frame's address, in the routes the SUT has for it:

- ``src_port``: the innermost UDP source port;
- ``src_addr`` / ``dst_addr``: the innermost IP header's source / destination
  (the packet the behavior carries: inner for an encapsulated frame; behind an
  SRH, the destination is its final segment, the packet's last destination);
- ``outer_src_addr``: the outermost IPv6 source (a SUT's NIC hashes the outer
  header of an SRv6 frame for RSS: varying it spreads End-type behaviors; in a
  frame with one IP header it is ``src_addr``);
- ``flow_label``: the low 16 bits of the outermost IPv6 flow label;
- ``segment``: the SRH's first segment (its last entry, the SID the packet visited
  first), so that N flows carry N distinct SID lists to the same active SID (the
  egress node of loss monitoring tells flows by SID list); refused when that segment
  is the active one (the packet's destination).

Every flow's checksums are right: each is updated for the varied words (RFC
1624), and the first, second and last flows are checked against scapy's own
computation.
:func:`flow_fields` says where each varied field lies, for a generator that
varies the bytes itself (TRex's field engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from scapy.layers.l2 import Ether
    from scapy.packet import Packet


VARY_FIELDS = ("src_port", "src_addr", "dst_addr", "outer_src_addr", "flow_label", "segment")
"""Fields a flow may vary (see the module docstring)."""
MAX_FLOWS = 65536
"""Most flows (the varied part of a field is 16 bits)."""
DEFAULT_VARY = ("src_port", "src_addr", "dst_addr")


@dataclass(frozen=True)
class Flows:
    """``traffic.flows`` of an experiment: how many flows, which fields make them."""

    count: int = 1
    """Number of flows (1: every packet the same flow)."""
    vary: tuple[str, ...] = DEFAULT_VARY
    """Fields that differ from flow to flow (:data:`VARY_FIELDS`)."""

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_FLOWS:
            raise ValueError(f"flows.count = {self.count}: must be 1..{MAX_FLOWS}")
        if not self.vary or any(v not in VARY_FIELDS for v in self.vary):
            raise ValueError(f"flows.vary = {list(self.vary)}: must be a non-empty list of "
                             f"{', '.join(VARY_FIELDS)}")
        if len(set(self.vary)) != len(self.vary):
            raise ValueError(f"flows.vary = {list(self.vary)}: a field is named twice")

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "vary": list(self.vary)}


@dataclass(frozen=True)
class FlowField:
    """Where one varied field's last 16 bits lie in the frame."""

    name: str
    """The field (:data:`VARY_FIELDS`)."""
    offset: int
    """Byte offset of the 16 varied bits in the frame."""
    base: int
    """Their value in the frame (flow 0)."""
    checksums: tuple[int, ...] = ()
    """Byte offsets of the checksums that cover the field (UDP, IPv4 header)."""


@dataclass(frozen=True)
class UdpPlace:
    """Where the innermost UDP header and the IP header of its checksum lie."""

    l3_offset: int
    """Byte offset of the IP header of the UDP checksum's pseudo-header."""
    l4_offset: int
    """Byte offset of the UDP header."""
    ipv4: bool
    """True when that IP header is IPv4."""


def _layers(pkt: Packet) -> list[Packet]:
    return list(pkt.iterpayloads())


def _offset(frame: bytes, layer: Packet) -> int:
    return len(frame) - len(bytes(layer))


def udp_place(frame: bytes) -> UdpPlace | None:
    """The innermost UDP of ``frame`` and its pseudo-header's IP header (None: no UDP)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    pkt = Ether(frame)
    udps = [x for x in _layers(pkt) if isinstance(x, UDP)]
    if not udps:
        return None
    owner = udps[-1].underlayer
    while owner is not None and not isinstance(owner, (IP, IPv6)):
        owner = owner.underlayer          # past IPv6 extension headers (SRH)
    if owner is None:
        return None
    return UdpPlace(_offset(frame, owner), _offset(frame, udps[-1]), isinstance(owner, IP))


def _srh_between(layers: list[Packet], frame: bytes, l3: int,
                 place: UdpPlace | None) -> int | None:
    """Offset of an SRH between the IP header at ``l3`` and its UDP (None: none)."""
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    if place is None:
        return None
    for x in layers:
        if isinstance(x, IPv6ExtHdrSegmentRouting) and l3 < _offset(frame, x) < place.l4_offset:
            return _offset(frame, x)
    return None


def _first_segment(layers: list[Packet], frame: bytes) -> int:
    """Offset of the last 16 bits of the outermost SRH's last entry (the first segment
    of the path); ValueError when the frame has no SRH or that segment is active."""
    from scapy.layers.inet6 import IPv6ExtHdrSegmentRouting

    srh = next((x for x in layers if isinstance(x, IPv6ExtHdrSegmentRouting)), None)
    if srh is None:
        raise ValueError("flows.vary segment: the frame has no SRH")
    if srh.segleft >= srh.lastentry:
        raise ValueError("flows.vary segment: the SRH's first segment is the active one "
                         "(Segments Left = Last Entry); it would change the destination")
    return _offset(frame, srh) + 8 + 16 * srh.lastentry + 14


def flow_fields(frame: bytes, flows: Flows) -> list[FlowField]:
    """The varied fields of ``frame`` (ValueError naming a field the frame lacks, or a
    range of flows that would leave the field's 16 bits)."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    pkt = Ether(frame)
    layers = _layers(pkt)
    place = udp_place(frame)
    ips = [x for x in layers if isinstance(x, (IP, IPv6))]
    udp_ck = (place.l4_offset + 6,) if place is not None else ()
    out: list[FlowField] = []
    for name in flows.vary:
        checksums: tuple[int, ...] = ()
        if name == "src_port":
            if place is None:
                raise ValueError("flows.vary src_port: the frame carries no UDP packet")
            off, checksums = place.l4_offset, udp_ck
        elif name in ("src_addr", "dst_addr"):
            if not ips:
                raise ValueError(f"flows.vary {name}: the frame carries no IP packet")
            l3 = place.l3_offset if place is not None else _offset(frame, ips[-1])
            v4 = frame[l3] >> 4 == 4
            width = 4 if v4 else 16
            start = (12 if v4 else 8) + (width if name == "dst_addr" else 0)
            off = l3 + start + width - 2
            srh = _srh_between(layers, frame, l3, place)
            if name == "dst_addr" and srh is not None:
                off = srh + 8 + 14        # the final segment: the packet's destination
            checksums = (udp_ck if place is not None else ()) + ((l3 + 10,) if v4 else ())
        elif name == "segment":
            off = _first_segment(layers, frame)
        else:
            outer = next((x for x in layers if isinstance(x, IPv6)), None)
            if outer is None:
                raise ValueError(f"flows.vary {name}: the frame has no IPv6 header")
            l3 = _offset(frame, outer)
            if name == "outer_src_addr":
                off = l3 + 8 + 14
                if place is not None and place.l3_offset == l3:
                    checksums = udp_ck
            else:
                off = l3 + 2
        if any(f.offset == off for f in out):
            continue                      # the same bits (a frame with one IPv6 header)
        base = int.from_bytes(frame[off:off + 2], "big")
        if base + flows.count - 1 > 0xFFFF:
            raise ValueError(f"flows.count = {flows.count}: {name} starts at {base} in its "
                             f"last 16 bits, so at most {0x10000 - base} flows fit")
        out.append(FlowField(name, off, base, checksums))
    return out


def _csum_update(check: int, old: int, new: int) -> int:
    """A ones'-complement checksum after one 16-bit word went from ``old`` to ``new``
    (RFC 1624, eqn. 3)."""
    total = (~check & 0xFFFF) + (~old & 0xFFFF) + new
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def flow_frames(frame: bytes, flows: Flows) -> list[bytes]:
    """The frame of every flow (flow 0 is ``frame``), each checksum updated for the
    varied words; the first, second and last flows are checked against scapy's own
    computation (ValueError when they differ)."""
    fields = flow_fields(frame, flows)
    place = udp_place(frame)
    frames = []
    for i in range(flows.count):
        raw = bytearray(frame)
        for f in fields:
            new = f.base + i
            raw[f.offset:f.offset + 2] = new.to_bytes(2, "big")
            for ck in f.checksums:
                old_ck = int.from_bytes(raw[ck:ck + 2], "big")
                if old_ck == 0 and place is not None and ck == place.l4_offset + 6:
                    continue              # IPv4 UDP without a checksum: stays without
                value = _csum_update(old_ck, f.base, new)
                if value == 0 and place is not None and ck == place.l4_offset + 6:
                    value = 0xFFFF        # a UDP checksum of 0 means "none" (RFC 768)
                raw[ck:ck + 2] = value.to_bytes(2, "big")
        frames.append(bytes(raw))
    for i in sorted({0, min(1, flows.count - 1), flows.count - 1}):
        if _fixed(frames[i]) != frames[i]:
            raise ValueError(f"flow {i}: its checksums are not those scapy computes for it "
                             f"(fields {[f.name for f in fields]})")
    return frames


def _fixed(raw: bytes) -> bytes:
    """``raw`` with every IPv4 header and UDP checksum recomputed by scapy."""
    from scapy.layers.inet import IP, UDP
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    pkt = Ether(raw)
    for layer in _layers(pkt):
        if isinstance(layer, (IP, UDP)):
            layer.chksum = None
    return bytes(pkt)


__all__ = ["Flows", "FlowField", "UdpPlace", "VARY_FIELDS", "MAX_FLOWS", "flow_fields",
           "flow_frames", "udp_place"]
