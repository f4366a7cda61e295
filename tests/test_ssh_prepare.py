"""An SSH SUT prepared and unprepared from its testbed file, and two SSH testbeds on one
host, against a real OpenSSH sshd (tests/sshd.py) in a namespace.

Topology: ``s26p-sut`` runs sshd, reached from ``s26p-tester`` over a management veth;
data veths t0/t1 (tester) - s0/s1 (SUT) are bare cables: no address, no sysctl, no
neighbour, as on a lab host before ``srperf testbed prepare``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from sshd import SshdNode, sshd_in_new_namespaces
from srperf.testbeds import registry as testbeds
from srperf.cli.entry import main
from srperf.config.loader import load_testbed
from srperf.testbeds.lock import LOCK_DIR, TestbedBusy

pytestmark = pytest.mark.netns

SUT_NS, TESTER_NS = "s26p-sut", "s26p-tester"


def _in(ns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def node() -> Iterator[SshdNode]:
    from srperf.config.model import TestbedConfig

    ports = TestbedConfig(name="macs")  # the MACs a testbed file names by default
    with sshd_in_new_namespaces(SUT_NS, TESTER_NS, tag=26) as sshd:
        # the cables: NICs whose MACs the testbed file names (as on a lab host)
        _in(TESTER_NS, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1")
        for t, t_mac, s, s_mac in (("t0", ports.tester.tx.mac, "s0", ports.sut.in_port.mac),
                                   ("t1", ports.tester.rx.mac, "s1", ports.sut.out_port.mac)):
            subprocess.run(["ip", "link", "add", t, "netns", TESTER_NS, "address", t_mac,
                            "type", "veth", "peer", "name", s, "netns", SUT_NS,
                            "address", s_mac], check=True)
            _in(TESTER_NS, "ip", "link", "set", t, "up")
        yield sshd


def _testbed(tmp_path: Path, node: SshdNode, name: str) -> Path:
    data = {"name": name, "kind": "ssh",
            "tester": {"driver": "linux", "netns": TESTER_NS, "tx": {"name": "t0"},
                       "rx": {"name": "t1"}, "cpu": 0},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": node.ssh_config()}}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_prepare_applies_the_base_setup_and_unprepare_undoes_it(
        node: SshdNode, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tb_file = _testbed(tmp_path, node, "s26prep")
    tb = load_testbed(tb_file)
    a = tb.addressing
    before = _in(SUT_NS, "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip()
    assert main(["testbed", "prepare", str(tb_file), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert f"ip sr tunsrc set {a.tunsrc}" in dry and "nud permanent" in dry
    assert a.sut_in_ip6 not in _in(SUT_NS, "ip", "-6", "addr", "show", "dev", "s0")
    try:
        assert main(["testbed", "prepare", str(tb_file)]) == 0, capsys.readouterr().err
        assert _in(SUT_NS, "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip() == "1"
        assert _in(SUT_NS, "sysctl", "-n", "net.ipv6.conf.s0.seg6_enabled").strip() == "1"
        assert f"{a.sut_in_ip6}/{a.link_prefix_len6}" in _in(SUT_NS, "ip", "-6", "addr",
                                                              "show", "dev", "s0")
        assert f"{a.sut_out_ip4}/{a.link_prefix_len4}" in _in(SUT_NS, "ip", "addr",
                                                               "show", "dev", "s1")
        neigh = _in(SUT_NS, "ip", "-6", "neigh", "show", "dev", "s0")
        assert a.tester_tx_ip6 in neigh and "PERMANENT" in neigh, neigh
        assert a.tunsrc in _in(SUT_NS, "ip", "sr", "tunsrc", "show")
        assert Path(LOCK_DIR, "prepared-s26prep.json").exists()
        # preparing again keeps the first record (what was there before srperf)
        assert main(["testbed", "prepare", str(tb_file)]) == 0
        # the SUT now forwards: a verified IPv6 search over SSH
        rc = main(["pdr", "-b", "ipv6", "-t", str(tb_file), "-a", "bisect",
                   "--trial-duration", "0.2", "--accuracy", "2%", "--min-rate", "1%",
                   "--max-rate", "5%",
                   "--results", str(tmp_path / "res")])
        cap = capsys.readouterr()
        assert rc in (0, 3) and "ipv6: verified" in cap.out, cap.out + cap.err
    finally:
        assert main(["testbed", "unprepare", str(tb_file)]) == 0
    assert "base setup undone" in capsys.readouterr().out
    assert _in(SUT_NS, "sysctl", "-n", "net.ipv6.conf.all.forwarding").strip() == before
    assert a.sut_in_ip6 not in _in(SUT_NS, "ip", "-6", "addr", "show", "dev", "s0")
    assert a.sut_out_ip4 not in _in(SUT_NS, "ip", "addr", "show", "dev", "s1")
    assert "PERMANENT" not in _in(SUT_NS, "ip", "neigh", "show")
    assert _in(SUT_NS, "ip", "sr", "tunsrc", "show").split()[-1] == "::"
    assert not Path(LOCK_DIR, "prepared-s26prep.json").exists()
    assert main(["testbed", "unprepare", str(tb_file)]) == 0
    assert "nothing to undo" in capsys.readouterr().out


def test_prepare_refuses_a_port_the_sut_lacks(node: SshdNode, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(_testbed(tmp_path, node, "s26bad").read_text())
    data["sut"]["in"]["name"] = "nosuch0"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["testbed", "prepare", str(path)]) == 1
    assert "no interface nosuch0" in capsys.readouterr().err
    assert not Path(LOCK_DIR, "prepared-s26bad.json").exists()


def test_two_ssh_testbeds_on_one_host_have_their_own_vnf_prefix(
        node: SshdNode, tmp_path: Path) -> None:
    """VNF namespaces <prefix>-vnfN of two SSH testbeds on one host differ (a testbed's
    cleanup deletes only its own); a long name gets a hashed prefix of its own."""
    a = load_testbed(_testbed(tmp_path, node, "s26a"))
    b = load_testbed(_testbed(tmp_path, node, "s26b"))
    assert a.vnf_ns(0) == "s26a-vnf0" and b.vnf_ns(0) == "s26b-vnf0"
    long_a = load_testbed(_testbed(tmp_path, node, "lab-rack-4-node-a"))
    long_b = load_testbed(_testbed(tmp_path, node, "lab-rack-4-node-b"))
    assert long_a.prefix != long_b.prefix and len(long_a.prefix) == 8


def test_two_ssh_testbeds_on_one_host_have_their_own_lock(
        node: SshdNode, tmp_path: Path) -> None:
    """Two testbeds whose SUT is the same host: each locks only itself (not one
    /run/srperf/sut.lock for the host)."""
    a = load_testbed(_testbed(tmp_path, node, "s26a"))
    b = load_testbed(_testbed(tmp_path, node, "s26b"))
    holder_a, holder_b = testbeds.create(a), testbeds.create(b)
    second_a = testbeds.create(a)
    try:
        assert holder_a.claim("test: testbed a") is True
        assert holder_b.claim("test: testbed b") is True   # same host, other testbed
        with pytest.raises(TestbedBusy, match="s26a"):
            second_a.claim("test: testbed a again")
    finally:
        holder_a.unclaim()
        holder_b.unclaim()
        for t in (holder_a, holder_b, second_a):
            t.close()


def test_status_names_what_only_the_sut_can_tell(node: SshdNode, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A sut.cpu the SUT lacks passes validate (this host cannot see the SUT) and is
    named by key in 'testbed status'."""
    data = yaml.safe_load(_testbed(tmp_path, node, "s26st").read_text())
    data["sut"]["cpu"] = 999
    path = tmp_path / "st.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0
    assert main(["testbed", "status", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sut.cpu = 999: no such CPU on the SUT" in out, out
