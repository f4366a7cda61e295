"""Test helpers: run one function of ebpf.sh in a virtual testbed's SUT namespace; the
testbed, generator and VNF every proxy test module sets up, each removed afterwards."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from srperf.config.model import TestbedConfig
from srperf.forwarders.ebpf.forwarder import DEFAULT_SETTINGS, EbpfOptions, ProxySettings
from srperf.testbeds.sut import configure as configure_forwarder

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing only: these import scapy and the generator
    from srperf.drivers.linux import LinuxGenerator
    from srperf.testbeds.virtual import VirtualTestbed
    from srperf.testbeds.vnf import VnfSet


def configure(tb: TestbedConfig, function: str,
              settings: ProxySettings = DEFAULT_SETTINGS) -> None:
    """``ebpf.sh FUNCTION`` on the SUT of ``tb`` with proxy ``settings``."""
    configure_forwarder(tb, "ebpf", function, EbpfOptions(proxy=settings))


def local_env(tb: TestbedConfig, settings: ProxySettings = DEFAULT_SETTINGS) -> dict[str, str]:
    """Every SRPERF_* variable ebpf.sh reads, for a SUT namespace of this host (objects and
    sources where srperf builds them here)."""
    from srperf.forwarders.common_env import addressing_env
    from srperf.forwarders.ebpf.forwarder import proxy_env
    from srperf.forwarders.ebpf.build import ebpf_build_dir
    from srperf.resources import ebpf_dir

    return {**addressing_env(tb), **proxy_env(tb, settings),
            "SRPERF_EBPF_DIR": str(ebpf_dir()), "SRPERF_BUILD_DIR": str(ebpf_build_dir())}


@contextmanager
def proxy_testbed(tb: TestbedConfig) -> Iterator["VirtualTestbed"]:
    """The virtual testbed ``tb`` up; afterwards its VNFs and the testbed removed."""
    from srperf.testbeds.virtual import VirtualTestbed
    from srperf.testbeds.vnf import VnfSet

    vt = VirtualTestbed(tb)
    try:
        vt.up()
        yield vt
    finally:
        VnfSet(tb).down()
        vt.down()


@contextmanager
def local_generator(tb: TestbedConfig) -> Iterator["LinuxGenerator"]:
    """The local generator on the tester ports of ``tb``, closed afterwards."""
    from srperf.drivers.linux import LinuxGenerator

    g = LinuxGenerator(tb.tester_ns, tb.tester.tx.name, tb.tester.rx.name)
    try:
        yield g
    finally:
        g.close()


@contextmanager
def one_vnf(tb: TestbedConfig, mode: str) -> Iterator["VnfSet"]:
    """One VNF in ``mode`` (forward, sink, ...); afterwards ebpf.sh clean."""
    from srperf.testbeds.vnf import VnfSet

    vnfs = VnfSet(tb, count=1, mode=mode).up()
    try:
        yield vnfs
    finally:
        configure(tb, "clean")
