"""cfg_scripts/vpp.sh against a recording vppctl (tests/doubles/vppctl, FakeVppctl).

No VPP here: FakeVppctl on PATH records every command vpp.sh sends and
answers the show commands from files the test writes (the state VPP would be
in).  Each behavior's configuration commands are checked against the forms of
VPP's SRv6 documentation (sr_localsid.rst, sr_policy.rst, sr_steering.rst and
the srv6-ad/as/am plugin docs), the shared notes' traps (tables created before
the localsid that names them, lowercase behavior names), and the error path:
vppctl exits 0 when a command fails, so any text it prints fails the function
with that text, and nothing stays configured.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.forwarders.common_env import addressing_env
from srperf.forwarders.vpp import VppOptions, binding_sid, vpp_env
from srperf.resources import cfg_script

SCRIPT = cfg_script("vpp")
DOUBLES = Path(__file__).parent / "doubles"
TB = TestbedConfig(name="srpvp", prefix="srpvp")
BSID = binding_sid(TB)
A = TB.addressing
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SRPERF_", "FAKE_"))}

# The commands `clean` sends on a VPP where nothing of ours is configured and
# table 100 does not exist (the three route deletions are no-ops in VPP).
CLEAN_NOTHING = [
    f"ip route del fc00::/16 via {A.tester_rx_ip6} host-s1",
    f"ip route del 2001:2:0:b::/64 via {A.tester_rx_ip6} host-s1",
    f"ip route del 198.19.0.0/16 via {A.tester_rx_ip4} host-s1",
]
SID_ROUTE = f"ip route add fc00::/16 via {A.tester_rx_ip6} host-s1"
TABLES = ["ip table add 100", "ip6 table add 100"]
FAKE_MAC = "02:fa:6e:00:00:01"
VNF0 = [f"create host-interface name vnf0 hw-addr {FAKE_MAC} cksum-gso-disable",
        "set interface state host-vnf0 up", "set interface rx-mode host-vnf0 polling",
        "enable ip6 interface host-vnf0",
        "set ip neighbor host-vnf0 fe80::2 02:5e:00:10:00:00 static"]

# behavior -> the configuration commands after clean, as VPP's docs write them.
EXPECTED: dict[str, list[str]] = {
    "ipv6": [f"ip route add 2001:2:0:b::/64 via {A.tester_rx_ip6} host-s1"],
    "ipv4": [f"ip route add 198.19.0.0/16 via {A.tester_rx_ip4} host-s1"],
    "h_insert": [SID_ROUTE, f"sr policy add bsid {BSID} next fc00:2::1 insert",
                 f"sr steer l3 2001:2:0:b::/64 via bsid {BSID}"],
    "h_encaps": [SID_ROUTE, f"sr policy add bsid {BSID} next fc00:2::1 next fc00:3::1 encap",
                 f"sr steer l3 2001:2:0:b::/64 via bsid {BSID}"],
    "h_encaps_v4": [SID_ROUTE,
                    f"sr policy add bsid {BSID} next fc00:2::1 next fc00:3::1 encap",
                    f"sr steer l3 198.19.0.0/16 via bsid {BSID}"],
    "h_encaps_l2": [SID_ROUTE,
                    f"sr policy add bsid {BSID} next fc00:2::1 next fc00:3::1 encap",
                    f"sr steer l2 host-s0 via bsid {BSID}"],
    "end": [SID_ROUTE, "sr localsid address fc00:1::1 behavior end"],
    "end_x": [SID_ROUTE, f"sr localsid address fc00:1::1 behavior end.x host-s1 "
                         f"{A.tester_rx_ip6}"],
    "end_t": [*TABLES, f"ip route add fc00::/16 table 100 via {A.tester_rx_ip6} host-s1",
              "sr localsid address fc00:1::1 behavior end.t 100"],
    "end_dx2": ["sr localsid address fc00:1::1 behavior end.dx2 host-s1"],
    "end_dx4": [f"sr localsid address fc00:1::1 behavior end.dx4 host-s1 {A.tester_rx_ip4}"],
    "end_dx6": [f"sr localsid address fc00:1::1 behavior end.dx6 host-s1 {A.tester_rx_ip6}"],
    "end_dt4": [*TABLES, f"ip route add 198.19.0.0/16 table 100 via {A.tester_rx_ip4} host-s1",
                "sr localsid address fc00:1::1 behavior end.dt4 100"],
    "end_dt6": [*TABLES,
                f"ip route add 2001:2:0:b::/64 table 100 via {A.tester_rx_ip6} host-s1",
                "sr localsid address fc00:1::1 behavior end.dt6 100"],
    "end_b6_encaps": [SID_ROUTE, "sr policy add bsid fc00:1::1 next fc00:3::1 next fc00:2::1 "
                                 "encap"],
    "end_b6": [SID_ROUTE, "sr policy add bsid fc00:1::1 next fc00:3::1 next fc00:2::1 insert"],
    "end_ad": [SID_ROUTE, *VNF0, "sr localsid address fc00:1:a::1 behavior end.ad nh fe80::2 "
                                 "oif host-vnf0 iif host-vnf0"],
    "end_as": [SID_ROUTE, *VNF0, "sr localsid address fc00:1:a::1 behavior end.as nh fe80::2 "
                                 f"oif host-vnf0 iif host-vnf0 src {A.tester_tx_ip6} "
                                 "next fc00:2::1"],
    "end_am": [SID_ROUTE, *VNF0, "sr localsid address fc00:1:a::1 behavior end.am nh fe80::2 "
                                 "oif host-vnf0 iif host-vnf0"],
}
PLUGINS = {"end_ad": "srv6ad", "end_as": "srv6as", "end_am": "srv6am"}


class FakeVpp:
    """FakeVppctl's log and answers, a CLI socket file, and the script's environment."""

    def __init__(self, tmp: Path) -> None:
        self.log = tmp / "vppctl.log"
        self.answers = tmp / "answers"
        self.answers.mkdir()
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for tool in ("vppctl", "ip"):
            (self.bin / tool).symlink_to(DOUBLES / tool)
        self.sock = tmp / "cli.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.sock))
        self.extra: dict[str, str] = {"FAKE_IP_LOG": str(tmp / "ip.log"),
                                      "FAKE_IP_LINKS": "vnf0 s0 s1", "FAKE_IP_MAC": FAKE_MAC}
        # What VPP answers (empty) for a table it does not have.
        self.answer("show ip fib table 100 summary", "")
        self.answer("show ip6 fib table 100 summary", "")
        self.answer("show plugins", "\n".join(f" {i}. {p}_plugin.so  SRv6 proxy"
                                              for i, p in enumerate(PLUGINS.values())))

    def close(self) -> None:
        self._listener.close()

    def answer(self, command: str, text: str) -> None:
        (self.answers / command.replace(" ", "_").replace("/", "%")).write_text(text + "\n")

    def env(self) -> dict[str, str]:
        return dict(BASE_ENV, **addressing_env(TB),
                    **vpp_env(TB, VppOptions(cli_sock=str(self.sock))),
                    PATH=f"{self.bin}{os.pathsep}{BASE_ENV['PATH']}",
                    FAKE_VPPCTL_LOG=str(self.log), FAKE_VPPCTL_ANSWERS=str(self.answers),
                    **self.extra)

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
        if self.log.exists():
            self.log.unlink()
        return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                              env=dict(self.env(), **extra), timeout=60)

    def commands(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def config_commands(self) -> list[str]:
        """What was sent, show commands left out."""
        return [c for c in self.commands() if not c.startswith("show ")]


@pytest.fixture()
def vpp(tmp_path: Path):
    fake = FakeVpp(tmp_path)
    try:
        yield fake
    finally:
        fake.close()


def test_script_parses_and_passes_shellcheck() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed")
    res = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout


def test_every_behavior_has_an_expected_sequence() -> None:
    listed = subprocess.run(["bash", str(SCRIPT), "functions"], capture_output=True,
                            text=True, env=BASE_ENV, check=True).stdout.split()
    assert set(listed) - {"clean", "setup", "version"} == set(EXPECTED)


@pytest.mark.parametrize("behavior", sorted(EXPECTED))
def test_behavior_sends_the_documented_commands(vpp: FakeVpp, behavior: str) -> None:
    res = vpp.run(behavior)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), res.stderr
    assert vpp.config_commands() == CLEAN_NOTHING + EXPECTED[behavior]


@pytest.mark.parametrize("behavior", ["end_t", "end_dt4", "end_dt6"])
def test_tables_exist_before_the_localsid_names_them(vpp: FakeVpp, behavior: str) -> None:
    assert vpp.run(behavior).returncode == 0
    sent = vpp.config_commands()
    localsid = next(i for i, c in enumerate(sent) if c.startswith("sr localsid"))
    assert sent.index("ip6 table add 100") < localsid and sent.index("ip table add 100") < localsid


def test_clean_removes_what_vpp_shows(vpp: FakeVpp) -> None:
    """Every object of ours that VPP lists is deleted, steering before policies before
    localsids, routes before their table."""
    vpp.answer("show sr steering-policies",
               f"Traffic\t\tSR policy BSID\nL3 2001:2:0:b::/64\t{BSID}\n"
               f"L3 198.19.0.0/16\t{BSID}\nL2 host-s0\t{BSID}")
    vpp.answer("show sr policies", f"[0].-\tBSID: {BSID}\n\tSegment Lists:\n"
                                   "\t[0].- < fc00:2::1, fc00:3::1 > weight: 1")
    vpp.answer("show interface", "host-s0 1 up\nhost-s1 2 up\nhost-vnf0 3 up")
    vpp.answer("show sr localsids", "\tAddress: \tfc00:1:a::1/128\n\tBehavior: \tEnd.AD")
    vpp.answer("show ip fib table 100 summary", "ipv4-VRF:100, fib_index:1, flow hash:[src]")
    vpp.answer("show ip6 fib table 100 summary", "ipv6-VRF:100, fib_index:1, flow hash:[src]")
    res = vpp.run("clean")
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    assert vpp.config_commands() == [
        "sr steer del l3 2001:2:0:b::/64", "sr steer del l3 198.19.0.0/16",
        "sr steer del l2 host-s0", f"sr policy del bsid {BSID}",
        "sr localsid del address fc00:1:a::1", "delete host-interface name vnf0",
        *CLEAN_NOTHING,
        f"ip route del fc00::/16 table 100 via {A.tester_rx_ip6} host-s1",
        f"ip route del 2001:2:0:b::/64 table 100 via {A.tester_rx_ip6} host-s1",
        "ip6 table del 100",
        f"ip route del 198.19.0.0/16 table 100 via {A.tester_rx_ip4} host-s1",
        "ip table del 100",
    ]


def test_clean_on_a_clean_vpp_deletes_nothing_it_does_not_have(vpp: FakeVpp) -> None:
    res = vpp.run("clean")
    assert (res.returncode, res.stderr) == (0, ""), res.stderr
    assert vpp.config_commands() == CLEAN_NOTHING


def test_vppctl_error_text_fails_the_function_and_cleans(vpp: FakeVpp) -> None:
    """vppctl exits 0 on failure: the text it prints is the failure."""
    res = vpp.run("end_x", FAKE_VPPCTL_FAIL="behavior end.x")
    assert res.returncode == 1, res.stderr
    bad = f"sr localsid address fc00:1::1 behavior end.x host-s1 {A.tester_rx_ip6}"
    assert f"vppctl {bad} failed: sr: unknown input `localsid address" in res.stderr
    sent = vpp.config_commands()
    # The EXIT trap cleaned after the failure: the route it had added is deleted again.
    assert sent[sent.index(bad) + 1:] == CLEAN_NOTHING


def test_missing_proxy_plugin_is_unsupported(vpp: FakeVpp) -> None:
    vpp.answer("show plugins", " 0. af_packet_plugin.so  af_packet")
    res = vpp.run("end_ad")
    assert res.returncode == 3
    assert res.stderr.startswith("unsupported: VPP plugin srv6ad_plugin.so is not loaded")
    assert not any(c.startswith("sr localsid address") for c in vpp.config_commands())


def test_no_vppctl_is_unsupported_and_clean_has_nothing_to_do(vpp: FakeVpp) -> None:
    (vpp.bin / "vppctl").unlink()
    res = vpp.run("end")
    assert (res.returncode, res.stderr) == (3, "unsupported: no vppctl on the SUT (SRPERF_VPPCTL=vppctl)\n")
    res = vpp.run("clean")
    assert (res.returncode, res.stderr) == (0, "")


def test_no_socket_is_unsupported(vpp: FakeVpp) -> None:
    res = vpp.run("end", SRPERF_VPP_CLI_SOCK=str(vpp.sock) + ".missing")
    assert res.returncode == 3 and "VPP is not running" in res.stderr
    assert vpp.commands() == []


def test_setup_creates_host_interfaces_addresses_neighbours_and_source(vpp: FakeVpp) -> None:
    res = vpp.run("setup")
    assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), res.stderr
    assert vpp.config_commands() == [
        f"create host-interface name s0 hw-addr {FAKE_MAC} cksum-gso-disable",
        f"create host-interface name s1 hw-addr {FAKE_MAC} cksum-gso-disable",
        "set interface state host-s0 up", "set interface rx-mode host-s0 polling",
        "set interface state host-s1 up", "set interface rx-mode host-s1 polling",
        f"set interface ip address host-s0 {A.sut_in_ip6}/64",
        f"set interface ip address host-s0 {A.sut_in_ip4}/24",
        f"set interface ip address host-s1 {A.sut_out_ip6}/64",
        f"set interface ip address host-s1 {A.sut_out_ip4}/24",
        "ip6 nd host-s0 ra-suppress", "ip6 nd host-s1 ra-suppress",
        f"set ip neighbor host-s0 {A.tester_tx_ip6} {A.tester_tx_mac} static",
        f"set ip neighbor host-s0 {A.tester_tx_ip4} {A.tester_tx_mac} static",
        f"set ip neighbor host-s1 {A.tester_rx_ip6} {A.tester_rx_mac} static",
        f"set ip neighbor host-s1 {A.tester_rx_ip4} {A.tester_rx_mac} static",
        f"set sr encaps source addr {A.tunsrc}",
    ]


def test_setup_rejects_a_bad_af_packet_value(vpp: FakeVpp) -> None:
    res = vpp.run("setup", SRPERF_VPP_AF_PACKET="yes")
    assert res.returncode == 2 and "SRPERF_VPP_AF_PACKET must be 1 or 0" in res.stderr
    assert vpp.commands() == []


def test_setup_rejects_a_bad_rx_mode(vpp: FakeVpp) -> None:
    res = vpp.run("setup", SRPERF_VPP_RX_MODE="busy")
    assert res.returncode == 2 and "SRPERF_VPP_RX_MODE must be polling" in res.stderr
    assert vpp.commands() == []


def test_version_prints_the_first_line(vpp: FakeVpp) -> None:
    vpp.answer("show version", "vpp v26.10-rc0~374-gb575ec2c5 built by root\nmore")
    res = vpp.run("version")
    assert (res.returncode, res.stdout) == (0, "vpp v26.10-rc0~374-gb575ec2c5 built by root\n")
