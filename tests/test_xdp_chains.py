"""The fast path's chains without a SUT: names parsed into programs, every invalid
chain or option refused naming its key (exit 2), the model of each chain equal to the
kernel's frame for the behavior it twins, and the SRPERF_XDP_* variables of a chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from refusals import assert_experiment_refused
from srperf.behaviors import catalogue, fastpath
from srperf.config.model import TestbedConfig
from srperf.forwarders import registry as forwarders
from srperf.forwarders.xdp.forwarder import XdpOptions, chain_env, program_ids

TB = TestbedConfig(name="x45u", prefix="x45u")
HEAD = "name: x45\nforwarder: xdp\npacket_sizes: [64]\n"


def test_names_parse_into_programs() -> None:
    assert [s.program for s in fastpath.parse_chain("xdp_enc_mon_fw")] == ["enc", "mon", "fw"]
    assert fastpath.parse_chain("xdp_enc3_fw")[0] == fastpath.Step("enc", 3)
    assert fastpath.parse_chain("xdp_enc_fw")[0].sids == 2     # the H.Encaps policy
    assert [s.program for s in fastpath.parse_chain("xdp_nop7_fw")] == ["nop"] * 7 + ["fw"]
    assert [s.program for s in fastpath.parse_chain("xdp_end")] == ["end"]


@pytest.mark.parametrize("name, words", [
    ("xdp_foo_fw", "unknown program 'foo'"),
    ("xdp_nop8_fw", "a chain of 9 programs: at most 8"),
    ("xdp_nop4_nop4_fw", "a chain of 9 programs"),
    ("xdp_enc9_fw", "SID list too long: 9 SIDs"),
    ("xdp_enc0_fw", "operand out of range"),
    ("xdp_nop0_fw", "operand out of range"),
    ("xdp_fw_nop", "fw ends the chain"),
    ("xdp_pass_fw", "pass ends the chain"),
    ("xdp_end2_fw", "takes no number"),
    ("xdp_", "named xdp_"),
])
def test_invalid_chains_are_refused(name: str, words: str) -> None:
    with pytest.raises(fastpath.ChainError, match=words):
        fastpath.parse_chain(name)
    assert not forwarders.get("xdp").offers(name)
    assert words in forwarders.get("xdp").why_not(name)
    with pytest.raises(KeyError, match=words):
        catalogue.get(name)


@pytest.mark.parametrize("behavior, words", [
    ("xdp_foo_fw", "unknown program"), ("xdp_nop8_fw", "at most 8"),
    ("xdp_enc9_mon_fw", "SID list too long"), ("xdp_enc0_fw", "operand out of range"),
])
def test_experiment_with_an_invalid_chain_is_refused(tmp_path: Path, capsys, behavior: str,
                                                      words: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + f"behaviors: [xdp_fw, {behavior}]\n")
    assert_experiment_refused(path, "behaviors[1]", behavior, capsys)


@pytest.mark.parametrize("option, key, value", [
    ("fw: teleport", "options.fw", "teleport"),
    ("mode: turbo", "options.mode", "turbo"),
    ("flows: 0", "options.flows", "0"),
    ("flows: 1025", "options.flows", "1025"),
    ("mark: 3", "options.mark", "3"),
    ("chain_len: 3", "options.chain_len", "3"),
])
def test_invalid_options_are_refused(tmp_path: Path, capsys, option: str, key: str,
                                     value: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(HEAD + f"behaviors: [xdp_fw]\noptions: {{{option}}}\n")
    assert_experiment_refused(path, key, value, capsys)


def test_a_kernel_behavior_is_not_a_fast_path_one() -> None:
    xdp = forwarders.get("xdp")
    assert not xdp.offers("end") and "forwarder linux" in xdp.why_not("end")
    assert not forwarders.get("linux").offers("xdp_end_fw")


def test_program_ids_come_from_the_header() -> None:
    assert program_ids() == {"nop": 0, "end": 1, "enc": 2, "mon": 3, "fw": 4, "pass": 5}


@pytest.mark.parametrize("chain, kernel", [("xdp_fw", "ipv6"), ("xdp_end_fw", "end"),
                                           ("xdp_enc_fw", "h_encaps"),
                                           ("xdp_nop7_fw", "ipv6"), ("xdp_end", "end"),
                                           ("xdp_enc", "h_encaps")])
def test_a_chain_makes_the_frame_of_its_kernel_twin(chain: str, kernel: str) -> None:
    """What the fast path must emit is what the kernel's behavior emits (the catalogue's
    Linux expectation), its free outer fields (hop limit, traffic class, flow label of
    H.Encaps) set as Linux sets them."""
    fast, slow = catalogue.get(chain), catalogue.get(kernel)
    sent = slow.frame_builder(TB, 64)
    assert bytes(fast.frame_builder(TB, 64)) == bytes(sent)
    ours, linux = fast.expect(TB, sent), slow.expect(TB, sent)
    expected = linux.frame.copy()
    for layer, field in linux.free:   # Linux: hop limit = the inner's - 1, tc 0, fl 0
        value = {"hlim": sent[1].hlim - 1, "tc": 0, "fl": 0}[field]
        setattr(expected.getlayer(layer), field, value)
    assert bytes(ours.frame) == bytes(expected)
    assert ours.free == ()   # the fast path's own choices are compared too


def test_pass_emits_the_frame_unchanged() -> None:
    b = catalogue.get("xdp_pass")
    sent = b.frame_builder(TB, 64)
    assert bytes(b.expect(TB, sent).frame) == bytes(sent)


def test_enc_pushes_n_sids_of_the_table() -> None:
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting

    b = catalogue.get("xdp_enc4_fw")
    out = b.expect(TB, b.frame_builder(TB, 64)).frame
    srh = out[IPv6ExtHdrSegmentRouting]
    table = fastpath.fast_path_sids(TB)
    assert [str(a) for a in srh.addresses] == list(reversed(table[:4]))
    assert (srh.segleft, out[IPv6].dst) == (3, table[0])


def test_chain_env() -> None:
    env = chain_env(TB, XdpOptions(fw="static", flows=3, mark=True), "xdp_enc3_mon_fw")
    assert env["SRPERF_XDP_CHAIN"] == "2:3,3:1,4:0"
    assert env["SRPERF_XDP_ROUTE"] == TB.addressing.dst_prefix6
    flows = env["SRPERF_XDP_FLOWS"].split(";")
    assert len(flows) == 3 and len(set(flows)) == 3
    assert flows[0] == ",".join(reversed(fastpath.fast_path_sids(TB)[:3]))
    assert env["SRPERF_XDP_MARK"] == "1"
    env = chain_env(TB, XdpOptions(), "xdp_end_fw")
    assert (env["SRPERF_XDP_CHAIN"], env["SRPERF_XDP_ROUTE"], env["SRPERF_XDP_FLOWS"]) == \
        ("1:0,4:1", f"{TB.addressing.sid_sut}/128", "none")
    # the transit frame of a waypoint's mon: its own SID list is the flow
    env = chain_env(TB, XdpOptions(fw="kernel"), "xdp_mon_fw")
    assert env["SRPERF_XDP_CHAIN"] == "3:0,4:2"
    assert env["SRPERF_XDP_FLOWS"] == f"{TB.addressing.sid_next},{TB.addressing.sid_sut}"


def test_shipped_experiments_parse() -> None:
    from srperf.config.loader import load_experiment
    from srperf.resources import experiments_dir

    for name in ("fast_path.yaml", "fast_path_depth.yaml"):
        path = experiments_dir() / name
        if path.exists():
            exp = load_experiment(path)
            assert exp.forwarder in ("xdp", "linux")
