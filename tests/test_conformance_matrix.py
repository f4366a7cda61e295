"""The conformance matrix itself (no namespace): every case well formed, hand-checked
expectations for a few cases, and the verdict logic (pass / fail with the first
differing field / drop counters / findings)."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import (ICMPv6TimeExceeded, IPerror6, IPv6, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrSegmentRouting)
from scapy.layers.l2 import Ether

from srperf.behaviors import catalogue
from srperf.measure import conform
from srperf.traffic import packets as P
from srperf.behaviors.conformance import matrix as C
from srperf.behaviors.conformance import wire as W
from srperf.behaviors.proxies import target_sid
from srperf.config.model import TestbedConfig

TB = TestbedConfig(name="m", prefix="m")
A = TB.addressing
MAX_FRAME = A.link_mtu + P.ETH_HDR


def case(behavior: str, name: str) -> C.Case:
    return next(c for c in C.cases(behavior, TB) if c.name == name)


def expected(c: C.Case, i: int = 0) -> Ether:
    assert isinstance(c.outcome, C.Forward)
    return Ether(bytes(c.outcome.frames[i].frame))


# --- well formed ------------------------------------------------------------------------

def test_every_catalogue_behavior_has_a_matrix_or_a_reason() -> None:
    for name in catalogue.names():
        assert C.has_matrix(name) or name in C.NO_MATRIX, name
    assert set(C.MATRICES) <= set(catalogue.names())


@pytest.mark.parametrize("name", sorted(C.MATRICES))
def test_cases_are_well_formed(name: str) -> None:
    cases = C.cases(name, TB)
    assert len({c.name for c in cases}) == len(cases), "case names repeat"
    assert len({c.tag for c in cases}) == len(cases), "tags repeat"
    for c in cases:
        assert c.behavior == name and c.spec and c.dimension
        if isinstance(c.outcome, C.NotApplicable):
            assert not c.frames and c.outcome.reason
            continue
        assert c.frames, c.key
        for frame in c.frames:
            assert len(frame) <= MAX_FRAME, (c.key, len(frame))
            assert W.tag_of(frame) == c.tag, c.key
            Ether(frame)   # decodes
        if isinstance(c.outcome, C.Forward):
            assert len(c.outcome.frames) == len(c.frames), c.key
            assert 1 <= c.outcome.required <= len(c.outcome.frames)
            for exp in c.outcome.frames:
                raw = bytes(exp.frame)
                assert len(raw) <= MAX_FRAME, (c.key, len(raw))
                assert W.tag_of(raw) == c.tag, c.key   # the tag survives the transformation
                assert raw[:6] == Ether(dst=A.tester_rx_mac).build()[:6], c.key


@pytest.mark.parametrize("name", ["end", "end_dx6", "end_ad", "end_cache"])
def test_the_dimensions_the_issue_names_are_covered(name: str) -> None:
    names = {c.name for c in C.cases(name, TB)}
    for needed in ("sl_0", "sl_1", "sl_last_entry", "sl_last_entry_plus_1", "segments_1",
                   "segments_8", "segments_16", "srh_tlv", "srh_pad1", "ext_hop_by_hop",
                   "ext_dest_opts", "hop_limit_1", "hop_limit_2", "l4_tcp", "l4_icmp",
                   "fragments", "size_512"):
        assert needed in names, (name, needed)
    assert any(n.startswith("size_1") for n in names)
    assert {"inner_ipv4", "inner_l2"} & names or {"inner_ipv6"} & names


def test_largest_frames_fill_the_link_mtu() -> None:
    for name in ("end", "end_dx6", "h_encaps", "end_ad", "ipv6"):
        sizes = [c for c in C.cases(name, TB) if c.name.startswith("size_1")]
        assert sizes, name
        c = sizes[0]
        out = bytes(c.outcome.frames[0].frame)   # type: ignore[union-attr]
        assert max(len(c.frames[0]), len(out)) == MAX_FRAME, name


# --- hand-checked expectations -----------------------------------------------------------

def test_end_on_a_reduced_srh() -> None:
    c = case("end", "sl_last_entry_plus_1")
    sent = Ether(c.frames[0])
    srh = sent[IPv6ExtHdrSegmentRouting]
    assert (srh.segleft, srh.lastentry) == (2, 1) and sent[IPv6].dst == A.sid_sut
    out = expected(c)
    assert out[IPv6ExtHdrSegmentRouting].segleft == 1
    assert out[IPv6].dst == A.sid_next and out[IPv6].hlim == P.HOP_LIMIT - 1
    assert out[IPv6ExtHdrSegmentRouting].addresses == srh.addresses
    assert (out.src, out.dst) == (A.sut_out_mac, A.tester_rx_mac)


def test_end_drops_and_their_reasons() -> None:
    assert case("end", "hop_limit_1").outcome == C.Drop("hop_limit")
    assert case("end", "sl_0").outcome == C.Drop("upper_layer")
    assert case("end", "sl_beyond").outcome == C.Drop("bad_srh")
    assert case("end_dx6", "sl_1").outcome == C.Drop("segments_left")
    assert case("end_dx6", "inner_ipv4").outcome == C.Drop("upper_layer")
    assert isinstance(case("end_dt46", "inner_ipv4").outcome, C.Forward)


def test_end_dx6_forwards_the_inner_packet_as_a_router() -> None:
    c = case("end_dx6", "ext_hop_by_hop")
    assert Ether(c.frames[0]).haslayer(IPv6ExtHdrHopByHop)
    out = expected(c)
    assert not out.haslayer(IPv6ExtHdrSegmentRouting) and not out.haslayer(IPv6ExtHdrHopByHop)
    assert out[IPv6].src == A.src6 and out[IPv6].dst == A.dst6
    assert out[IPv6].hlim == P.HOP_LIMIT - 1 and out[UDP].dport == P.UDP_DPORT


def test_h_encaps_decrements_the_inner_hop_limit() -> None:
    out = expected(case("h_encaps", "hop_limit_2"))
    assert out[IPv6].src == A.tunsrc and out[IPv6].dst == A.sid_next
    assert out[IPv6ExtHdrSegmentRouting].addresses == [A.sid_last, A.sid_next]
    assert out[IPv6][1].hlim == 1            # RFC 8986 5.1 S05
    v4 = expected(case("h_encaps_v4", "plain"))
    assert v4[IP].ttl == P.HOP_LIMIT - 1
    again = IP(bytes(v4[IP]))
    again.chksum = None
    assert IP(bytes(again)).chksum == v4[IP].chksum    # header checksum updated


def test_h_insert_puts_the_srh_after_hop_by_hop() -> None:
    out = expected(case("h_insert", "ext_hop_by_hop"))
    assert isinstance(out[IPv6].payload, IPv6ExtHdrHopByHop)
    assert isinstance(out[IPv6ExtHdrHopByHop].payload, IPv6ExtHdrSegmentRouting)
    assert out[IPv6ExtHdrSegmentRouting].addresses[0] == A.dst6


def test_proxy_expectation_inner_minus_two_outer_minus_one() -> None:
    out = expected(case("end_ad", "segments_2"))
    assert out[IPv6].hlim == P.HOP_LIMIT - 1 and out[IPv6].dst == A.sid_next
    assert out[IPv6ExtHdrSegmentRouting].segleft == 0
    assert out[IPv6ExtHdrSegmentRouting].addresses == [A.sid_next, target_sid(TB)]
    assert out[IPv6][1].hlim == P.HOP_LIMIT - 2     # the VNF and the proxy
    v4 = expected(case("end_ad_v4", "segments_2"))
    assert v4[IP].ttl == P.HOP_LIMIT - 2
    assert case("end_ad", "inner_hop_limit_2").outcome == C.Drop("inner_hop_limit")
    assert case("end_ad", "inner_l2").outcome == C.Drop("upper_layer")


def test_end_as_returns_the_configured_header_whatever_arrived() -> None:
    out = expected(case("end_as", "segments_16"))
    assert out[IPv6].src == A.tester_tx_ip6
    assert out[IPv6ExtHdrSegmentRouting].addresses == [A.sid_next, target_sid(TB)]


def test_caching_proxy_burst_cases() -> None:
    c = case("end_cache", "same_inner_two_srhs")
    assert c.burst and len(c.frames) == 8 and c.outcome.required == 1  # type: ignore
    inners = {bytes(Ether(f)[IPv6ExtHdrSegmentRouting].payload) for f in c.frames}
    assert len(inners) == 1, "identical inner packets"
    assert len({bytes(Ether(f)[IPv6ExtHdrSegmentRouting]) for f in c.frames}) == 2
    assert isinstance(case("end_ad", "same_inner_two_srhs").outcome, C.NotApplicable)


# --- verdicts ---------------------------------------------------------------------------

def test_forward_pass_and_first_differing_field() -> None:
    c = case("end", "segments_2")
    good = bytes(c.outcome.frames[0].frame)   # type: ignore[union-attr]
    assert conform.evaluate(c, [good]) == (True, "1 frame as specified")
    bad = bytearray(good)
    bad[W.ETH + 7] += 1                        # hop limit not decremented
    ok, detail = conform.evaluate(c, [bytes(bad)])
    assert not ok and detail.startswith("IPv6[1].hlim: expected 63, got 64")
    ok, detail = conform.evaluate(c, [])
    assert not ok and detail.startswith("dropped; expected forwarded")


def test_at_least_and_no_frame_used_twice() -> None:
    c = case("end_cache", "same_inner_two_srhs")
    exps = [bytes(e.frame) for e in c.outcome.frames]   # type: ignore[union-attr]
    a, b = exps[0], exps[1]
    assert a != b
    assert conform.evaluate(c, [a, b, a])[0]            # some dropped: allowed
    ok, detail = conform.evaluate(c, [a] * 5)           # 5 frames with SRH A: one took
    assert not ok, detail                               # another packet's header


def test_drop_and_its_counter() -> None:
    c = case("end_ad", "hop_limit_1")
    names = {"hop_limit": ("in_hop_limit",)}
    assert conform.evaluate(c, [], {"in_hop_limit": 1}, names)[0]
    ok, detail = conform.evaluate(c, [], {"in_bad": 1}, names)
    assert not ok and "no counter in_hop_limit" in detail
    ok, detail = conform.evaluate(c, [], {"in_hop_limit": 0, "err": 1}, names)
    assert not ok and "counted 0 of 1" in detail
    assert conform.evaluate(c, [], None, names)[0]     # no counters: dropped is enough
    sent = c.frames[0]
    assert not conform.evaluate(c, [sent], {"in_hop_limit": 1}, names)[0]


def test_a_finding_only_when_observed_as_documented() -> None:
    c = case("h_encaps", "plain")
    exp = bytes(c.outcome.frames[0].frame)   # type: ignore[union-attr]
    lay = W.walk(exp)
    as_linux = bytearray(exp)
    as_linux[lay.upper + 7] += 1             # the inner hop limit kept
    r = conform.verdict(c, [bytes(as_linux)], "linux", TB)
    assert r.status == "finding" and "5.1 S05" in r.detail
    assert conform.verdict(c, [bytes(as_linux)], "vpp", TB).status == "fail"
    worse = bytearray(as_linux)
    worse[lay.upper + 8] ^= 1                # and the inner source differs
    assert conform.verdict(c, [bytes(worse)], "linux", TB).status == "fail"
    assert conform.verdict(c, [exp], "linux", TB).status == "pass"


def test_frames_sorted_by_tag_and_icmp_errors_apart() -> None:
    c = case("end", "segments_2")
    out = bytes(c.outcome.frames[0].frame)   # type: ignore[union-attr]
    quoted = IPv6(c.frames[0][W.ETH:])
    err = bytes(Ether() / IPv6(src=A.sut_in_ip6, dst=A.tester_tx_ip6) / ICMPv6TimeExceeded()
                / IPerror6(bytes(quoted)))
    noise = bytes(Ether() / IPv6() / UDP())
    frames, errors = conform.sort_by_tag([out, err, noise])
    assert frames == {c.tag: [out]} and errors == {c.tag: 1}


def test_table() -> None:
    c = case("end", "segments_2")
    rep = conform.BehaviorReport("end", "linux", [
        conform.verdict(c, [bytes(c.outcome.frames[0].frame)], "linux", TB),   # type: ignore
        conform.verdict(case("end", "hop_limit_1"), [c.frames[0]], "linux", TB),
        conform.verdict(case("h_insert", "inner_srh"), [], "linux", TB)])
    text = conform.format_table(rep)
    assert text.splitlines()[0] == "end on linux: pass 1, fail 1, finding 0, n/a 1"
    assert "hop_limit_1" in text and "forwarded" in text
    assert not rep.ok
