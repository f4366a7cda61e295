"""A forwarder's declared deviations from the catalogue (srperf/forwarders/deviations.py).

The frames VPP emits are written out here by hand, from what a real VPP 26.06
sent on the virtual testbed (see srperf/forwarders/vpp.py): every accepted
deviation must let exactly those frames verify, a frame with anything else
wrong must still fail, and a deviation declared a bug keeps the failure and
names itself.  If the catalogue's expectations change, these tests say which
declared deviation no longer matches.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting as SRH
from scapy.layers.l2 import Ether

from srperf.behaviors import catalogue as B
from srperf.forwarders import registry as forwarders
from srperf.config.model import TestbedConfig, vnf_sid
from srperf.errors import VerificationError
from srperf.forwarders.deviations import Deviation, undo_all
from srperf.measure.verify import check_frames

TB = TestbedConfig(name="unit", prefix="dev")
A = TB.addressing
VPP = forwarders.get("vpp")


def out(pkt) -> bytes:
    return bytes(Ether(src=TB.sut.out_port.mac, dst=TB.tester.rx.mac) / pkt)


def inner6(hlim: int) -> IPv6:
    pkt = B.get("ipv6").build_frame(TB, 64)[IPv6].copy()
    pkt.hlim = hlim
    return pkt


def inner4(ttl: int) -> IP:
    pkt = B.get("ipv4").build_frame(TB, 64)[IP].copy()
    pkt.ttl = ttl
    pkt.chksum = None
    return pkt


def srh(addresses, segleft, nh):
    return SRH(nh=nh, addresses=addresses, segleft=segleft, lastentry=len(addresses) - 1)


def vpp_frame(name: str) -> bytes:
    """What VPP 26.06 sent for the 64-byte test frame of ``name`` (hop limits as observed)."""
    vnf = vnf_sid(A, A.vnf_target)
    encap = IPv6(src=A.tunsrc, dst=A.sid_next, hlim=63)
    return {
        "h_encaps": lambda: out(encap / srh([A.sid_last, A.sid_next], 1, 41) / inner6(63)),
        "h_encaps_v4": lambda: out(encap / srh([A.sid_last, A.sid_next], 1, 4) / inner4(63)),
        "end_b6_encaps": lambda: out(
            IPv6(src=A.tunsrc, dst=A.sid_last, hlim=63) / srh([A.sid_next, A.sid_last], 1, 41)
            / IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=63)
            / srh([A.sid_next, A.sid_sut], 0, 41) / inner6(64)),
        "h_insert": lambda: out(IPv6(src=A.src6, dst=A.sid_next, hlim=62)
                                / srh([A.dst6, A.sid_next], 1, 17)
                                / inner6(64)[UDP].copy()),
        "end_ad": lambda: out(IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=63)
                              / srh([A.sid_next, vnf], 0, 41) / inner6(61)),
        "end_as": lambda: out(IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=63)
                              / inner6(61)),
        "end_am": lambda: out(IPv6(src=A.src6, dst=A.sid_next, hlim=61)
                              / srh([A.dst6, A.sid_next, vnf], 1, 17)
                              / inner6(64)[UDP].copy()),
    }[name]()


def check(name: str, frame: bytes, deviations=None) -> str:
    beh = B.get(name)
    devs = VPP.deviations_of(name) if deviations is None else deviations
    return check_frames(beh, TB, beh.build_frame(TB, 64), [frame], devs)


ACCEPTED = ["h_encaps", "h_encaps_v4", "end_b6_encaps", "end_ad", "end_as", "end_am"]


@pytest.mark.parametrize("name", ACCEPTED)
def test_vpp_frame_fails_the_catalogue_but_verifies_with_its_declared_deviation(name):
    with pytest.raises(VerificationError):
        check(name, vpp_frame(name), deviations=())
    what = check(name, vpp_frame(name))
    assert "with the forwarder's declared deviation" in what
    for dev in VPP.deviations_of(name):
        assert dev.reference in what and "accepted" in what


@pytest.mark.parametrize("name", ACCEPTED)
def test_anything_else_wrong_still_fails(name):
    frame = bytearray(vpp_frame(name))
    frame[-1] ^= 0xFF                                  # the payload
    with pytest.raises(VerificationError, match="verification failed"):
        check(name, bytes(frame))
    pkt = Ether(vpp_frame(name))
    pkt[IPv6].src = A.sid_last                         # the outer source
    with pytest.raises(VerificationError):
        check(name, bytes(pkt))


@pytest.mark.parametrize("name,hops", [("h_encaps", -2), ("end_ad", -2), ("end_ad", 1)])
def test_only_the_declared_amount_is_accepted(name, hops):
    pkt = Ether(vpp_frame(name))
    inner = [layer for layer in pkt.iterpayloads() if type(layer) is IPv6][-1]
    dev = VPP.deviations_of(name)[0]
    inner.hlim += hops - dev.hop_delta
    with pytest.raises(VerificationError):
        check(name, bytes(pkt))


def test_an_ipv4_checksum_left_stale_is_never_explained_away():
    pkt = Ether(vpp_frame("h_encaps_v4"))
    good = pkt[IP].chksum
    pkt[IP].chksum = good ^ 0x0100                     # TTL lowered, checksum not updated
    with pytest.raises(VerificationError):
        check("h_encaps_v4", bytes(pkt))


def test_a_bug_keeps_failing_and_names_itself():
    [bug] = VPP.deviations_of("h_insert")
    assert not bug.conformant
    with pytest.raises(VerificationError) as err:
        check("h_insert", vpp_frame("h_insert"))
    text = str(err.value)
    assert "known deviation" in text and "RFC 8200" in text and "not accepted" in text
    frame = bytearray(vpp_frame("h_insert"))           # another difference: no bug named
    frame[-1] ^= 0xFF
    with pytest.raises(VerificationError) as err:
        check("h_insert", bytes(frame))
    assert "known deviation" not in str(err.value)


def test_the_catalogue_frame_needs_no_deviation():
    beh = B.get("h_encaps")
    expected = bytes(beh.expected(TB, beh.build_frame(TB, 64)).frame)
    what = check("h_encaps", expected)
    assert "deviation" not in what


def test_srh_omitted_applies_only_without_an_srh():
    beh = B.get("end_as")
    sent = beh.build_frame(TB, 64)
    [srh_dev] = [d for d in VPP.deviations_of("end_as") if d.srh_omitted]
    with_srh = out(IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=63)
                   / srh([A.sid_next, vnf_sid(A, A.vnf_target)], 0, 41) / inner6(63))
    assert srh_dev.undo(sent, with_srh) is None
    undone = Ether(srh_dev.undo(sent, vpp_frame("end_as")))
    assert undone[IPv6].nh == 43 and undone[SRH].segleft == 0 and undone[SRH].nh == 41
    assert undone[IPv6].plen == len(undone[IPv6].payload)


def test_undo_all_reports_what_applied():
    frames, applied = undo_all(VPP.deviations_of("end_as"), B.get("end_as").build_frame(TB, 64),
                               [vpp_frame("end_as")])
    assert len(frames) == 1 and len(applied) == 2


def test_declaration_is_checked():
    with pytest.raises(ValueError, match="exactly one"):
        Deviation("end", "x", "y", True)
    with pytest.raises(ValueError, match="hop_delta"):
        Deviation("end", "x", "y", True, hop_header=0)


def test_declared_deviations_name_offered_behaviors_and_go_to_the_environment():
    for fwd in forwarders.REGISTRY.values():
        for dev in fwd.deviations:
            assert fwd.offers(dev.behavior), (fwd.name, dev.behavior)
    env = VPP.declared_deviations()
    assert set(env) == set(ACCEPTED) | {"h_insert"}
    assert all("RFC" in text for texts in env.values() for text in texts)
    assert forwarders.get("linux").declared_deviations() == {}
