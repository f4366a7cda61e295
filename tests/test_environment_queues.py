"""The SUT's receive queues and their CPUs in a run's environment (srperf.measure.environment)."""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

from srperf.measure.environment import _cpus_of_mask, node, rx_queues
from srperf.util.netns import run
from srperf.transports.netns import NetnsTransport

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")


@pytest.mark.parametrize("mask,cpus", [("0", []), ("00000000,00000005", [0, 2]),
                                       ("f", [0, 1, 2, 3]), ("-", [])])
def test_rps_masks(mask: str, cpus: list[int]) -> None:
    assert _cpus_of_mask(mask) == cpus


@needs_root
@pytest.mark.netns
def test_queues_and_rps_cpus_of_a_port() -> None:
    """A 4-queue veth whose rx-2 has RPS on CPU 1: every queue listed, RPS as set, a
    missing port named, no interrupts (a veth has none)."""
    ns = f"s24a-q{uuid.uuid4().hex[:5]}"
    try:
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", "q0", "numrxqueues", "4", "type", "veth", "peer", "name",
             "q1"], ns=ns)
        run(["sh", "-c", "echo 2 > /sys/class/net/q0/queues/rx-2/rps_cpus"], ns=ns)
        with NetnsTransport(ns) as t:
            got = rx_queues(t, ["q0", "nosuch"])
            env = node(t, ["q0"])
    finally:
        run(["ip", "netns", "del", ns], check=False)
    assert [q["queue"] for q in got["q0"]["queues"]] == ["rx-0", "rx-1", "rx-2", "rx-3"]
    assert [q["rps_cpus"] for q in got["q0"]["queues"]] == [[], [], [1], []]
    assert got["q0"]["irqs"] == []
    assert got["nosuch"] == {"error": "no interface nosuch"}
    assert env["rx_queues"]["q0"] == got["q0"]


def test_interrupts_of_a_pci_port_are_listed() -> None:
    """On a host with a PCI (MSI-X) NIC, its interrupts, their CPUs and counts."""
    ports = [p for p in os.listdir("/sys/class/net")
             if os.path.isdir(f"/sys/class/net/{p}/device/msi_irqs")]
    if not ports:
        pytest.skip("no port with MSI interrupts on this host")
    with NetnsTransport(None) as t:
        got = rx_queues(t, ports[:1])[ports[0]]
    irqs = sorted(int(n) for n in os.listdir(f"/sys/class/net/{ports[0]}/device/msi_irqs"))
    assert [i["irq"] for i in got["irqs"]] == irqs
    assert all(i["cpus"] not in ("", "-") for i in got["irqs"])
