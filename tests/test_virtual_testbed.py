"""The virtual testbed: built as specified, idempotent, and `down` leaves nothing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.util.netns import run
from srperf.testbeds.virtual import VirtualTestbed, napi_threads

pytestmark = pytest.mark.netns


@pytest.fixture
def testbed():
    vt = VirtualTestbed(TestbedConfig(name="t", prefix="srpt"))
    try:
        vt.up()
        yield vt
    finally:
        vt.down()


def _links(ns: str) -> dict[str, dict]:
    return {link["ifname"]: link for link in
            json.loads(run(["ip", "-j", "-d", "link", "show"], ns=ns).stdout)}


def test_topology(testbed: VirtualTestbed) -> None:
    tb = testbed.tb
    a = tb.addressing
    assert testbed.namespaces() == ["srpt-sut", "srpt-tester"]
    sut, tester = _links("srpt-sut"), _links("srpt-tester")
    assert sut["s0"]["address"] == a.sut_in_mac and tester["t0"]["address"] == a.tester_tx_mac
    assert tester["t1"].get("xdp"), "XDP sink must be attached on tester rx"
    neigh = run(["ip", "-6", "neigh", "show", "dev", "s1"], ns="srpt-sut").stdout
    assert a.tester_rx_ip6 in neigh and "PERMANENT" in neigh and a.tester_rx_mac in neigh
    assert a.tunsrc in run(["ip", "sr", "tunsrc", "show"], ns="srpt-sut").stdout
    fwd = run(["sysctl", "-n", "net.ipv6.conf.all.forwarding"], ns="srpt-sut").stdout.strip()
    assert fwd == "1"
    # The tester has no IP stack on its ports (no ND/MLD noise in the counters).
    assert run(["ip", "-6", "addr", "show", "dev", "t0"], ns="srpt-tester").stdout.strip() == ""
    threaded = run(["cat", "/sys/class/net/s0/threaded"], ns="srpt-sut").stdout.strip()
    assert threaded == "1"
    gro = run(["ethtool", "-k", "s0"], ns="srpt-sut").stdout
    assert "generic-receive-offload: on" in gro
    assert "generic-receive-offload: off" in run(["ethtool", "-k", "s1"], ns="srpt-sut").stdout


def test_napi_thread_pinned_and_fifo(testbed: VirtualTestbed) -> None:
    threads = napi_threads("s0")
    assert threads
    mine = []
    for t in threads:
        affinity = run(["taskset", "-pc", str(t.pid)]).stdout
        policy = run(["chrt", "-p", str(t.pid)]).stdout
        if affinity.strip().endswith(": 1") and "SCHED_FIFO" in policy and "50" in policy:
            mine.append(t)
    assert mine, f"no s0 NAPI thread pinned to CPU 1 at FIFO 50 among {threads}"


def test_up_is_idempotent_and_repairs(testbed: VirtualTestbed) -> None:
    testbed.up()  # already up: no error, no change
    assert testbed.is_up()
    run(["ip", "link", "del", "s1"], ns="srpt-sut")  # break it (peer t1 goes too)
    assert not testbed.is_up()
    testbed.up()
    assert testbed.is_up()


def test_down_leaves_nothing() -> None:
    vt = VirtualTestbed(TestbedConfig(name="t", prefix="srpt"))
    vt.up()
    vt.down()
    vt.down()  # twice is fine
    out = run(["ip", "netns", "list"]).stdout
    assert "srpt-" not in out
    assert not Path("/sys/fs/bpf/srperf-srpt-sut").exists()


def test_two_prefixes_coexist() -> None:
    a = VirtualTestbed(TestbedConfig(name="a", prefix="srpt"))
    b = VirtualTestbed(TestbedConfig(name="b", prefix="srpta"))
    try:
        a.up()
        b.up()
        assert a.is_up() and b.is_up()
        assert set(a.namespaces()) == {"srpt-sut", "srpt-tester"}
        assert set(b.namespaces()) == {"srpta-sut", "srpta-tester"}
    finally:
        a.down()
        b.down()
    assert "srpt" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                        text=True).stdout


def test_cli_testbed_up_down(tmp_path: Path) -> None:
    from srperf.cli.entry import main

    cfg = tmp_path / "tb.yaml"
    cfg.write_text("name: cli\nkind: virtual\nprefix: srpcli\n")
    try:
        assert main(["testbed", "up", str(cfg)]) == 0
        assert os.path.exists("/run/netns/srpcli-sut")
    finally:
        assert main(["testbed", "down", str(cfg)]) == 0
    assert not os.path.exists("/run/netns/srpcli-sut")


def test_optional_napi_deferral() -> None:
    import dataclasses

    from srperf.config.model import SutConfig

    tb = TestbedConfig(name="d", prefix="srpt", sut=dataclasses.replace(
        SutConfig(), napi_defer_hard_irqs=2, gro_flush_timeout_us=20))
    vt = VirtualTestbed(tb)
    try:
        vt.up()
        read = run(["sh", "-c", "cat /sys/class/net/s0/napi_defer_hard_irqs "
                    "/sys/class/net/s0/gro_flush_timeout"], ns="srpt-sut").stdout.split()
        assert read == ["2", "20000"]
    finally:
        vt.down()
