"""A forwarder's documented deviations from the catalogue's expected frames.

The catalogue's checks (:mod:`srperf.behaviors`) expect the frames Linux (and,
for the proxies, srperf's eBPF dataplane) emit.  Another forwarder may read a
specification differently and still conform to it: VPP, for one, decrements
the inner hop limit when it encapsulates (RFC 8986 section 5.1 and RFC 2473
section 3.1 say so), where Linux leaves it alone.  A forwarder declares each
such difference as a :class:`Deviation`: the one field that differs and by how
much (or the header it leaves out), the text that allows it, and whether srperf
accepts it (``conformant``) or keeps it as a failure (a bug).

:func:`srperf.measure.verify.verify_behavior` checks the frames as they arrived first.
Only when that fails does it undo the forwarder's declared deviations of that
behavior on the received frames (:func:`undo_all`) and check again: every other
byte is still compared, so a frame that differs in any other way still fails.
An accepted deviation that explains the difference lets the behavior verify and
the verified text names it; a bug that explains it keeps the failure and adds
its reason to the message.  The run's environment lists the declared ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from srperf.measure.checks import layers

if TYPE_CHECKING:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from scapy.layers.l2 import Ether
    from scapy.packet import Packet

NH_ROUTING = 43


@dataclass(frozen=True)
class Deviation:
    """One field (or header) a forwarder emits differently from the catalogue, declared."""

    behavior: str
    """Catalogue key of the behavior, e.g. ``h_encaps``."""
    summary: str
    """What differs, in words (``inner hop limit/TTL 1 lower``)."""
    reference: str
    """The specification text that allows it (conformant) or that it breaks (a bug)."""
    conformant: bool
    """True: srperf accepts it; False: a bug, verification keeps failing and names it."""
    hop_header: int | None = None
    """IP header whose hop limit (IPv4: TTL) differs, outermost first (0 the outer
    header, 1 the packet it encapsulates; -1 the innermost)."""
    hop_delta: int = 0
    """Received minus catalogue-expected value of that hop limit (e.g. -1)."""
    srh_omitted: bool = False
    """The outer IPv6 header carries no SRH where the catalogue expects the sent one
    (Segments Left - 1)."""

    def __post_init__(self) -> None:
        if (self.hop_header is None) == (not self.srh_omitted):
            raise ValueError(f"deviation of {self.behavior}: give exactly one of hop_header "
                             "or srh_omitted")
        if self.hop_header is not None and self.hop_delta == 0:
            raise ValueError(f"deviation of {self.behavior}: hop_delta must not be 0")

    def describe(self) -> str:
        """``summary (reference; accepted)``."""
        verdict = "accepted" if self.conformant else "not accepted: a bug"
        return f"{self.summary} ({self.reference}; {verdict})"

    def undo(self, sent: Packet, frame: bytes) -> bytes | None:
        """``frame`` with this deviation undone, or None when it does not apply to ``frame``."""
        if self.srh_omitted:
            return _insert_sent_srh(sent, frame)
        assert self.hop_header is not None
        return _shift_hop_limit(frame, self.hop_header, -self.hop_delta)


def _ip_headers(pkt: Packet) -> list[Packet]:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    return [layer for layer in layers(pkt) if type(layer) in (IPv6, IP)]


def _ipv4_checksum_ok(ip: Packet) -> bool:
    from scapy.layers.inet import IP

    fresh = ip.copy()
    fresh.remove_payload()
    fresh.chksum = None
    fresh.len = ip.len
    return IP(bytes(fresh)).chksum == ip.chksum


def _shift_hop_limit(frame: bytes, index: int, by: int) -> bytes | None:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    pkt = Ether(frame)
    headers = _ip_headers(pkt)
    if not -len(headers) <= index < len(headers):
        return None
    ip = headers[index]
    name = "hlim" if isinstance(ip, IPv6) else "ttl"
    value = int(ip.getfieldval(name)) + by
    if not 0 <= value <= 255:
        return None
    if isinstance(ip, IP):
        if not _ipv4_checksum_ok(ip):
            return None   # a wrong checksum is never explained away
        ip.chksum = None
    ip.setfieldval(name, value)
    out = bytes(pkt)
    return out if len(out) == len(frame) else None


def _insert_sent_srh(sent: Packet, frame: bytes) -> bytes | None:
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
    from srperf.traffic.packets import Ether   # scapy's, with srperf's layer bindings

    if IPv6ExtHdrSegmentRouting not in sent:
        return None
    pkt = Ether(frame)
    if IPv6 not in pkt or IPv6ExtHdrSegmentRouting in pkt[IPv6] \
            or pkt[IPv6].nh == NH_ROUTING:
        return None
    outer = pkt[IPv6]
    srh = sent[IPv6ExtHdrSegmentRouting].copy()
    srh.remove_payload()
    if srh.segleft < 1:
        return None
    srh.segleft -= 1
    srh.nh = outer.nh
    payload = outer.payload.copy()
    outer.remove_payload()
    outer.nh = NH_ROUTING
    outer.plen = None
    outer.add_payload(srh / payload)
    return bytes(pkt)


def undo_all(deviations: Sequence[Deviation], sent: Packet,
             frames: Sequence[bytes]) -> tuple[list[bytes], list[Deviation]]:
    """``frames`` with every deviation that applies to each undone (in declaration
    order), and the deviations that applied to at least one frame."""
    out: list[bytes] = []
    applied: list[Deviation] = []
    for frame in frames:
        for dev in deviations:
            undone = dev.undo(sent, frame)
            if undone is not None:
                frame = undone
                if dev not in applied:
                    applied.append(dev)
        out.append(frame)
    return out, [d for d in deviations if d in applied]


__all__ = ["Deviation", "undo_all"]
