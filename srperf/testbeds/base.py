"""The testbed object: what the orchestrator, the benches and the tests measure on.

One interface for every kind (virtual, ssh, simulated), so nothing above it asks
which kind it has:

* :meth:`Testbed.up` / :meth:`Testbed.down`: bring up and remove what srperf owns
  (``up`` says whether it made anything, so only its maker removes it);
* :meth:`Testbed.node`: the :class:`Transport` of a node (``tester``, ``sut``); the
  legacy VNFs of proxy behaviors live on the SUT node;
* :meth:`Testbed.generator`: the traffic generator;
* :meth:`Testbed.sut`: the SUT driven with one forwarder (:class:`SutHandle`);
* :meth:`Testbed.environment`: each node's kernel, CPU, NICs and tool versions,
  read through that node's own transport.

Adding a testbed kind is one module in this package (registered in
:mod:`srperf.testbeds`).
"""

from __future__ import annotations

import abc
import logging
from typing import Any, ClassVar, Protocol

from srperf.measure import environment
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.drivers.base import TrafficGenerator
from srperf.errors import SrperfError
from srperf.forwarders.base import Forwarder
from srperf.testbeds.lock import LockState, TestbedLock
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

ROLES = ("tester", "sut")


class TestbedError(SrperfError):
    """A testbed could not be built, reached or removed."""


class SutHandle(Protocol):
    """A SUT running one forwarder, as a measurement session uses it."""

    def open(self) -> None:
        """Install what the forwarder needs and leave the SUT clean."""

    def install(self, options: Settings | None = None) -> None:
        """Install what the forwarder needs for ``options`` (again only if they changed)."""

    def configure(self, behavior: Any) -> None:
        """Configure ``behavior`` (and the VNFs it needs)."""

    def verify(self, behavior: Any, generator: TrafficGenerator, packet_size: int,
               flows: Any = None) -> str:
        """Check a few frames (of a sample of ``flows``, :class:`srperf.traffic.flows.Flows`, when
        given); return what was verified (raises VerificationError)."""

    def counters(self) -> dict[str, int] | None:
        """The forwarder's own counters now (None: it has none)."""

    def profiler(self, cpu: int | None, frequency_hz: int = 999, top: int = 10,
                 thread_prefix: str | None = None) -> Any:
        """A profile trial of forwarding CPU ``cpu`` (srperf.profile.trial.ProfileTrial)."""

    def packet_cost(self, behavior: Any, frame: bytes) -> Any:
        """The configured behavior's per-packet cost without a generator
        (srperf.results.costs.PacketCost), or None when the forwarder has none."""

    def unconfigure(self, behavior: Any) -> None:
        """Remove ``behavior``'s configuration (and its VNFs)."""

    def close(self) -> None:
        """Clean the SUT and remove everything pushed to it."""


class Testbed(abc.ABC):
    """A tester and a SUT, as described by a :class:`TestbedConfig`."""

    __test__ = False  # not a pytest class
    kind: ClassVar[str] = "abstract"
    is_model: ClassVar[bool] = False
    """True when results come from a model, not from a measurement."""
    makes_namespaces: ClassVar[bool] = False
    """True when srperf makes network namespaces of this host for a run: the client
    and server of a stateful experiment either side of the SUT, SRv6Pipes chains."""
    lock_roles: ClassVar[tuple[str, ...]] = ROLES
    """Nodes whose files the lock's node can reach (their work directories are named
    in the lock, and removed by whoever takes over the lock of a killed run)."""

    def __init__(self, config: TestbedConfig) -> None:
        self.config = config
        self._nodes: dict[str, Transport] = {}
        self._generator: TrafficGenerator | None = None
        self._lock: TestbedLock | None = None

    # -- description -------------------------------------------------------------
    @classmethod
    def check_config(cls, config: TestbedConfig) -> None:
        """Raise ConfigError when ``config`` does not suit this kind (at load time)."""

    def check_forwarder(self, forwarder: Forwarder, source: str) -> None:
        """Raise ConfigError (``source``: the experiment file) if ``forwarder`` cannot run here."""

    @property
    def makes_endpoints(self) -> bool:
        """True when srperf can place a stateful experiment's client and server on this
        testbed: namespaces either side of the SUT (:attr:`makes_namespaces`), or hosts
        the testbed file names (an ssh testbed's ``endpoints``)."""
        return self.makes_namespaces or self.config.endpoints is not None

    def for_kind(self, kind: str) -> None:
        """The coming run measures experiment ``kind`` (``pdr``, ``goodput``, ``http``):
        :meth:`up` may then skip checking what that kind does not use."""

    # -- life cycle ----------------------------------------------------------------
    def is_up(self) -> bool:
        """True when everything srperf would bring up is there."""
        return True

    def up(self) -> bool:
        """Bring up what srperf owns; True when this call made something (its maker
        removes it)."""
        return False

    def down(self) -> None:
        """Remove what srperf owns on this testbed (whoever made it)."""

    def close(self) -> None:
        """Close the generator and every node's transport (nothing is removed)."""
        for what, action in [("generator", self._generator.close if self._generator else None),
                             *((f"{role} transport", t.close) for role, t in self._nodes.items())]:
            if action is None:
                continue
            try:
                action()
            except Exception as exc:  # closing must go on
                log.error("closing the %s failed: %s", what, exc)
        self._generator = None
        self._nodes.clear()

    # -- one run per testbed -------------------------------------------------------------
    def _lock_node(self) -> tuple[Transport, str] | None:
        """The node holding this testbed's lock, and the lock's name there (None: this
        kind needs no lock).  Default: this host, ``KIND-PREFIX``."""
        from srperf.transports.netns import NetnsTransport

        return NetnsTransport(None), f"{self.kind}-{self.config.prefix}"

    @property
    def lock(self) -> TestbedLock | None:
        """This testbed's lock (:mod:`srperf.testbeds.lock`); None for a kind without."""
        if self._lock is None:
            where = self._lock_node()
            if where is None:
                return None
            node, name = where
            self._lock = TestbedLock(lambda: node, name, self.config.source, self.config.name)
        return self._lock

    def claim(self, command: str, run_id: str | None = None) -> bool:
        """Take the testbed's lock (raises TestbedBusy, exit 2, when another run holds
        it); True when this call took it (the caller then calls :meth:`unclaim`)."""
        lock = self.lock
        if lock is None or lock.held:
            return False
        lock.acquire(command, run_id)
        return True

    def keep_claim(self) -> None:
        """Check the lock is still held (cheap); after a dropped connection take it
        again (TestbedBusy if another run took it meanwhile)."""
        if self._lock is not None:
            self._lock.ensure()

    def name_run(self, run_id: str) -> None:
        """Name the run in the lock's holder file (once the store has given its id)."""
        if self._lock is not None:
            self._lock.set_run(run_id)

    def check_reusable(self) -> None:
        """Raise ConfigError when what is up was not made by srperf with this
        testbed's settings (before anything starts; nothing to check by default)."""

    def unclaim(self) -> None:
        """Release the testbed's lock, if this process holds it."""
        if self._lock is not None:
            self._lock.release()

    def lock_state(self) -> LockState | None:
        """Who holds the testbed's lock (None: this kind has no lock)."""
        lock = self.lock
        return lock.state() if lock is not None else None

    def status(self) -> list[str]:
        """What ``srperf testbed status`` says: up or down, then the lock."""
        lines = ["up" if self.is_up() else "down"]
        state = self.lock_state()
        if state is not None:
            lines.append(state.describe())
        return lines

    # -- nodes -----------------------------------------------------------------------
    def node(self, role: str) -> Transport:
        """The transport of node ``role`` (``tester`` or ``sut``), opened once."""
        if role not in ROLES:
            raise ValueError(f"role {role!r}: must be one of {', '.join(ROLES)}")
        if role not in self._nodes:
            node = self._make_node(role)
            if role in self.lock_roles:
                node.on_workdir = self._note_workdir
            self._nodes[role] = node
        return self._nodes[role]

    def _note_workdir(self, path: str) -> None:
        if self._lock is not None and self._lock.held:
            self._lock.add_workdir(path)

    @abc.abstractmethod
    def _make_node(self, role: str) -> Transport:
        """A new transport to node ``role``."""

    def node_ports(self, role: str) -> list[str]:
        """The node's test ports (interface names), for its environment."""
        c = self.config
        if role == "tester":
            return [c.tester.tx.name, c.tester.rx.name]
        return [c.sut.in_port.name, c.sut.out_port.name]

    # -- traffic and SUT ---------------------------------------------------------------
    def generator(self, behavior: str, seed: int = 0) -> TrafficGenerator:
        """The traffic generator (one per testbed; models may make one per behavior)."""
        if self._generator is None:
            from srperf.traffic.generators import create_generator

            self._generator = create_generator(self.config, self.tester_netns())
        return self._generator

    def generator_in_use(self) -> TrafficGenerator | None:
        """The generator :meth:`generator` made (None: none yet, or closed)."""
        return self._generator

    def forwarding_cpu(self) -> int | None:
        """The SUT's CPU that forwards the test traffic (``sut.cpu``; None: not known)."""
        return self.config.sut.cpu

    def forwarding_threads(self) -> str | None:
        """Name prefix of the SUT's forwarding threads on :meth:`forwarding_cpu`, where
        the testbed knows them (None: forwarding runs in softirq of any task)."""
        return None

    def tester_netns(self) -> str | None:
        """The local network namespace holding the tester's ports (None: this host's)."""
        return self.config.tester.netns

    def sut(self, forwarder: Forwarder, options: Settings) -> SutHandle:
        """The SUT driven with ``forwarder`` through its CFG script."""
        from srperf.testbeds.sut import SutControl

        return SutControl(forwarder, self.node("sut"), self.config, options)

    # -- environment ------------------------------------------------------------------
    def label_line(self, line: str) -> str:
        """A progress line as this testbed labels it (an emulated SUT says so on every
        line, srperf.testbeds.kernel_vm); unchanged here."""
        return line

    def environment(self, forwarder: Forwarder | None = None) -> dict[str, Any]:
        """Each node's environment, read through its own transport."""
        nodes: dict[str, Any] = {}
        for role in ROLES:
            try:
                nodes[role] = environment.node(self.node(role), self.node_ports(role))
            except SrperfError as exc:
                nodes[role] = {"error": str(exc)}
        if forwarder is not None and "error" not in nodes["sut"]:
            nodes["sut"]["forwarder"] = {"name": forwarder.name,
                                         **forwarder.versions(self.node("sut"))}
            if forwarder.deviations:
                nodes["sut"]["forwarder"]["deviations"] = forwarder.declared_deviations()
        env: dict[str, Any] = {"testbed_kind": self.kind, "nodes": nodes}
        if self.config.tester.driver == "linux":
            from srperf.drivers.linux_engine import describe, engine_asked, port_driver

            ns = self.tester_netns()
            driver = None
            if engine_asked(self.config.tester.options) != "packet":
                driver = port_driver(["ip", "netns", "exec", ns] if ns else [],
                                     self.config.tester.tx.name)
            try:
                env["generator"] = describe(self.config.tester.options, driver)
            except SrperfError as exc:
                env["generator"] = {"driver": "linux", "error": str(exc)}
        return env


__all__ = ["Testbed", "TestbedError", "SutHandle", "ROLES"]
