"""cfg_scripts/linux.sh on a real namespace testbed (prefix ``lxc``).

For every Linux behavior: the script installs the expected routes, quietly and
idempotently; the behavior's test frame, sent from the tester, comes out of the
SUT transformed exactly as the catalogue's check() demands; ``clean`` restores
the SUT's state as the testbed left it.  Behaviors the kernel refuses (End.DT4,
End.DT6 in VRF mode and End.DT46 need VRF) must exit 3 with the kernel's own reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from srperf.behaviors import catalogue as B
from srperf.forwarders import registry as forwarders
from srperf.forwarders.common_env import addressing_env
from srperf.config.model import TestbedConfig
from srperf.util.netns import run
from srperf.traffic.packet_socket import send_and_capture
from sut_state import state_diff

SCRIPT = Path(__file__).resolve().parents[1] / "cfg_scripts" / "linux.sh"
TB = TestbedConfig(name="lxc", prefix="lxc")
A = TB.addressing
SUT, TESTER = TB.sut_ns, TB.tester_ns
OUT = TB.sut.out_port.name
VRF_BEHAVIORS = {"end_dt4", "end_dt46", "end_dt6_vrf", "end_dt46_v4"}

S6 = A.sid_sut
SEG6LOCAL = "seg6local"
# Routes each function must install: (family, table, prefix, fields of `ip -j route`).
ROUTES: dict[str, list[tuple[int, str, str, dict]]] = {
    "ipv6": [(6, "main", A.dst_prefix6, {"gateway": A.tester_rx_ip6, "dev": OUT})],
    "ipv4": [(4, "main", A.dst_prefix4, {"gateway": A.tester_rx_ip4, "dev": OUT})],
    # inline mode: iproute2 reserves the SRH's last slot for the original DA ("::")
    "h_insert": [(6, "main", A.dst_prefix6, {"encap": "seg6", "mode": "inline",
                                             "segs": [A.sid_next, "::"]}),
                 (6, "main", A.sid_prefix, {"gateway": A.tester_rx_ip6})],
    "h_encaps": [(6, "main", A.dst_prefix6, {"encap": "seg6", "mode": "encap",
                                             "segs": [A.sid_next, A.sid_last]}),
                 (6, "main", A.sid_prefix, {"gateway": A.tester_rx_ip6})],
    "h_encaps_v4": [(4, "main", A.dst_prefix4, {"encap": "seg6", "mode": "encap",
                                                "segs": [A.sid_next, A.sid_last]}),
                    (6, "main", A.sid_prefix, {"gateway": A.tester_rx_ip6})],
    "h_encaps_l2": [(6, "main", A.dst_prefix6, {"encap": "seg6", "mode": "l2encap"})],
    "h_encaps_red": [(6, "main", A.dst_prefix6, {"encap": "seg6", "mode": "encap.red"})],
    "h_encaps_l2_red": [(6, "main", A.dst_prefix6, {"encap": "seg6", "mode": "l2encap.red"})],
    "end": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End"}),
            (6, "main", A.sid_prefix, {"gateway": A.tester_rx_ip6})],
    "end_x": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.X",
                               "nh6": A.tester_rx_ip6})],
    "end_t": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.T", "table": str(A.table)}),
              (6, str(A.table), A.sid_prefix, {"gateway": A.tester_rx_ip6})],
    "end_dx2": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.DX2", "oif": OUT})],
    "end_dx4": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.DX4",
                                 "nh4": A.tester_rx_ip4})],
    "end_dx6": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.DX6",
                                 "nh6": A.tester_rx_ip6})],
    "end_dt6": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.DT6",
                                 "table": str(A.table)}),
                (6, str(A.table), A.dst_prefix6, {"gateway": A.tester_rx_ip6})],
    "end_b6_encaps": [(6, "main", S6, {"encap": SEG6LOCAL, "action": "End.B6.Encaps",
                                       "srh": {"segs": [A.sid_last, A.sid_next]}})],
    "end_next_csid": [(6, "main", A.csid_prefix(A.csid_sut),
                       {"encap": SEG6LOCAL, "action": "End", "flavors": ["next-csid"],
                        "lblen": A.csid_lblen, "nflen": A.csid_nflen}),
                      (6, "main", A.csid_block_prefix, {"gateway": A.tester_rx_ip6})],
    "end_dt4": [],
    "end_dt46": [],
    "end_dt6_vrf": [],
    "end_dt46_v4": [],
}
# Routes that must NOT be in the main table (the behavior must use its own table).
NOT_IN_MAIN = {"end_t": [(6, A.sid_prefix)], "end_dt6": [(6, A.dst_prefix6)]}

netns = pytest.mark.netns


def script(function: str, env: dict[str, str] | None = None, *args: str
           ) -> subprocess.CompletedProcess:
    """Run ``bash linux.sh FUNCTION`` in the SUT namespace with the catalogue's env."""
    full_env = dict(os.environ, **(addressing_env(TB) if env is None else env))
    return subprocess.run(["ip", "netns", "exec", SUT, "bash", str(SCRIPT), function, *args],
                          capture_output=True, text=True, env=full_env, timeout=60)


def routes(family: int, prefix: str, table: str) -> list[dict]:
    res = run(["ip", "-j", f"-{family}", "route", "show", "exact", prefix, "table", table],
              ns=SUT, check=False)
    return json.loads(res.stdout) if res.ok and res.stdout.strip() else []


def sut_state() -> dict[str, object]:
    """Everything linux.sh may touch, and the base setup it must keep."""
    def j(*argv: str) -> list:
        out = run(["ip", "-j", *argv], ns=SUT).stdout
        return json.loads(out) if out.strip() else []

    def canon(items: list) -> list[str]:
        return sorted(json.dumps(i, sort_keys=True) for i in items)

    return {
        "routes6": canon(j("-6", "route", "show", "table", "all")),
        "routes4": canon(j("-4", "route", "show", "table", "all")),
        "rules6": canon(j("-6", "rule", "show")),
        "rules4": canon(j("-4", "rule", "show")),
        "links": sorted(link["ifname"] for link in j("link", "show")),
        "addrs": canon([{"dev": i["ifname"], "addr": [a["local"] for a in i["addr_info"]]}
                        for i in j("addr", "show")]),
        "neigh": canon([n for n in j("neigh", "show") if "PERMANENT" in n.get("state", [])]),
        "tunsrc": run(["ip", "sr", "tunsrc", "show"], ns=SUT).stdout.strip(),
    }


def assert_state(expected: dict[str, object], what: str) -> None:
    diff = state_diff(sut_state(), expected)
    assert not diff, f"{what}:\n{diff}"


class Capturer:
    """Send frames on the tester's tx port and collect what reaches its rx port."""

    def exchange(self, frames: list[bytes], timeout_s: float = 1.0) -> list[bytes]:
        return send_and_capture(TESTER, TB.tester.tx.name, TB.tester.rx.name, frames,
                                timeout_s)


@pytest.fixture(scope="module")
def testbed():
    """The virtual testbed, XDP sink off on the rx port so frames can be captured."""
    from srperf.testbeds.virtual import VirtualTestbed
    from srperf.drivers.linux_sink import detach_sink

    vt = VirtualTestbed(TB)
    try:
        vt.up()
        detach_sink(TESTER, TB.tester.rx.name)
        yield vt
    finally:
        vt.down()


@pytest.fixture(scope="module")
def baseline(testbed) -> dict[str, object]:
    """The SUT's state as the testbed made it, once the kernel has settled.

    Right after the links come up the kernel still adds routes of its own
    (ff00::/8 multicast routes when the carrier appears).
    """
    res = script("clean")
    assert res.returncode == 0, res.stderr
    state = sut_state()
    for _ in range(25):
        time.sleep(0.2)
        again = sut_state()
        if again == state:
            return state
        state = again
    raise AssertionError("the SUT's routes kept changing for 5 s after the testbed came up")


@pytest.fixture(scope="module")
def capturer(testbed):
    return Capturer()


@pytest.fixture(scope="module")
def vrf_refusal(testbed) -> str | None:
    """The kernel's own error for a VRF device, None if this kernel has VRF."""
    res = run(["ip", "link", "add", "lxc-vrfprobe", "type", "vrf", "table", "4242"],
              ns=SUT, check=False)
    if res.ok:
        run(["ip", "link", "del", "lxc-vrfprobe"], ns=SUT)
        return None
    return res.stderr.strip()


def assert_routes(name: str) -> None:
    for family, table, prefix, fields in ROUTES[name]:
        found = routes(family, prefix, table)
        assert len(found) == 1, f"{name}: expected one route {prefix} in table {table}: {found}"
        for key, value in fields.items():
            assert found[0].get(key) == value, f"{name}: {prefix} {key}: {found[0]}"
    for family, prefix in NOT_IN_MAIN.get(name, []):
        assert not routes(family, prefix, "main"), f"{name}: {prefix} must not be in main"


@netns
@pytest.mark.parametrize("name", forwarders.get("linux").behaviors)
def test_behavior_on_real_sut(name, baseline, capturer, vrf_refusal):
    behavior = B.get(name)
    res = script(behavior.cfg_function)
    if name in VRF_BEHAVIORS and vrf_refusal is not None:
        assert res.returncode == 3, (res.returncode, res.stderr)
        assert res.stderr.startswith("unsupported: "), res.stderr
        assert vrf_refusal in res.stderr, (vrf_refusal, res.stderr)
        assert_state(baseline, "an unsupported behavior left configuration behind")
        return
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and res.stderr == "", "CFG functions must be quiet on success"
    assert_routes(name)
    configured = sut_state()
    again = script(behavior.cfg_function)           # idempotent
    assert again.returncode == 0, again.stderr
    assert_state(configured, "a second run changed the configuration")

    frame = behavior.build_frame(TB, 64)
    received = capturer.exchange([bytes(frame)])
    result = behavior.check(TB, frame, received)
    assert result.ok, str(result)

    res = script("clean")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert_state(baseline, f"clean after {name} did not restore the SUT")


@netns
def test_check_fails_when_the_sut_does_something_else(baseline, capturer):
    """The End.B6.Encaps check rejects what plain End makes of the same frame."""
    assert script("end").returncode == 0
    try:
        b6 = B.get("end_b6_encaps")
        frame = b6.build_frame(TB, 64)
        received = capturer.exchange([bytes(frame)])
        assert received, "End forwarded nothing"
        result = b6.check(TB, frame, received)
        assert not result.ok
        assert A.tunsrc in result.expected
        assert f"src: expected '{A.tunsrc}', got '{A.tester_tx_ip6}'" in result.got, result.got
        assert B.get("end").check(TB, frame, received).ok
    finally:
        assert script("clean").returncode == 0


@netns
def test_check_fails_when_nothing_arrives(baseline, capturer):
    assert script("ipv6").returncode == 0      # no route for the SUT's SID
    try:
        frame = B.get("end").build_frame(TB, 64)
        result = B.get("end").check(TB, frame, capturer.exchange([bytes(frame)], 0.5))
        assert not result.ok and "no test frame" in result.got
    finally:
        assert script("clean").returncode == 0


@netns
def test_clean_on_a_clean_sut_is_quiet(baseline):
    for _ in range(2):
        res = script("clean")
        assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert_state(baseline, "the SUT changed")


@netns
def test_usage_errors_exit_2(baseline):
    res = script("no_such_behavior")
    assert res.returncode == 2 and "unknown function 'no_such_behavior'" in res.stderr
    assert "end_dx6" in res.stderr
    res = script("end", None, "extra-argument")
    assert res.returncode == 2 and "usage" in res.stderr
    env = addressing_env(TB)
    del env["SRPERF_SID_SUT"]
    res = script("end", env)
    assert res.returncode == 2 and "SRPERF_SID_SUT" in res.stderr
    assert_state(baseline, "the SUT changed")


@netns
def test_failing_command_exits_1_with_the_reason(baseline):
    env = dict(addressing_env(TB), SRPERF_OUT_IF="lxc-nodev")
    res = script("end_dx6", env)
    assert res.returncode == 1
    assert "lxc-nodev" in res.stderr and "failed" in res.stderr
    assert script("clean").returncode == 0
    assert_state(baseline, "the SUT changed")


def test_shellcheck_passes():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    res = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
