"""cfg_scripts/srnk.sh: the SRNK paper's appendix commands, and this kernel's refusal.

With a recording ``ip`` (tests/doubles/ip, FakeIp) on PATH, End.AD sends
exactly the commands of the SRNK paper's Appendix A (SRNKv1: inbound route,
``ip -6 rule add iif IF table T``, fromVNF default route in T) and Appendix B
(SRNKv2: one route per VNF, then ``ip -6 rule add seg6local-behaviour End.AD``)
with this testbed's SID, interface, next hop, table and ``age``.  On this
machine's mainline kernel and iproute2 (no SRNK) the script, run for real in a
namespace with a VNF veth, reports End.AD/End.AS unsupported with iproute2's
own error (End.AD) or the kernel's (End.AS, which mainline iproute2 parses) and
leaves nothing behind.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.forwarders.common_env import addressing_env
from srperf.forwarders.srnk import SrnkOptions, srnk_env
from srperf.resources import cfg_script

SCRIPT = cfg_script("srnk")
DOUBLES = Path(__file__).parent / "doubles"
TB = TestbedConfig(name="srpvp", prefix="srpvp")
A = TB.addressing
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SRPERF_", "FAKE_"))}

# The appendices' commands, for the paper's fdf1::2 / veth0 / table 100 / age 5
# written with this testbed's VNF SID, VNF interface, next hop and table.
APPENDIX_A_VNF = [
    "-6 route add {sid}/128 encap seg6local action End.AD chain inbound oif {ifname} "
    "nh6 fe80::2 age {age} dev {ifname}",
    "-6 rule add iif {ifname} table {table}",
    "-6 route add default encap seg6local action End.AD chain fromVNF iif {ifname} "
    "dev {ifname} table {table}",
]
APPENDIX_B_VNF = ["-6 route add {sid}/128 encap seg6local action End.AD oif {ifname} "
                  "nh6 fe80::2 age {age} dev {ifname}"]
APPENDIX_B_RULE = "-6 rule add seg6local-behaviour End.AD"
SID_ROUTE = f"-6 route add fc00::/16 via {A.tester_rx_ip6} dev s1"


def env(options: SrnkOptions, **extra: str) -> dict[str, str]:
    return {**BASE_ENV, **addressing_env(TB), **srnk_env(TB, options), **extra}


def run_with_fake_ip(tmp: Path, function: str, options: SrnkOptions, links: str,
                     **extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """srnk.sh FUNCTION with FakeIp first on PATH; its changing commands (not show/link)."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "ip").exists():
        (bindir / "ip").symlink_to(DOUBLES / "ip")
    log = tmp / "ip.log"
    if log.exists():
        log.unlink()
    res = subprocess.run(["bash", str(SCRIPT), function], capture_output=True, text=True,
                         timeout=60, env=env(options, PATH=f"{bindir}{os.pathsep}"
                                             f"{BASE_ENV['PATH']}", FAKE_IP_LOG=str(log),
                                             FAKE_IP_LINKS=links, FAKE_IP_MAC="02:fa:6e:00:00:01",
                                             **extra))
    sent = log.read_text().splitlines() if log.exists() else []
    return res, [c for c in sent if " show" not in c and not c.startswith("link ")]


def vnf(i: int, template: list[str], age: int, table_base: int) -> list[str]:
    return [t.format(sid=f"fc00:1:a::{i + 1:x}", ifname=f"vnf{i}", age=age,
                     table=table_base + i) for t in template]


@pytest.mark.parametrize("vnfs", [1, 2])
def test_srnkv1_end_ad_is_appendix_a(tmp_path: Path, vnfs: int) -> None:
    opts = SrnkOptions(version=1, age_s=5, table_base=100)
    res, sent = run_with_fake_ip(tmp_path, "end_ad", opts,
                                 " ".join(f"vnf{i}" for i in range(vnfs)))
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    expected = [c for i in range(vnfs) for c in vnf(i, APPENDIX_A_VNF, 5, 100)]
    assert sent == expected + [SID_ROUTE]


@pytest.mark.parametrize("vnfs", [1, 2])
def test_srnkv2_end_ad_is_appendix_b(tmp_path: Path, vnfs: int) -> None:
    opts = SrnkOptions(version=2, age_s=3)
    res, sent = run_with_fake_ip(tmp_path, "end_ad", opts,
                                 " ".join(f"vnf{i}" for i in range(vnfs)))
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    expected = [c for i in range(vnfs) for c in vnf(i, APPENDIX_B_VNF, 3, 1000)]
    assert sent == expected + [APPENDIX_B_RULE, SID_ROUTE]


def test_end_as_uses_the_static_segment_list(tmp_path: Path) -> None:
    res, sent = run_with_fake_ip(tmp_path, "end_as", SrnkOptions(version=2), "vnf0")
    assert res.returncode == 0, res.stderr
    assert sent == ["-6 route add fc00:1:a::1/128 encap seg6local action End.AS oif vnf0 "
                    "nh6 fe80::2 srh segs fc00:2::1 dev vnf0", APPENDIX_B_RULE, SID_ROUTE]


def test_age_must_be_whole_seconds(tmp_path: Path) -> None:
    res, sent = run_with_fake_ip(tmp_path, "end_ad", SrnkOptions(), "vnf0",
                                 SRPERF_SRNK_AGE="0.5")
    assert res.returncode == 2 and "SRPERF_SRNK_AGE must be whole seconds" in res.stderr
    assert sent == []


def test_version_must_be_1_or_2(tmp_path: Path) -> None:
    res, sent = run_with_fake_ip(tmp_path, "end_ad", SrnkOptions(), "vnf0",
                                 SRPERF_SRNK_VERSION="3")
    assert res.returncode == 2 and "SRPERF_SRNK_VERSION must be 1 or 2" in res.stderr
    assert sent == []


def test_refusal_is_unsupported_with_iproute2s_error(tmp_path: Path) -> None:
    res, sent = run_with_fake_ip(tmp_path, "end_ad", SrnkOptions(), "vnf0",
                                 FAKE_IP_FAIL="End.AD")
    assert res.returncode == 3
    assert res.stderr.startswith('unsupported: no SRNK on this SUT: Error: argument "End.AD" '
                                 'is wrong'), res.stderr


def test_clean_removes_v1_rules_and_the_v2_rule(tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "-6_rule_show").write_text(
        "0:\tfrom all lookup local\n32764:\tfrom all iif vnf0 lookup 1000\n"
        "32765:\tfrom all iif s0 lookup 7\n32766:\tfrom all lookup main\n")
    res, sent = run_with_fake_ip(tmp_path, "clean", SrnkOptions(), "vnf0",
                                 FAKE_IP_ANSWERS=str(answers))
    assert res.returncode == 0, res.stderr
    assert sent == ["-6 rule del pref 32764"]


def test_options_reject_a_third_version() -> None:
    with pytest.raises(ValueError, match="version 3"):
        SrnkOptions(version=3)


# --- for real, on this kernel (no SRNK) --------------------------------------------

NS = "srpvp-srnk"
VNF_NS = "srpvp-srnkvnf"


@pytest.fixture()
def sut_with_vnf():
    """A namespace with its VNF veth vnf0 (peer in another namespace); removed after."""
    cmds = [["ip", "netns", "add", NS], ["ip", "netns", "add", VNF_NS],
            ["ip", "-n", NS, "link", "add", "vnf0", "type", "veth", "peer", "name", "eth0",
             "netns", VNF_NS],
            ["ip", "-n", NS, "link", "set", "vnf0", "up"],
            ["ip", "-n", NS, "link", "add", "s1", "type", "veth", "peer", "name", "t1"],
            ["ip", "-n", NS, "link", "set", "s1", "up"],
            ["ip", "-n", NS, "-6", "addr", "add", f"{A.sut_out_ip6}/64", "dev", "s1",
             "nodad"]]
    try:
        for cmd in cmds:
            subprocess.run(cmd, check=True, capture_output=True)
        yield NS
    finally:
        for ns in (NS, VNF_NS):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def state(ns: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                           "ip -6 route show table all; ip -6 rule show"],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.netns
@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("function", ["end_ad", "end_as"])
def test_this_kernel_has_no_srnk(sut_with_vnf: str, version: int, function: str) -> None:
    before = state(sut_with_vnf)
    res = subprocess.run(["ip", "netns", "exec", sut_with_vnf, "bash", str(SCRIPT), function],
                         capture_output=True, text=True, timeout=60,
                         env=env(SrnkOptions(version=version)))
    assert res.returncode == 3, res.stderr
    # iproute2 refuses End.AD ('"action" value is invalid') and SRNKv1's `chain`; it
    # parses SRNKv2's End.AS and the kernel refuses it (RTNETLINK answers: Invalid argument).
    assert res.stderr.startswith("unsupported: no SRNK on this SUT: "), res.stderr
    refused_by = "RTNETLINK answers" if (function, version) == ("end_as", 2) else "Error: "
    assert refused_by in res.stderr, res.stderr
    assert state(sut_with_vnf) == before
