"""The legacy VNF namespaces (srperf/testbeds/vnf.py) and proxies with many VNFs."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from typing import Iterator

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.behaviors import catalogue as behaviors
from srperf.config.model import TestbedConfig
from srperf.drivers.linux import LinuxGenerator
from srperf.forwarders.ebpf.counters import read_counters
from srperf.traffic import delay_line
from srperf.util.netns import netns_names, run
from ebpf_helpers import configure, proxy_testbed
from srperf.testbeds.virtual import VirtualTestbed
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.testbeds.vnf import MODES, VnfSet, sut_vnf_mac, vnf_mac, vnf_sid

TB = TestbedConfig(name="ebp", prefix="ebp")
A = TB.addressing


def test_vnf_addressing() -> None:
    assert vnf_sid(A, 0) == "fc00:1:a::1" and vnf_sid(A, 159) == "fc00:1:a::a0"
    assert vnf_mac(A, 0) == "02:5e:00:10:00:00" and vnf_mac(A, 300) == "02:5e:00:10:01:2c"
    assert sut_vnf_mac(A, 1) == "02:5e:00:20:00:01"
    with pytest.raises(ValueError):
        VnfSet(TB, count=0)
    with pytest.raises(ValueError):
        VnfSet(TB, mode="teleport")
    assert set(MODES) == {"forward", "drop", "sink", "delay", "snat"}


@pytest.fixture(scope="module")
def testbed() -> Iterator[VirtualTestbed]:
    with proxy_testbed(TB) as vt:
        yield vt


def sut_links() -> list[str]:
    out = run(["ip", "-j", "link", "show"], ns=TB.sut_ns).stdout
    return sorted(d["ifname"] for d in json.loads(out) if d["ifname"].startswith("vnf"))


@pytest.mark.netns
def test_up_is_idempotent_and_down_removes_everything(testbed: VirtualTestbed) -> None:
    three = VnfSet(TB, count=3)
    three.up()
    three.up()
    assert three.existing() == ["ebp-vnf0", "ebp-vnf1", "ebp-vnf2"]
    assert sut_links() == ["vnf0", "vnf1", "vnf2"]
    routes = run(["ip", "-6", "route", "show"], ns="ebp-vnf1").stdout
    assert "default via fe80::1 dev eth0" in routes
    assert "fc00:1:a::2 " in routes and "seg6local action End" in routes
    one = VnfSet(TB, count=1)
    one.up()    # fewer VNFs: the others go
    assert one.existing() == ["ebp-vnf0"] and sut_links() == ["vnf0"]
    one.down()
    one.down()
    assert one.existing() == [] and sut_links() == []


def _through_vnf_ms(sut_if: str, index: int, count: int = 5) -> list[float]:
    """Times (ms) frames sent from the SUT's side into VNF ``index`` take to come back."""
    sock = ns_packet_socket(TB.sut_ns, sut_if)
    times = []
    try:
        for i in range(count):
            marker = f"srperf-delay-{i}".encode()
            frame = bytes(Ether(dst=vnf_mac(A, index), src=sut_vnf_mac(A, index))
                          / IPv6(src="2001:db8::1", dst="2001:db8::2")
                          / UDP(sport=4000, dport=4001) / Raw(marker))
            start = time.monotonic()
            sock.send(frame)
            got = False
            while not got and time.monotonic() - start < 2.0:
                got = any(marker in f for f in receive_frames(sock, 0.5, count=1))
            assert got, f"frame {i} did not come back from the VNF"
            times.append(1000 * (time.monotonic() - start))
    finally:
        sock.close()
    return times


@pytest.mark.netns
def test_delay_mode_delays_every_packet(testbed: VirtualTestbed) -> None:
    """netem where the kernel has it, else the user-space delay line: no frame through the
    VNF comes back before delay_ms (a guarantee), and applying the mode again leaves one
    delay, not two (counted: the netem qdiscs or the delay lines' namespaces).  How late
    after delay_ms a frame comes back is the host's load, not asserted."""
    vnfs = VnfSet(TB, count=1, mode="delay", delay_ms=20.0)
    try:
        vnfs.up()
        assert vnfs.delay_method in ("netem", "delay-line")
        assert _delays(vnfs) == 1
        took = _through_vnf_ms(vnfs.links[0].sut_if, 0)
        if vnfs.delay_method == "delay-line":
            assert vnfs.delay_counts()["tx"] >= len(took)
        vnfs.up()   # again (the mode re-applied): still one delay, not two
        assert _delays(vnfs) == 1
        again = _through_vnf_ms(vnfs.links[0].sut_if, 0)
    finally:
        vnfs.down()
    for series in (took, again):
        assert series and 20.0 <= min(series), series
    left = run(["ip", "netns", "list"]).stdout
    assert "ebp-vnf0" not in left   # the VNF and its delay line's namespace are gone


def _delays(vnfs: VnfSet) -> int:
    """Delays applied to VNF 0: netem qdiscs in its namespace, or delay lines (each has
    its own namespace, named after the VNF's)."""
    ns = vnfs.links[0].ns
    if vnfs.delay_method == "netem":
        return run(["tc", "qdisc", "show"], ns=ns).stdout.count(" netem ")
    return len(delay_line.stale_namespaces(netns_names(), ns))


def vnf_forwarded(tb: TestbedConfig, index: int) -> int:
    """Packets VNF ``index`` forwarded (IPv6 plus IPv4, its namespace's SNMP counters).

    Not the eth0 rx counter: a fresh link also receives MLD reports and neighbour
    discovery from the SUT side, and those arrive at any VNF at any time.
    """
    text = run(["cat", "/proc/net/snmp6", "/proc/net/snmp"], ns=tb.vnf_ns(index)).stdout
    v6 = re.search(r"^Ip6OutForwDatagrams\s+(\d+)", text, re.M)
    v4_head, v4_vals = [ln.split() for ln in text.splitlines() if ln.startswith("Ip:")][:2]
    assert v6 is not None, text
    return int(v6.group(1)) + int(v4_vals[v4_head.index("ForwDatagrams")])


@pytest.mark.netns
@pytest.mark.parametrize("target", [0, 9])
def test_end_ad_with_ten_vnfs(testbed: VirtualTestbed, target: int) -> None:
    tb = dataclasses.replace(TB, addressing=dataclasses.replace(A, vnf_target=target))
    vnfs = VnfSet(tb, count=10).up()
    gen = LinuxGenerator(tb.tester_ns, tb.tester.tx.name, tb.tester.rx.name)
    try:
        configure(tb, "end_ad")
        beh = behaviors.get("end_ad")
        frame = beh.build_frame(tb, 64)
        assert frame["IPv6"].dst == vnf_sid(A, target)
        before = [vnf_forwarded(tb, i) for i in range(10)]
        got = [Ether(f) for f in gen.capture([bytes(frame)] * 2, timeout_s=2.0)]
        result = beh.check(tb, frame, got)
        assert result.ok, str(result)
        assert read_counters(tb.sut_ns)["from_ad"] == 2
        # the packets went through VNF `target` and no other
        grew = [vnf_forwarded(tb, i) - before[i] for i in range(10)]
        assert grew[target] == 2 and sum(grew) == 2, grew
    finally:
        gen.close()
        configure(tb, "clean")
        vnfs.down()


@pytest.mark.netns
def test_drop_mode_counts_every_packet(testbed: VirtualTestbed) -> None:
    vnfs = VnfSet(TB, count=1, mode="drop", drop_share=0.5).up()
    gen = LinuxGenerator(TB.tester_ns, TB.tester.tx.name, TB.tester.rx.name, retries=0)
    try:
        configure(TB, "end_ad")   # the drop program sits on the VNF's ingress
        gen.prepare(bytes(behaviors.get("end_ad").build_frame(TB, 64)))
        before = vnfs.drop_counts()
        trial = gen.trial(4000, 0.1)
        after = vnfs.drop_counts()
    finally:
        gen.close()
        configure(TB, "clean")
        vnfs.down()
    passed, dropped = (after[k] - before[k] for k in ("passed", "dropped"))
    assert passed + dropped == trial.sent == 400
    assert 120 < dropped < 280
    assert trial.received == passed
