"""Test helper: run one function of ebpf.sh in a virtual testbed's SUT namespace."""

from __future__ import annotations

from srperf.config.model import TestbedConfig
from srperf.forwarders.ebpf import DEFAULT_SETTINGS, EbpfOptions, ProxySettings
from srperf.testbeds.sut import configure as configure_forwarder


def configure(tb: TestbedConfig, function: str,
              settings: ProxySettings = DEFAULT_SETTINGS) -> None:
    """``ebpf.sh FUNCTION`` on the SUT of ``tb`` with proxy ``settings``."""
    configure_forwarder(tb, "ebpf", function, EbpfOptions(proxy=settings))
