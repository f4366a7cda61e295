"""Test helper: run one function of ebpf.sh in a virtual testbed's SUT namespace."""

from __future__ import annotations

from srperf.config.model import TestbedConfig
from srperf.forwarders.ebpf import DEFAULT_SETTINGS, EbpfOptions, ProxySettings
from srperf.testbeds.sut import configure as configure_forwarder


def configure(tb: TestbedConfig, function: str,
              settings: ProxySettings = DEFAULT_SETTINGS) -> None:
    """``ebpf.sh FUNCTION`` on the SUT of ``tb`` with proxy ``settings``."""
    configure_forwarder(tb, "ebpf", function, EbpfOptions(proxy=settings))


def local_env(tb: TestbedConfig, settings: ProxySettings = DEFAULT_SETTINGS) -> dict[str, str]:
    """Every SRPERF_* variable ebpf.sh reads, for a SUT namespace of this host (objects and
    sources where srperf builds them here)."""
    from srperf.forwarders.common_env import addressing_env
    from srperf.forwarders.ebpf import proxy_env
    from srperf.forwarders.ebpf.build import ebpf_build_dir
    from srperf.resources import ebpf_dir

    return {**addressing_env(tb), **proxy_env(tb, settings),
            "SRPERF_EBPF_DIR": str(ebpf_dir()), "SRPERF_BUILD_DIR": str(ebpf_build_dir())}
