"""The behavior catalogue: test frames, expected transformations, registry, CFG env.

Expected output frames are written out here field by field (independently of
srperf.behaviors' own expectation code) and every check must accept them and
reject frames with one thing wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting as SRH
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from srperf.behaviors import catalogue as B
from srperf.forwarders import registry as forwarders
from srperf.forwarders.common_env import addressing_env
from srperf.traffic import packets as P
from srperf.measure.checks import Expectation, compare
from srperf.config.model import TestbedConfig

TB = TestbedConfig(name="unit", prefix="lxc")
A = TB.addressing
T_TX, T_RX = TB.tester.tx.mac, TB.tester.rx.mac
S_IN, S_OUT = TB.sut.in_port.mac, TB.sut.out_port.mac

LINUX = ["ipv4", "ipv6", "h_insert", "h_encaps", "h_encaps_v4", "h_encaps_l2",
         "h_encaps_red", "h_encaps_l2_red", "end", "end_x", "end_t", "end_dx2", "end_dx4",
         "end_dx6", "end_dt4", "end_dt6", "end_dt46", "end_b6_encaps", "end_next_csid",
         "end_dt6_vrf", "end_dt46_v4"]
CFG_FUNCTION = {"end_dt46_v4": "end_dt46"}  # one SID, measured with IPv4 inside
L2_INNER = {"h_encaps_l2", "h_encaps_l2_red", "end_dx2"}
V4_INNER = {"ipv4", "h_encaps_v4", "end_dx4", "end_dt4", "end_dt46_v4"}
SCRIPT = Path(__file__).resolve().parents[1] / "cfg_scripts" / "linux.sh"


def inner6(size: int = 64, hlim: int = 64):
    pkt = P.udp6(TB, size)
    pkt.hlim = hlim
    return pkt


def inner4(size: int = 64, ttl: int = 64):
    pkt = P.udp4(TB, size)
    pkt.ttl = ttl
    return pkt


def out(pkt):
    return Ether(src=S_OUT, dst=T_RX) / pkt


def l2_inner(size: int = 64, dst: str = T_RX, src: str = T_TX):
    return Ether(src=src, dst=dst) / inner6(size - 14)


def srh(addresses, segleft, nh):
    return SRH(nh=nh, addresses=addresses, segleft=segleft, lastentry=len(addresses) - 1)


def expected_frame(name: str, size: int = 64):
    """What a correct SUT emits for behavior ``name`` (written out by hand)."""
    outer_end = IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=63)
    encap = IPv6(src=A.tunsrc, dst=A.sid_next, hlim=63)
    table = {
        "ipv6": lambda: out(inner6(size, 63)),
        "ipv4": lambda: out(inner4(size, 63)),
        "h_insert": lambda: out(IPv6(src=A.src6, dst=A.sid_next, hlim=63)
                                / srh([A.dst6, A.sid_next], 1, 17)
                                / Raw(bytes(inner6(size)[UDP]))),
        "h_encaps": lambda: out(encap / srh([A.sid_last, A.sid_next], 1, 41) / inner6(size)),
        "h_encaps_v4": lambda: out(encap / srh([A.sid_last, A.sid_next], 1, 4) / inner4(size)),
        "h_encaps_l2": lambda: out(encap / srh([A.sid_last, A.sid_next], 1, 143)
                                   / l2_inner(size, dst=S_IN)),
        "h_encaps_red": lambda: out(encap / srh([A.sid_last], 1, 41) / inner6(size)),
        "h_encaps_l2_red": lambda: out(encap / srh([A.sid_last], 1, 143)
                                       / l2_inner(size, dst=S_IN)),
        "end": lambda: out(outer_end / srh([A.sid_next, A.sid_sut], 0, 41) / inner6(size)),
        "end_dx2": lambda: l2_inner(size),
        "end_dx4": lambda: out(inner4(size, 63)),
        "end_dx6": lambda: out(inner6(size, 63)),
        "end_b6_encaps": lambda: out(
            IPv6(src=A.tunsrc, dst=A.sid_last, hlim=63) / srh([A.sid_next, A.sid_last], 1, 41)
            / IPv6(src=A.tester_tx_ip6, dst=A.sid_next, hlim=64)
            / srh([A.sid_next, A.sid_sut], 0, 41) / inner6(size)),
        "end_next_csid": lambda: out(IPv6(src=A.tester_tx_ip6, dst="fcbb:bbbb:200::", hlim=63,
                                          nh=41) / inner6(size)),
    }
    alias = {"end_x": "end", "end_t": "end", "end_dt4": "end_dx4", "end_dt6": "end_dx6",
             "end_dt46": "end_dx6", "end_dt6_vrf": "end_dx6", "end_dt46_v4": "end_dx4"}
    return Ether(bytes(table[alias.get(name, name)]()))


def set_field(frame, layer_index: int, field: str, value):
    """A copy of ``frame`` with one field of one layer changed."""
    pkt = Ether(bytes(frame))
    layer = pkt
    for _ in range(layer_index):
        layer = layer.payload
    setattr(layer, field, value)
    if isinstance(layer, IP) and field != "chksum":
        layer.chksum = None
    return Ether(bytes(pkt))


def flip_last_byte(frame) -> bytes:
    data = bytearray(bytes(frame))
    data[-1] ^= 0xFF
    return bytes(data)


# --- registry -------------------------------------------------------------------

def test_linux_catalogue_names_exactly():
    assert sorted(forwarders.get("linux").behaviors) == sorted(LINUX)
    for name in LINUX:
        b = B.get(name)
        assert b.name == name and b.cfg_function == CFG_FUNCTION.get(name, name)
        assert "linux" in forwarders.offering(name)
        assert b.kind in B.KINDS
        assert not b.needs_vnf


def test_kinds_and_display_names():
    assert B.get("ipv6").kind == "plain" and B.get("ipv4").kind == "plain"
    assert {B.get(n).kind for n in ("h_insert", "h_encaps", "h_encaps_l2")} == {"headend"}
    assert {B.get(n).kind for n in ("end", "end_x", "end_b6_encaps", "end_next_csid")} \
        == {"endpoint"}
    assert {B.get(n).kind for n in ("end_dx2", "end_dx6", "end_dt4", "end_dt46")} == {"decap"}
    assert B.get("end_dx6").display_name == "End.DX6"
    assert B.get("h_encaps_l2_red").display_name == "H.Encaps.L2.Red"


def test_unknown_behavior_lists_known_names():
    with pytest.raises(KeyError) as err:
        B.get("end_dx7")
    msg = str(err.value)
    assert "end_dx7" in msg and "end_dx6" in msg and "h_encaps" in msg


def test_every_forwarder_offers_only_catalogue_behaviors():
    known = set(B.names())
    offered = set()
    for fwd in forwarders.REGISTRY.values():
        assert set(fwd.behaviors) <= known, fwd.name
        offered |= set(fwd.behaviors)
    assert offered == known, f"behaviors no forwarder offers: {sorted(known - offered)}"
    with pytest.raises(KeyError, match="known forwarders: linux, ebpf"):
        forwarders.get("cisco")


def test_behavior_validation():
    with pytest.raises(ValueError, match="kind"):
        B.Behavior("x", "X", "x", "weird", P.udp6, expect=lambda t, s: 0)
    with pytest.raises(ValueError, match="exactly one"):
        B.Behavior("x", "X", "x", "plain", P.udp6)


# --- test frames ----------------------------------------------------------------

@pytest.mark.parametrize("size", [64, 128, 1500])
@pytest.mark.parametrize("name", LINUX)
def test_frame_inner_packet_size(name, size):
    frame = B.get(name).build_frame(TB, size)
    assert frame[Ether].src == T_TX and frame[Ether].dst == S_IN
    frame = Ether(bytes(frame))
    if name in ("h_encaps_l2", "h_encaps_l2_red"):
        assert len(frame) == size        # the frame itself is what gets encapsulated
    elif name == "end_dx2":
        assert len(frame[SRH].payload) == size
        assert frame[SRH].payload[Ether].dst == T_RX
    elif name in V4_INNER:
        assert len(frame[IP]) == size
    else:
        assert len(frame[UDP].underlayer) == size
        assert frame[UDP].underlayer.src == A.src6 and frame[UDP].underlayer.dst == A.dst6
    assert P.is_test_frame(frame)


@pytest.mark.parametrize("name", LINUX)
def test_frame_too_small_is_refused(name):
    b = B.get(name)
    with pytest.raises(ValueError, match="packet_size"):
        b.build_frame(TB, b.min_packet_size - 1)
    b.build_frame(TB, b.min_packet_size)


@pytest.mark.parametrize("name", ["end", "end_x", "end_t", "end_b6_encaps"])
def test_no_decap_endpoint_frames_address_first_sid(name):
    f = Ether(bytes(B.get(name).build_frame(TB, 64)))
    assert f[IPv6].dst == A.sid_sut and f[IPv6].nh == 43 and f[IPv6].hlim == 64
    assert f[SRH].segleft == 1 and f[SRH].lastentry == 1
    assert f[SRH].addresses == [A.sid_next, A.sid_sut]
    assert f[SRH].nh == 41 and len(f[SRH]) - len(f[SRH].payload) == 40
    assert len(f) == 14 + 40 + 40 + 64


@pytest.mark.parametrize("name,nh", [("end_dx2", 143), ("end_dx4", 4), ("end_dx6", 41),
                                     ("end_dt4", 4), ("end_dt6", 41), ("end_dt46", 41)])
def test_decap_frames_address_last_sid(name, nh):
    f = Ether(bytes(B.get(name).build_frame(TB, 64)))
    assert f[IPv6].dst == A.sid_sut
    assert f[SRH].segleft == 0 and f[SRH].addresses[0] == A.sid_sut
    assert len(f[SRH].addresses) == 2 and f[SRH].nh == nh


@pytest.mark.parametrize("name", ["ipv6", "h_insert", "h_encaps", "h_encaps_red"])
def test_plain_ipv6_frames(name):
    f = Ether(bytes(B.get(name).build_frame(TB, 64)))
    assert f[IPv6].nh == 17 and f[IPv6].dst == A.dst6 and len(f) == 78
    assert SRH not in f


def test_csid_frame_carries_container():
    f = Ether(bytes(B.get("end_next_csid").build_frame(TB, 64)))
    assert f[IPv6].dst == "fcbb:bbbb:100:200::" and f[IPv6].nh == 41
    assert len(f[IPv6].payload) == 64 and SRH not in f


def test_csid_shift():
    assert P.csid_shift("fcbb:bbbb:100:200::", 32, 16) == "fcbb:bbbb:200::"
    assert P.csid_shift("fcbb:bbbb:100:200:300::", 32, 16) == "fcbb:bbbb:200:300::"
    assert P.csid_shift("fcbb:bbbb:0:0:0:0:0:1", 32, 16) == "fcbb:bbbb::1:0"
    assert P.csid_shift("2001:db8:1:2:3:4:5:6", 48, 16) == "2001:db8:1:3:4:5:6:0"


# --- checks ---------------------------------------------------------------------

@pytest.mark.parametrize("size", [64, 200])
@pytest.mark.parametrize("name", LINUX)
def test_check_accepts_correct_frame(name, size):
    b = B.get(name)
    sent = b.build_frame(TB, size)
    good = expected_frame(name, size)
    res = b.check(TB, sent, [good])
    assert res.ok, str(res)
    assert "matching" in res.got
    # bytes or scapy packets, and unrelated traffic around the test frame
    arp = Ether(src=S_OUT, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst=A.dst4)
    assert b.check(TB, bytes(sent), [bytes(arp), bytes(good)]).ok


@pytest.mark.parametrize("name", LINUX)
def test_check_rejects_damaged_or_missing_frames(name):
    b = B.get(name)
    sent = b.build_frame(TB, 64)
    good = expected_frame(name)
    for bad, what in ((flip_last_byte(good), "payload"),
                      (set_field(good, 0, "dst", "02:00:00:00:00:99"), "dst")):
        res = b.check(TB, sent, [bad])
        assert not res.ok, f"{name}: accepted a frame with a wrong {what}"
        assert res.expected and what in res.got
    res = b.check(TB, sent, [])
    assert not res.ok and "no test frame among 0" in res.got
    arp = Ether(src=S_OUT, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst=A.dst4)
    res = b.check(TB, sent, [arp])
    assert not res.ok and "ARP" in res.got
    # one good and one bad test frame: the bad one fails the check
    assert not b.check(TB, sent, [good, flip_last_byte(good)]).ok
    # the sent frame itself (nothing done by the SUT) is never right
    assert not b.check(TB, sent, [sent]).ok


# Behavior-specific wrong transformations: (layer index, field, wrong value, name in message)
WRONG = {
    "ipv6": [(1, "hlim", 64, "hlim")],
    "ipv4": [(1, "ttl", 64, "ttl")],
    "h_insert": [(1, "dst", A.dst6, "dst"), (2, "segleft", 0, "segleft"),
                 (1, "hlim", 64, "hlim")],
    "h_encaps": [(1, "src", A.tester_tx_ip6, "src"), (2, "segleft", 0, "segleft"),
                 (3, "hlim", 63, "hlim")],
    "h_encaps_v4": [(1, "dst", A.sid_last, "dst"), (3, "ttl", 63, "ttl")],
    "h_encaps_l2": [(2, "addresses", [A.sid_next, A.sid_last], "addresses")],
    "h_encaps_red": [(1, "dst", A.sid_last, "dst"), (2, "segleft", 0, "segleft")],
    "h_encaps_l2_red": [(2, "segleft", 0, "segleft")],
    "end": [(1, "hlim", 64, "hlim"), (2, "segleft", 1, "segleft"), (1, "dst", A.sid_sut, "dst")],
    "end_x": [(1, "hlim", 62, "hlim")],
    "end_t": [(2, "segleft", 1, "segleft")],
    "end_dx2": [(1, "hlim", 63, "hlim")],
    "end_dx4": [(1, "ttl", 64, "ttl")],
    "end_dt4": [(1, "ttl", 64, "ttl")],
    "end_dx6": [(1, "hlim", 64, "hlim")],
    "end_dt6": [(1, "dst", A.sid_sut, "dst")],
    "end_dt46": [(1, "hlim", 64, "hlim")],
    "end_dt6_vrf": [(1, "hlim", 64, "hlim")],
    "end_dt46_v4": [(1, "ttl", 64, "ttl")],
    "end_b6_encaps": [(4, "segleft", 1, "segleft"), (3, "dst", A.sid_sut, "dst"),
                      (1, "dst", A.sid_next, "dst")],
    "end_next_csid": [(1, "dst", "fcbb:bbbb:100:200::", "dst"), (1, "hlim", 64, "hlim")],
}


@pytest.mark.parametrize("name", LINUX)
def test_check_rejects_wrong_transformation(name):
    b = B.get(name)
    sent = b.build_frame(TB, 64)
    good = expected_frame(name)
    for layer, field, value, label in WRONG[name]:
        bad = set_field(good, layer, field, value)
        assert bytes(bad) != bytes(good)
        res = b.check(TB, sent, [bad])
        assert not res.ok, f"{name}: accepted wrong {field}={value}"
        assert label in res.got and "expected" in res.got, res.got


def test_check_decap_rejects_outer_header_left_in_place():
    b = B.get("end_dx6")
    sent = b.build_frame(TB, 64)
    res = b.check(TB, sent, [out(Ether(bytes(sent))[IPv6])])
    assert not res.ok and "SRv6 removed" in res.expected


@pytest.mark.parametrize("name", ["h_encaps", "h_encaps_v4", "h_encaps_l2", "h_encaps_red",
                                  "end_b6_encaps"])
def test_outer_header_fields_chosen_by_encapsulating_node_are_free(name):
    b = B.get(name)
    sent = b.build_frame(TB, 64)
    good = expected_frame(name)
    for field, value in (("hlim", 255), ("tc", 0x20), ("fl", 0xBEEF)):
        assert b.check(TB, sent, [set_field(good, 1, field, value)]).ok, field


def test_short_frames_padded_by_a_nic_are_accepted():
    b = B.get("ipv4")
    sent = b.build_frame(TB, 28)
    good = bytes(expected_frame("ipv4", 28))
    assert len(good) == 42
    assert b.check(TB, sent, [good + bytes(18)]).ok
    assert not b.check(TB, sent, [good + b"\x01" + bytes(17)]).ok


def test_compare_reports_each_differing_field():
    good = expected_frame("end")
    bad = set_field(set_field(good, 1, "hlim", 7), 2, "segleft", 1)
    res = compare(Expectation(good, "demo"), [bad])
    assert not res.ok
    assert "IPv6[1].hlim: expected 63, got 7" in res.got
    assert "segleft: expected 0, got 1" in res.got
    assert str(res).startswith("FAILED: expected demo")


# --- CFG environment ---------------------------------------------------------------

def test_cfg_env_has_every_variable_linux_sh_reads():
    env = addressing_env(TB)
    assert all(k.startswith("SRPERF_") and isinstance(v, str) and v for k, v in env.items())
    used = set(re.findall(r"\bSRPERF_[A-Z0-9_]+", SCRIPT.read_text()))
    assert used, "linux.sh reads no SRPERF_* variable?"
    from srperf.forwarders.linux import FORWARDER

    # the one per-behavior variable: a loss-monitoring ingress case's routes (srperf.pm)
    case_env = FORWARDER.behavior_env(TB, FORWARDER.parse_options({}), "h_encaps.none.f2")
    assert set(case_env) == {"SRPERF_PM_ROUTES"}
    env = {**env, **case_env}
    assert used <= set(env), f"missing from cfg_env: {sorted(used - set(env))}"


def test_cfg_env_values_follow_the_testbed():
    tb = TestbedConfig(name="x", prefix="lxc")
    env = addressing_env(tb)
    assert env["SRPERF_IN_IF"] == tb.sut.in_port.name == "s0"
    assert env["SRPERF_OUT_IF"] == "s1"
    assert env["SRPERF_SID_SUT"] == A.sid_sut
    assert env["SRPERF_ENCAP_SEGS"] == f"{A.sid_next},{A.sid_last}"
    assert env["SRPERF_TABLE"] == str(A.table)
    assert env["SRPERF_CSID_PREFIX"] == "fcbb:bbbb:100::/48"
    assert env["SRPERF_CSID_BLOCK_PREFIX"] == "fcbb:bbbb::/32"
    assert env["SRPERF_TUNSRC"] == A.tunsrc


def test_linux_sh_documents_every_variable_it_reads():
    text = SCRIPT.read_text()
    header = text.split("set -euo pipefail", 1)[0]
    used = set(re.findall(r"\bSRPERF_[A-Z0-9_]+", text.split("set -euo pipefail", 1)[1]))
    undocumented = sorted(v for v in used if v not in header)
    assert not undocumented, f"linux.sh uses undocumented variables: {undocumented}"


def test_linux_sh_has_a_function_per_linux_behavior():
    text = SCRIPT.read_text()
    defined = set(re.findall(r"^([a-z0-9_]+)\(\) \{", text, re.M))
    for name in forwarders.get("linux").behaviors:
        assert B.get(name).cfg_function in defined, name
    assert "clean" in defined
