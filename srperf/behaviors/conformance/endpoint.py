"""Matrices of the SRv6 endpoint behaviors (RFC 8986 section 4, RFC 9800 NEXT-C-SID).

End, End.X, End.T, End.B6.Encaps process the SRH (RFC 8986 4.1 S01-S16, RFC 8754
4.3.1.1); End.DX2/DX4/DX6/DT4/DT6/DT46 need Segments Left 0 and decapsulate an
upper-layer header they accept (4.4-4.9); anything else goes to 4.1.1 (upper-layer
header not allowed: discarded).  Every case starts from the catalogue's frame: an
inner 64-byte packet behind an outer IPv6 header and a 2-SID SRH.
"""

from __future__ import annotations

from typing import Callable, Sequence

from scapy.layers.inet6 import IPv6

from srperf.traffic import packets as P
from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.build import (CaseList, extra_sids, forward_each,
                                                max_inner, sr_frame)
from srperf.behaviors.conformance.model import Forward, Outcome
from srperf.behaviors.policies import b6_segs
from srperf.behaviors.srv6 import encap_expect
from srperf.config.model import TestbedConfig

NH = {"ipv6": P.NH_IPV6, "ipv4": P.NH_IPV4, "l2": P.NH_ETHERNET}
SRH2 = 8 + 2 * 16
"""Bytes of a 2-SID SRH."""
TLVS = W.tlv(0x7E, b"\x00" * 4) + W.tlv(4, b"")
"""An opaque TLV (type 126, 4 bytes) and a PadN of no data: 8 bytes (RFC 8754 2.1)."""
PAD1S = W.PAD1 * 8
"""Eight Pad1 TLVs (RFC 8754 2.1.1.1)."""


def body(tb: TestbedConfig, family: str, tag: int, l4: str = "udp", size: int = 64,
         hlim: int = P.HOP_LIMIT, **fields: int) -> bytes:
    """The payload behind the SRH: an IPv6/IPv4 packet, or an Ethernet frame carrying an
    IPv6 packet of ``size`` bytes (``l2``)."""
    if family == "l2":
        return W.l2(tb, W.inner(tb, "ipv6", l4, size, tag, hlim, **fields))
    return bytes(W.inner(tb, family, l4, size, tag, hlim, **fields))


def sr_frames(tb: TestbedConfig, family: str = "ipv6"):
    """The frames maker of SRH cases: ``one(path, sl, ...)`` gives a function of a case's
    tag returning the one frame of :func:`build.sr_frame` carrying :func:`body` (inner
    ``fam``, default ``family``; ``l4``, ``size``, ``inner_hlim``); any other keyword
    goes to ``sr_frame``."""
    def one(path: Sequence[str], sl: int, fam: str = family, l4: str = "udp",
            size: int = 64, inner_hlim: int = P.HOP_LIMIT,
            **kw: object) -> Callable[[int], list[bytes]]:
        def frames(tag: int) -> list[bytes]:
            return [sr_frame(tb, path, sl, body(tb, fam, tag, l4, size, inner_hlim),
                             NH[fam], **kw)]  # type: ignore[arg-type]
        return frames
    return one


def frag_bodies(tb: TestbedConfig, family: str, tag: int) -> list[bytes]:
    if family == "l2":
        return [W.l2(tb, f) for f in W.fragments(tb, "ipv6", 600, tag)]
    return W.fragments(tb, family, 600, tag)


# --- End, End.X, End.T, End.B6.Encaps ----------------------------------------------------

def _srh_endpoint(tb: TestbedConfig, name: str, expect: Callable[[bytes], Outcome],
                  grows: int, spec: str) -> CaseList:
    """The cases of a behavior that processes the SRH (SL > 0: advance and forward)."""
    a = tb.addressing
    cl = CaseList(tb, name)
    sut, nxt = a.sid_sut, a.sid_next
    e = extra_sids(tb, 14)
    fwd = expect

    one = sr_frames(tb)

    s_end = "RFC 8986 4.1 S02-S03 and 4.1.1 (upper-layer header not allowed)"
    cl.add("sl_0", "sl", one([nxt, sut], 0), cl.drop("upper_layer"), s_end)
    cl.add("sl_1", "sl", one([e[0], sut, nxt], 1), fwd, f"{spec}; SL 1 of 3")
    cl.add("sl_last_entry", "sl", one([sut, nxt, e[0]], 2), fwd, f"{spec}; SL = Last Entry")
    cl.add("sl_last_entry_plus_1", "sl", one([sut, nxt, e[0]], 2, reduced=True), fwd,
           "RFC 8986 4.1 S09 (SL = Last Entry + 1 is valid: reduced SRH), RFC 8754 4.3.1.1")
    cl.add("sl_beyond", "sl", one([sut, nxt], 2, reduced=True, dst=sut),
           cl.drop("bad_srh"), "RFC 8986 4.1 S09-S10 (SL > Last Entry + 1)")
    cl.add("last_entry_beyond", "sl", one([sut, nxt], 1, last_entry=2), cl.drop("bad_srh"),
           "RFC 8986 4.1 S08-S10 (Last Entry > Hdr Ext Len / 2 - 1)")
    cl.add("segments_1", "segments", one([sut, nxt], 1, reduced=True), fwd,
           f"{spec}; one SID in the Segment List (reduced)")
    cl.add("segments_2", "segments", one([sut, nxt], 1), fwd, spec)
    cl.add("segments_8", "segments", one([sut, nxt, *e[:6]], 7), fwd, spec)
    cl.add("segments_16", "segments", one([sut, nxt, *e[:14]], 15), fwd, spec)
    cl.add("srh_tlv", "srh_tlv", one([sut, nxt], 1, tlvs=TLVS), fwd,
           f"{spec}; RFC 8754 2.1 (TLVs forwarded unchanged)")
    cl.add("srh_pad1", "srh_tlv", one([sut, nxt], 1, tlvs=PAD1S), fwd,
           f"{spec}; RFC 8754 2.1.1.1 (Pad1)")
    cl.add("ext_hop_by_hop", "ext_header", one([sut, nxt], 1, before=W.NH_HBH), fwd,
           f"{spec}; RFC 8200 4.1 (hop-by-hop before the SRH kept)")
    cl.add("ext_dest_opts", "ext_header", one([sut, nxt], 1, before=W.NH_DEST), fwd,
           f"{spec}; RFC 8200 4.1 (destination options before the SRH kept)")
    cl.add("hop_limit_1", "hop_limit", one([sut, nxt], 1, hlim=1), cl.drop("hop_limit"),
           "RFC 8986 4.1 S05-S06")
    cl.add("hop_limit_2", "hop_limit", one([sut, nxt], 1, hlim=2), fwd,
           "RFC 8986 4.1 S12 (hop limit 2 -> 1)")
    for family in ("ipv4", "l2"):
        cl.add(f"inner_{family}", "inner", one([sut, nxt], 1, family), fwd,
               f"{spec}; the payload is not looked at while SL > 0")
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", lambda tag, l4=l4: [
            sr_frame(tb, [sut, nxt], 1, body(tb, "ipv6", tag, l4), P.NH_IPV6)], fwd, spec)
    cl.add("fragments", "fragments", lambda tag: [
        sr_frame(tb, [sut, nxt], 1, f, P.NH_IPV6) for f in frag_bodies(tb, "ipv6", tag)],
        fwd, f"{spec}; each fragment is a packet of its own")
    for size in (512, max_inner(tb, P.IPV6_HDR + SRH2 + grows)):
        cl.add(f"size_{size}", "size", lambda tag, size=size: [
            sr_frame(tb, [sut, nxt], 1, body(tb, "ipv6", tag, size=size), P.NH_IPV6)],
            fwd, spec)
    cl.add("no_srh", "sl", lambda tag: [W.srv6(tb, sut, b"", P.NH_IPV6,
                                               body(tb, "ipv6", tag))],
           cl.drop("upper_layer"), "RFC 8986 4.1.1 (no SRH: upper-layer header IPv6)")
    return cl


def _end(tb: TestbedConfig) -> Callable[[Sequence[bytes]], Outcome]:
    return forward_each(tb, lambda f: W.eth_from_sut(tb, W.end_step(f)),
                        "SL - 1, DA = Segment List[SL], hop limit - 1, rest intact")


def end(tb: TestbedConfig, name: str = "end") -> CaseList:
    return _srh_endpoint(tb, name, _end(tb), 0, "RFC 8986 4.1 S12-S15")


def end_x(tb: TestbedConfig) -> CaseList:
    return _srh_endpoint(tb, "end_x", _end(tb), 0, "RFC 8986 4.2 (End, then to adjacency J)")


def end_t(tb: TestbedConfig) -> CaseList:
    return _srh_endpoint(tb, "end_t", _end(tb), 0, "RFC 8986 4.3 (End, lookup in table T)")


def end_b6_encaps(tb: TestbedConfig) -> CaseList:
    def outcome(frames: Sequence[bytes]) -> Outcome:
        out = []
        for f in frames:
            inner = W.ip_packet(W.end_step(f))   # S12-S14: hop limit, SL, DA
            out.append(encap_expect(tb, b6_segs(tb), IPv6(inner), P.NH_IPV6, False,
                                    "received packet (hop limit - 1, SL - 1)"))
        return Forward(tuple(out))
    return _srh_endpoint(tb, "end_b6_encaps", outcome, P.IPV6_HDR + SRH2,
                         "RFC 8986 4.13 S12-S19")


# --- NEXT-C-SID ------------------------------------------------------------------------

def end_next_csid(tb: TestbedConfig) -> CaseList:
    """End with the NEXT-C-SID flavor (RFC 9800 4.1.2): the DA's argument shifted while it
    holds another C-SID, else the SRH (or the upper-layer header) is processed."""
    a = tb.addressing
    cl = CaseList(tb, "end_next_csid")
    more = a.csid_address(a.csid_sut, a.csid_next)
    last = a.csid_address(a.csid_sut)
    spec = "RFC 9800 4.1.2 (NEXT-C-SID: DA argument shifted, hop limit - 1)"

    def plain(dst: str, family: str = "ipv6", l4: str = "udp", hlim: int = P.HOP_LIMIT,
              before: int | None = None, size: int = 64):
        def frames(tag: int) -> list[bytes]:
            payload = body(tb, family, tag, l4, size)
            headers, nh = b"", NH[family]
            if before is not None:
                headers, nh = W.ext_header(before, nh), before
            return [W.srv6(tb, dst, headers, nh, payload, hlim)]
        return frames

    def shift(f: bytes) -> bytes:
        out = bytearray(f)
        out[W.ETH + 24:W.ETH + 40] = IPv6(dst=P.csid_shift(
            str(IPv6(f[W.ETH:]).dst), a.csid_lblen, a.csid_nflen)).build()[24:40]
        out[W.ETH + 7] -= 1
        return W.eth_from_sut(tb, bytes(out))

    fwd = forward_each(tb, shift, "DA shifted to the next C-SID, hop limit - 1")
    cl.add("csid_next", "sl", plain(more), fwd, spec)
    cl.add("csid_last_no_srh", "sl", plain(last), cl.drop("upper_layer"),
           "RFC 9800 4.1.2 (argument 0, no SRH) and RFC 8986 4.1.1")
    cl.add("csid_last_srh", "sl", lambda tag: [sr_frame(
        tb, [last, a.csid_address(a.csid_next)], 1, body(tb, "ipv6", tag), P.NH_IPV6,
        reduced=True)],
        _end(tb), "RFC 9800 4.1.2 (argument 0: SRH processed as End, RFC 8986 4.1)")
    cl.add("ext_hop_by_hop", "ext_header", plain(more, before=W.NH_HBH), fwd, spec)
    cl.add("hop_limit_1", "hop_limit", plain(more, hlim=1), cl.drop("hop_limit"),
           "RFC 9800 4.1.2, RFC 8986 4.1 S05-S06")
    cl.add("hop_limit_2", "hop_limit", plain(more, hlim=2), fwd, spec)
    cl.add("inner_ipv4", "inner", plain(more, "ipv4"), fwd, f"{spec}; payload not read")
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", plain(more, l4=l4), fwd, spec)
    for size in (512, max_inner(tb, P.IPV6_HDR)):
        cl.add(f"size_{size}", "size", plain(more, size=size), fwd, spec)
    return cl


# --- decapsulation -----------------------------------------------------------------------

def _decap(tb: TestbedConfig, name: str, family: str, accepts: tuple[str, ...],
           spec: str) -> CaseList:
    """End.DX2/DX4/DX6/DT4/DT6/DT46: SL must be 0; an accepted upper-layer header is
    exposed and forwarded (IP: as a router, hop limit/TTL - 1; Ethernet: as it is)."""
    a = tb.addressing
    cl = CaseList(tb, name)
    sut, nxt = a.sid_sut, a.sid_next
    e = extra_sids(tb, 14)

    def expose(f: bytes) -> bytes:
        inner = f[W.walk(f).upper:]
        if inner[0] >> 4 in (4, 6) and W.walk(f).upper_nh != P.NH_ETHERNET:
            return W.with_eth_type(tb, W.decrement_ip(W.ip_packet(inner, 0)))
        return inner
    fwd = forward_each(tb, expose, "outer IPv6 and its extension headers removed, inner "
                       "forwarded (IP: hop limit/TTL - 1; Ethernet: unchanged)")
    reject = cl.drop("upper_layer")
    sl_spec = f"{spec} S02-S03 (Segments Left != 0)"

    one = sr_frames(tb, family)

    base = [nxt, sut]
    cl.add("sl_0", "sl", one(base, 0), fwd, spec)
    cl.add("sl_1", "sl", one([sut, nxt], 1), cl.drop("segments_left"), sl_spec)
    cl.add("sl_last_entry", "sl", one([sut, nxt, e[0]], 2), cl.drop("segments_left"),
           sl_spec)
    cl.add("sl_last_entry_plus_1", "sl", one([sut, nxt], 1, reduced=True),
           cl.drop("segments_left"), sl_spec + "; reduced SRH")
    cl.add("segments_1", "segments", one([sut], 0), fwd, spec)
    cl.add("segments_8", "segments", one([*e[:7], sut], 0), fwd, spec)
    cl.add("segments_16", "segments", one([*e[:14], nxt, sut], 0), fwd, spec)
    cl.add("no_srh", "sl", lambda tag: [W.srv6(tb, sut, b"", NH[family],
                                               body(tb, family, tag))], fwd,
           f"{spec} (no SRH: the upper-layer header is processed at once)")
    cl.add("srh_tlv", "srh_tlv", one(base, 0, tlvs=TLVS), fwd, spec)
    cl.add("srh_pad1", "srh_tlv", one(base, 0, tlvs=PAD1S), fwd, spec)
    cl.add("ext_hop_by_hop", "ext_header", one(base, 0, before=W.NH_HBH), fwd,
           f"{spec} (all extension headers removed)")
    cl.add("ext_dest_opts", "ext_header", one(base, 0, before=W.NH_DEST), fwd,
           f"{spec} (all extension headers removed)")
    cl.add("hop_limit_1", "hop_limit", one(base, 0, hlim=1), fwd,
           f"{spec}: no outer hop-limit step for a packet to this node's SID")
    cl.add("hop_limit_2", "hop_limit", one(base, 0, hlim=2), fwd, spec)
    if family == "l2":
        cl.not_applicable("inner_hop_limit_1", "hop_limit", "an Ethernet frame is not "
                          "routed: no hop limit to expire", spec)
    else:
        cl.add("inner_hop_limit_1", "hop_limit", one(base, 0, inner_hlim=1),
               cl.drop("inner_hop_limit"),
               "RFC 8200 3 / RFC 791: the exposed packet is forwarded, its hop limit/TTL "
               "expires")
        cl.add("inner_hop_limit_2", "hop_limit", one(base, 0, inner_hlim=2), fwd, spec)
    for other in ("ipv6", "ipv4", "l2"):
        if other != family:
            cl.add(f"inner_{other}", "inner", one(base, 0, other),
                   fwd if other in accepts else reject,
                   spec if other in accepts else "RFC 8986 4.1.1 (upper-layer header "
                   f"{NH[other]} not processed by {name})")
    for l4 in ("tcp", "icmp"):
        cl.add(f"l4_{l4}", "l4", one(base, 0, l4=l4), fwd, spec)
    cl.add("fragments", "fragments", lambda tag: [
        sr_frame(tb, base, 0, f, NH[family]) for f in frag_bodies(tb, family, tag)], fwd,
        f"{spec}; each fragment forwarded as it is")
    top = max_inner(tb, P.IPV6_HDR + SRH2) - (P.ETH_HDR if family == "l2" else 0)
    for size in (512, top):
        cl.add(f"size_{size}", "size", one(base, 0, size=size), fwd, spec)
    return cl


def end_dx6(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dx6", "ipv6", ("ipv6",), "RFC 8986 4.4")


def end_dt6(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dt6", "ipv6", ("ipv6",), "RFC 8986 4.6")


def end_dt46(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dt46", "ipv6", ("ipv6", "ipv4"), "RFC 8986 4.8")


def end_dt6_vrf(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dt6_vrf", "ipv6", ("ipv6",), "RFC 8986 4.6")


def end_dt46_v4(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dt46_v4", "ipv4", ("ipv6", "ipv4"), "RFC 8986 4.8")


def end_dx4(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dx4", "ipv4", ("ipv4",), "RFC 8986 4.5")


def end_dt4(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dt4", "ipv4", ("ipv4",), "RFC 8986 4.7")


def end_dx2(tb: TestbedConfig) -> CaseList:
    return _decap(tb, "end_dx2", "l2", ("l2",), "RFC 8986 4.9")


MATRICES = {"end": end, "end_x": end_x, "end_t": end_t, "end_b6_encaps": end_b6_encaps,
            "end_next_csid": end_next_csid, "end_dx6": end_dx6, "end_dt6": end_dt6,
            "end_dt46": end_dt46, "end_dx4": end_dx4, "end_dt4": end_dt4,
            "end_dx2": end_dx2, "end_dt6_vrf": end_dt6_vrf, "end_dt46_v4": end_dt46_v4}
"""Behavior name -> the function that builds its cases."""
