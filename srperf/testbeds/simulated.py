"""A MODEL of a SUT (drivers/simulated.py) for developing searches: nothing is measured.

There is no SUT to configure: each behavior gets its own seeded model
(capacity, loss curve, noise from the testbed's ``simulated`` block), and every
result is labelled as a model (:attr:`SimulatedTestbed.is_model`).
"""

from __future__ import annotations

from typing import Any

from srperf.measure import environment
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.drivers.base import TrafficGenerator
from srperf.forwarders.base import Forwarder
from srperf.testbeds.base import SutHandle, Testbed
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport


class ModelSut:
    """The simulated SUT: nothing to configure, nothing to verify, no counters."""

    def open(self) -> None:
        pass

    def install(self, options: Settings | None = None) -> None:
        pass

    def configure(self, behavior: Any) -> None:
        pass

    def verify(self, behavior: Any, generator: TrafficGenerator, packet_size: int,
               flows: Any = None) -> str:
        return "not verified: simulated model"

    def counters(self) -> dict[str, int] | None:
        return None

    def profiler(self, cpu: int | None, frequency_hz: int = 999, top: int = 10,
                 thread_prefix: str | None = None) -> None:
        """None: a model has no CPU to profile."""
        return None

    def packet_cost(self, behavior: Any, frame: bytes) -> None:
        """None: a model runs no program to time."""
        return None

    def unconfigure(self, behavior: Any) -> None:
        pass

    def close(self) -> None:
        pass


class SimulatedTestbed(Testbed):
    """A seeded SUT model per behavior; results are a model's, never measurements."""

    kind = "simulated"
    is_model = True

    def __init__(self, config: TestbedConfig) -> None:
        super().__init__(config)
        self._models: dict[tuple[str, int], TrafficGenerator] = {}

    def _lock_node(self) -> None:
        return None  # a model: nothing to share

    def _make_node(self, role: str) -> Transport:
        return NetnsTransport(None)   # the model runs in this process, on this host

    def generator(self, behavior: str, seed: int = 0) -> TrafficGenerator:
        """The model of ``behavior`` seeded by ``seed`` (one per pair, kept for the run)."""
        from srperf.drivers.simulated import SimulatedGenerator

        if (behavior, seed) not in self._models:
            self._models[(behavior, seed)] = SimulatedGenerator.from_config(
                self.config.simulated, behavior=behavior, seed=seed)
        return self._models[(behavior, seed)]

    def sut(self, forwarder: Forwarder, options: Settings) -> SutHandle:
        return ModelSut()

    def environment(self, forwarder: Forwarder | None = None) -> dict[str, Any]:
        return {"testbed_kind": self.kind,
                "nodes": {"tester": environment.node(self.node("tester"), []),
                          "sut": {"model": dict(self.config.simulated)}}}


__all__ = ["SimulatedTestbed", "ModelSut"]
