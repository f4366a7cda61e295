"""Create the traffic generator a testbed names (the driver layer's factory)."""

from __future__ import annotations

from srperf.config.model import Testbed
from srperf.drivers.base import TrafficGenerator
from srperf.errors import GeneratorError


def create_generator(tb: Testbed, behavior: str | None = None, seed: int = 0) -> TrafficGenerator:
    """The generator for ``tb.tester.driver``: linux, simulated (a model) or trex."""
    driver = "simulated" if tb.kind == "simulated" else tb.tester.driver
    if driver == "linux":
        from srperf.drivers.linux import LinuxGenerator

        return LinuxGenerator(tb.tester_ns, tb.tester.tx.name, tb.tester.rx.name,
                              cpu=tb.tester.cpu, **tb.tester.options)
    if driver == "simulated":
        from srperf.drivers.simulated import SimulatedGenerator

        return SimulatedGenerator.from_config(tb.simulated, behavior=behavior, seed=seed)
    raise GeneratorError(f"{tb.source}: tester.driver = {driver!r}: this driver is not "
                         "available in this version of srperf (drivers: linux, simulated)")
