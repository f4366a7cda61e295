"""IP packet lengths of the behaviors' test frames, from header sizes, without scapy.

``srperf validate`` checks every behavior's frames against the link MTU; building them
with scapy costs a third of a second of start-up.  :func:`ip_lengths` gives the same two
figures from what each builder in :mod:`srperf.behaviors.srv6` and
:mod:`srperf.behaviors.proxies` puts in a frame (IPv6 40 bytes, SRH 8 + 16 per SID,
Ethernet 14; the inner packet is ``packet_size`` bytes).  A behavior not listed here, or
a size the builder would refuse, gets None: the caller then builds the real frame, so
errors read as before.  tests/test_frame_lengths.py proves each figure equal to
``len(bytes(frame))`` of the scapy frames, for every behavior and shipped size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from srperf.behaviors.policies import b6_segs, encap_segs, insert_segs
from srperf.config.model import TestbedConfig, vnf_sid
from srperf.traffic.frame_sizes import ETH_HDR, IPV6_HDR

if TYPE_CHECKING:
    from srperf.behaviors.spec import Behavior

SRH_FIXED = 8
SID = 16


def srh_len(sids: int) -> int:
    """Bytes of an SRH holding ``sids`` SIDs (no TLV)."""
    return SRH_FIXED + SID * sids


def _endpoint(size: int) -> int:
    """Outer IPv6 + 2-SID SRH + the ``size``-byte inner packet (or inner frame)."""
    return IPV6_HDR + srh_len(2) + size


def _encaps(segs: int, reduced: bool) -> Callable[[int], int]:
    """A new outer IPv6 + SRH of ``segs`` SIDs (one less when reduced; none for one)."""
    stored = segs - 1 if reduced else segs
    return lambda carried: IPV6_HDR + (srh_len(stored) if stored else 0) + carried


Lengths = Callable[[TestbedConfig, int], "tuple[int, int]"]
"""(testbed, packet_size) -> (IP bytes the tester sends, IP bytes the SUT emits)."""


def _same(sent: Callable[[int], int]) -> Lengths:
    return lambda tb, size: (sent(size), sent(size))


def _headend(inner_l2: bool, reduced: bool) -> Lengths:
    def lengths(tb: TestbedConfig, size: int) -> tuple[int, int]:
        # L2: the received frame (size bytes) is what gets encapsulated
        sent = size - ETH_HDR if inner_l2 else size
        return sent, _encaps(len(encap_segs(tb)), reduced)(size)
    return lengths


def _h_insert(tb: TestbedConfig, size: int) -> tuple[int, int]:
    return size, size + srh_len(1 + len(insert_segs(tb)))


def _b6_encaps(tb: TestbedConfig, size: int) -> tuple[int, int]:
    return _endpoint(size), _encaps(len(b6_segs(tb)), False)(_endpoint(size))


def _decap(inner_l2: bool) -> Lengths:
    # the inner IP packet (size) or, for End.DX2, the inner frame's IP packet
    return lambda tb, size: (_endpoint(size), size - ETH_HDR if inner_l2 else size)


def _next_csid(tb: TestbedConfig, size: int) -> tuple[int, int]:
    a = tb.addressing
    a.csid_address(a.csid_sut, a.csid_next)   # the builder's own address (its errors)
    return IPV6_HDR + size, IPV6_HDR + size


def _proxy(tb: TestbedConfig, size: int) -> tuple[int, int]:
    vnf_sid(tb.addressing, tb.addressing.vnf_target)   # the builder's own SID (its errors)
    return _endpoint(size), _endpoint(size)


def _end_am(tb: TestbedConfig, size: int) -> tuple[int, int]:
    vnf_sid(tb.addressing, tb.addressing.vnf_target)
    # outer IPv6 + 3-SID SRH + the UDP part of a size-byte IPv6/UDP packet
    ip = IPV6_HDR + srh_len(3) + size - IPV6_HDR
    return ip, ip


_PLAIN = _same(lambda size: size)
_ENDPOINT = _same(_endpoint)

LENGTHS: dict[str, Lengths] = {
    "ipv6": _PLAIN, "ipv4": _PLAIN,
    "h_insert": _h_insert,
    "h_encaps": _headend(False, False), "h_encaps_v4": _headend(False, False),
    "h_encaps_l2": _headend(True, False), "h_encaps_red": _headend(False, True),
    "h_encaps_l2_red": _headend(True, True),
    "end": _ENDPOINT, "end_x": _ENDPOINT, "end_t": _ENDPOINT,
    "end_dx2": _decap(True), "end_dx4": _decap(False), "end_dx6": _decap(False),
    "end_dt4": _decap(False), "end_dt6": _decap(False), "end_dt46": _decap(False),
    "end_dt6_vrf": _decap(False), "end_dt46_v4": _decap(False),
    "end_b6_encaps": _b6_encaps,
    "end_next_csid": _next_csid,
    "end_ad": _proxy, "end_ad_v4": _proxy, "end_as": _proxy, "end_cache": _proxy,
    "end_cache_v4": _proxy, "end_baseline": _proxy, "end_am": _end_am,
}
"""Per behavior name: the lengths its builder and its expectation give."""


def fast_path_lengths(name: str) -> Lengths | None:
    """The lengths of fast-path chain ``name`` (:mod:`srperf.behaviors.fastpath`): its
    input frame (the End frame, a transit frame or plain IPv6), grown by each enc."""
    from srperf.behaviors import fastpath

    try:
        steps = fastpath.parse_chain(name)
    except fastpath.ChainError:
        return None
    srv6_in = fastpath.input_kind(steps) in ("endpoint", "transit")
    pushed = sum(IPV6_HDR + srh_len(s.sids) for s in steps if s.program == "enc")

    def lengths(tb: TestbedConfig, size: int) -> tuple[int, int]:
        sent = _endpoint(size) if srv6_in else size
        return sent, sent + pushed
    return lengths


def _shipped_chains() -> dict[str, Lengths]:
    from srperf.behaviors import fastpath

    return {name: lengths for name in fastpath.SHIPPED
            if (lengths := fast_path_lengths(name)) is not None}


LENGTHS.update(_shipped_chains())


def ip_lengths(beh: Behavior, tb: TestbedConfig, size: int) -> tuple[int, int] | None:
    """(IP bytes of the frame the tester sends, largest IP bytes on either link) for
    ``beh`` at ``size``; None when only building the frame can tell (a behavior not
    listed, or a size below the behavior's smallest, which the builder refuses)."""
    lengths = LENGTHS.get(beh.name) or fast_path_lengths(beh.name)
    if lengths is None or size < beh.min_packet_size:
        return None
    sent, emitted = lengths(tb, size)
    # a checker-only behavior (no expectation) puts only the sent frame on a link
    return sent, max(sent, emitted) if beh.expect is not None else sent


__all__ = ["LENGTHS", "ip_lengths", "srh_len"]
