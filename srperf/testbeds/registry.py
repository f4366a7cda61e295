"""Testbed kinds: one module each, one interface (:class:`srperf.testbeds.base.Testbed`)."""

from __future__ import annotations

from srperf.config.model import TestbedConfig
from srperf.testbeds.base import Testbed, TestbedError
from srperf.testbeds.kernel_vm import KernelTestbed
from srperf.testbeds.simulated import SimulatedTestbed
from srperf.testbeds.ssh import SshTestbed
from srperf.testbeds.virtual import VirtualTestbed

KINDS: dict[str, type[Testbed]] = {k.kind: k for k in (VirtualTestbed, SshTestbed,
                                                       SimulatedTestbed, KernelTestbed)}


def create(config: TestbedConfig) -> Testbed:
    """The testbed object for ``config`` (its ``kind`` picks the class)."""
    return KINDS[config.kind](config)


__all__ = ["Testbed", "TestbedError", "KINDS", "create"]
