"""Create the traffic generator a testbed's tester names (the driver layer's factory)."""

from __future__ import annotations

from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.drivers.base import TrafficGenerator
from srperf.errors import GeneratorError

DRIVERS = ("linux", "trex")
MIX_DRIVERS = ("trex", "linux")
"""Drivers that send a mix of frame sizes (IMIX)."""
"""Drivers of real traffic (the simulated testbed makes its own model generator)."""


def options_class(driver: str) -> type[Settings] | None:
    """The dataclass of ``tester.options`` for ``driver`` (None: a driver without options
    in this version)."""
    if driver == "linux":
        from srperf.drivers.linux import LinuxGeneratorOptions

        return LinuxGeneratorOptions
    if driver == "trex":
        from srperf.drivers.trex import TrexOptions

        return TrexOptions
    return None


def create_generator(tb: TestbedConfig, tester_ns: str | None) -> TrafficGenerator:
    """The generator for ``tb.tester.driver`` on the tester ports in local namespace
    ``tester_ns`` (None: this host's own namespace)."""
    driver = tb.tester.driver
    if driver == "linux":
        from srperf.drivers.linux import LinuxGenerator
        from srperf.drivers.linux_engine import DEFAULT_ENGINE

        options = {"engine": DEFAULT_ENGINE, **tb.tester.options}   # the testbed's default
        return LinuxGenerator(tester_ns, tb.tester.tx.name, tb.tester.rx.name,
                              cpu=tb.tester.cpu, **options)
    if driver == "trex":
        from srperf.drivers.trex import TrexGenerator, TrexOptions

        return TrexGenerator(TrexOptions(**tb.tester.options),
                             line_rate_pps=tb.tester.line_rate_pps, netns=tester_ns)
    raise GeneratorError(f"{tb.source}: tester.driver = {driver!r}: this driver is not "
                         f"available in this version of srperf (drivers: {', '.join(DRIVERS)})")
