"""srperf provision: the CloudLab profile's RSpec, every step in a dry run, and provisioning
for real over SSH (a real sshd in a namespace, tests/sshd.py): a second run finds every step
already there, and --check reports a planted difference."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from lxml import etree

from sshd import SshdNode, sshd_on_virtual_testbed
from srperf import resources
from srperf.cli.entry import main
from srperf.config.loader import load_testbed
from srperf.provision import plan

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "srppv"
SUT_NS, TESTER_NS = f"{PREFIX}-sut", f"{PREFIX}-tester"
RSPEC = "{http://www.geni.net/resources/rspec/3}"


def _profile() -> Any:
    spec = importlib.util.spec_from_file_location("cloudlab_profile",
                                                  resources.cloudlab_profile())
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_profile_rspec_has_two_nodes_and_two_direct_links() -> None:
    prof = _profile()
    params = prof.ProfileParams(hardware_type="c6525-25g", link_mbps=25_000,
                                disk_image="urn:publicid:IDN+emulab.net+image+x//Y")
    root = etree.fromstring(prof.build_request(params).toXMLString())
    nodes = {n.get("client_id"): n for n in root.iter(f"{RSPEC}node")}
    assert sorted(nodes) == ["sut", "tester"]
    for node in nodes.values():
        assert node.find(f"{RSPEC}hardware_type").get("name") == "c6525-25g"
        assert node.find(f"{RSPEC}sliver_type/{RSPEC}disk_image").get("name") == \
            "urn:publicid:IDN+emulab.net+image+x//Y"
    links = {ln.get("client_id"): ln for ln in root.iter(f"{RSPEC}link")}
    ends = {name: [r.get("client_id") for r in ln.iter(f"{RSPEC}interface_ref")]
            for name, ln in links.items()}
    assert ends == {"link-in": ["tester:tx", "sut:in"], "link-out": ["sut:out", "tester:rx"]}
    caps = {p.get("capacity") for ln in links.values() for p in ln.iter(f"{RSPEC}property")}
    assert caps == {"25000000"}  # kbit/s


def test_provision_cloudlab_writes_the_profile(tmp_path: Path) -> None:
    out = tmp_path / "profile.py"
    assert main(["provision", "cloudlab", "-o", str(out)]) == 0
    assert out.read_text() == resources.cloudlab_profile().read_text()


def _cloudlab_tb(tmp_path: Path, **trex: Any) -> Path:
    data = yaml.safe_load((ROOT / "testbed" / "cloudlab.yaml").read_text())
    data["provision"]["trex"].update(trex)
    path = tmp_path / "cloudlab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_dry_run_prints_every_command(tmp_path: Path, capsys) -> None:
    tb = _cloudlab_tb(tmp_path, sha256="ab" * 32)
    assert main(["provision", str(tb), "--dry-run"]) == 0
    out = capsys.readouterr().out
    config = load_testbed(tb)
    steps = plan.sut_steps(config) + plan.tester_steps(config, None)
    # SUT: tools; per port offloads, queues, flow control, IRQs; irqbalance, turbo,
    # C-states, governor.  Tester: the release, trex_cfg.yaml, hugepages for TRex.
    assert len(steps) == 16
    for step in steps:
        assert f"- {step.name}" in out and f"check: {step.check}" in out
        for command in step.apply:
            assert f"run:   {command}" in out
    assert "sha256sum -c" in out and "ab" * 32 in out
    assert "<PCI of ens1f0>" in out  # read on the node at provisioning time
    # the whole trex_cfg.yaml it would write, not a placeholder line
    for line in ("- version: 2", "  interfaces:", "  - <PCI of ens1f0>", "  port_limit: 2",
                 f"  prefix: srperf-{config.name}", "  zmq_rpc_port: 4501"):
        assert line in out, line


def test_trex_release_must_be_pinned(tmp_path: Path, capsys) -> None:
    assert main(["provision", str(_cloudlab_tb(tmp_path)), "--dry-run"]) == 2
    assert "provision.trex.sha256 = None: required" in capsys.readouterr().err


@pytest.fixture(scope="module")
def node() -> Iterator[SshdNode]:
    with sshd_on_virtual_testbed(PREFIX, tag=11, name="provision-links") as sshd:
        yield sshd


def _ssh_tb(tmp_path: Path, node: SshdNode) -> Path:
    data = {"name": "provision-ssh", "kind": "ssh", "prefix": PREFIX,
            "tester": {"driver": "linux", "netns": TESTER_NS, "tx": {"name": "t0"},
                       "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "cpu": 1, "transport": {"kind": "ssh", "ssh": node.ssh_config()}},
            "provision": {"tuning": {"governor": "performance"}}}
    path = tmp_path / "tb.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _sut(*argv: str) -> None:
    subprocess.run(["ip", "netns", "exec", SUT_NS, *argv], check=True, capture_output=True)


@pytest.mark.netns
def test_provision_over_ssh_is_idempotent_and_checked(node: SshdNode, tmp_path: Path,
                                                      capsys) -> None:
    tb = str(_ssh_tb(tmp_path, node))
    _sut("ethtool", "-K", "s0", "gro", "on", "gso", "on")  # as the virtual testbed leaves it
    assert main(["provision", tb, "--role", "sut"]) == 0
    first = capsys.readouterr().out
    assert "sut: s0 offloads off: done" in first
    assert "sut: linux tools: already there" in first
    assert "sut: CPU governor performance: not applicable" in first  # no cpufreq here
    assert "sut: s0 IRQs on CPU 1: not applicable" in first          # a veth has no IRQ

    assert main(["provision", tb, "--role", "sut"]) == 0
    second = capsys.readouterr().out
    lines = [ln for ln in second.splitlines() if ln.startswith("  sut: ")]
    assert lines and all(ln.endswith(("already there", "not applicable")) for ln in lines)

    assert main(["provision", tb, "--check"]) == 0
    capsys.readouterr()
    _sut("ethtool", "-K", "s1", "gro", "on")  # the planted difference
    assert main(["provision", tb, "--check"]) == 1
    out = capsys.readouterr().out
    assert "sut: s1 offloads off: DIFFERS" in out
    assert "| generic-receive-offload: on" in out
    assert "sut: s0 offloads off: as described" in out


@pytest.mark.netns
def test_provision_is_refused_while_a_run_holds_the_testbed(node: SshdNode, tmp_path: Path,
                                                            capsys) -> None:
    from srperf.testbeds import registry as testbeds
    from srperf.config.loader import load_testbed

    tb = _ssh_tb(tmp_path, node)
    holder = testbeds.create(load_testbed(tb))
    try:
        assert holder.claim("srperf run holder")
        assert main(["provision", str(tb), "--role", "sut"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("srperf: testbed busy: ") and "srperf run holder" in err, err
        assert main(["provision", str(tb), "--dry-run"]) == 0   # printing changes nothing
    finally:
        holder.unclaim()
        holder.close()
    capsys.readouterr()
    assert main(["provision", str(tb), "--role", "sut"]) == 0   # free again


@pytest.mark.netns
def test_run_environment_holds_the_tuning_read_over_ssh(node: SshdNode,
                                                        tmp_path: Path) -> None:
    from srperf.testbeds import registry as testbeds

    testbed = testbeds.create(load_testbed(_ssh_tb(tmp_path, node)))
    try:
        env = testbed.environment()
    finally:
        testbed.close()
    sut = env["nodes"]["sut"]
    assert set(sut["tuning"]["ports"]) == {"s0", "s1"}
    assert "generic-receive-offload" in sut["tuning"]["ports"]["s0"]["offloads"]
    assert sut["tuning"]["irqbalance"] in ("running", "stopped")
