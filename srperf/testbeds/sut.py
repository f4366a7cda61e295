"""Drive one forwarder on one SUT through its CFG script (the contract in cfg_scripts/README.md).

``bash SCRIPT FUNCTION`` with parameters in ``SRPERF_*`` variables; exit 0 =
configured, 2 = usage error (unknown function, missing variable), 3 = the SUT
refuses the behavior (stderr ``unsupported: <the SUT's reason>``), anything
else = failure (stderr says why).  The script, and whatever the forwarder's
build step needs, go to the transport's private work directory on the SUT.

A function that runs longer than :data:`CFG_TIMEOUT_S` is stopped on the SUT
and reported as a CfgError naming it (the session then cleans the SUT).  A
connection lost while a function or a counter read runs is reopened once and
the call made again: CFG functions are idempotent by contract (each cleans
first), and the work directory is pushed again when it went with the session.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, TypeVar

from srperf import resources
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.drivers.base import TrafficGenerator
from srperf.errors import CfgError, TransportError, UnsupportedBehavior
from srperf.forwarders.base import Forwarder, Prepared
from srperf.transports.base import TIMED_OUT, Transport

log = logging.getLogger(__name__)

EXIT_UNSUPPORTED = 3
CFG_TIMEOUT_S = 120.0
"""Longest a CFG script function may run on the SUT (seconds)."""

T = TypeVar("T")


class SutControl:
    """One forwarder on the SUT reached through ``sut``, with experiment ``options``."""

    def __init__(self, forwarder: Forwarder, sut: Transport, tb: TestbedConfig,
                 options: Settings | None = None, timeout_s: float | None = None) -> None:
        self.forwarder = forwarder
        self.transport = sut
        self.tb = tb
        self.options = options if options is not None else forwarder.parse_options({})
        self.timeout_s = CFG_TIMEOUT_S if timeout_s is None else timeout_s
        self._script: str | None = None
        self._prepared: Prepared | None = None
        self._prepared_for: Settings | None = None
        self.env: dict[str, str] = {}
        self._vnfs: Any = None
        self._shell: Any = None  # the ResidentShell counters are read through

    @property
    def script(self) -> str:
        """Path of the forwarder's script on the SUT (pushed on first use)."""
        if self._script is None:
            local = resources.cfg_script(self.forwarder.script.removesuffix(".sh"))
            if not local.exists():
                raise CfgError(f"no CFG script for forwarder {self.forwarder.name!r} ({local})")
            self.transport.push(resources.cfg_contract())  # sourced from the script's dir
            self._script = self.transport.push(local)
        return self._script

    def install(self, options: Settings | None = None) -> None:
        """Push the script, run the forwarder's build step for ``options`` (once per options)."""
        if options is not None:
            self.options = options
        _ = self.script
        if self._prepared is None or self._prepared_for != self.options:
            self._prepared = self.forwarder.prepare(self.transport, self.options)
            self._prepared_for = self.options
        self.env = self.forwarder.env(self.tb, self.options, self._prepared)

    def _reconnecting(self, what: str, action: Callable[[], T]) -> T:
        """``action()``; when the connection to the SUT was lost, reconnect once and
        run it again (only for idempotent actions)."""
        try:
            return action()
        except TransportError as exc:
            log.warning("%s while %s; reconnecting once and doing it again", exc, what)
            if self._shell is not None:
                self._shell.close()
            self.transport.reconnect()
            if not self._workdir_there():
                log.warning("%s: the work directory is gone; pushing the script again",
                            self.transport.where)
                self.transport.forget_workdir()
                self._script = None
                self._prepared = None
                self.install()
            return action()

    def _workdir_there(self) -> bool:
        if self._script is None:
            return True
        return self.transport.run(["test", "-f", self._script], timeout=30.0).ok

    def call(self, function: str, behavior: str | None = None) -> None:
        """Run one function of the script; raise on failure."""
        if not self.env:
            self.install()
        env = self.env
        if behavior is not None:
            env = {**env, **self.forwarder.behavior_env(self.tb, self.options, behavior)}
        result = self._reconnecting(
            f"running {self.forwarder.script} {function}",
            lambda: self.transport.run(["bash", self.script, function], env=env,
                                       timeout=self.timeout_s))
        if result.ok:
            return
        message = result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}"
        if result.returncode == TIMED_OUT:
            raise CfgError(f"{self.forwarder.script} {function} on {self.transport.where} "
                           f"hung: stopped after {self.timeout_s:g} s ({message})")
        if result.returncode == EXIT_UNSUPPORTED:
            reason = message.split("unsupported:", 1)[-1].strip()
            raise UnsupportedBehavior(behavior or function, reason)
        raise CfgError(f"{self.forwarder.script} {function} on {self.transport.where} failed "
                       f"(exit {result.returncode}): {message}")

    def apply(self, cfg_function: str, behavior: str) -> None:
        """Configure one behavior (the script cleans first)."""
        log.info("configuring %s on %s (%s %s)", behavior, self.transport.where,
                 self.forwarder.script, cfg_function)
        self.call(cfg_function, behavior)

    def clean(self) -> None:
        """Remove every behavior's configuration from the SUT."""
        self.call("clean")

    # -- the SutHandle a measurement session uses ---------------------------------
    def open(self) -> None:
        """Push the script and what the forwarder needs; leave the SUT clean."""
        self.install()
        self.clean()

    def configure(self, behavior: Any) -> None:
        """Bring up the VNFs ``behavior`` needs, then configure it."""
        if behavior.needs_vnf:
            from srperf.testbeds.vnf import VnfSet

            count, mode = self.forwarder.vnfs(self.options)
            self._vnfs = VnfSet(self.tb, count=count, mode=mode, host=self.transport).up()
        self.apply(behavior.cfg_function, behavior.name)

    def verify(self, behavior: Any, generator: TrafficGenerator, packet_size: int,
               flows: Any = None) -> str:
        """Send a few frames (of a sample of ``flows`` when given), check what the SUT
        forwarded (raises VerificationError)."""
        from srperf.measure.verify import verify_behavior

        return verify_behavior(behavior, self.tb, generator, packet_size,
                               deviations=self.forwarder.deviations_of(behavior.name),
                               flows=flows)

    def unconfigure(self, behavior: Any) -> None:
        """Remove ``behavior``'s configuration and its VNFs."""
        try:
            self.clean()
        finally:
            if self._vnfs is not None:
                self._vnfs.down()
                self._vnfs = None

    def close(self) -> None:
        """Clean the SUT (the transport's work directory goes with the transport).

        After a lost connection the transport reconnects once, so a SUT that is
        still reachable is cleaned; otherwise the TransportError names the host.
        """
        if self._shell is not None:
            self._shell.close()
            self._shell = None
        if self._script is None:
            return
        try:
            self.clean()  # reconnects once when the connection was lost
        finally:
            if self._vnfs is not None:
                self._vnfs.down()
                self._vnfs = None

    def counters(self) -> dict[str, int] | None:
        """The forwarder's own counters on the SUT (None: it has none), read through a
        shell held on the SUT (:class:`ResidentShell`: one round trip, no new channel
        or process to start, per read)."""
        from srperf.transports.resident_shell import ResidentShell

        if not self.env:
            self.install()
        if self._shell is None:
            self._shell = ResidentShell(self.transport)
        return self._reconnecting("reading counters", lambda: self.forwarder.counters(
            self._shell, self.script, self.env))


    def packet_cost(self, behavior: Any, frame: bytes) -> Any:
        """The configured ``behavior``'s per-packet cost without a generator, measured
        by the forwarder on the SUT (:meth:`Forwarder.packet_cost`; None: it has none)."""
        if not self.env:
            self.install()
        env = {**self.env, **self.forwarder.behavior_env(self.tb, self.options,
                                                         behavior.name)}
        return self.forwarder.packet_cost(self.transport, self.script, env, self.options,
                                          behavior.name, frame)

    def profiler(self, cpu: int | None, frequency_hz: int = 999, top: int = 10,
                 thread_prefix: str | None = None) -> Any:
        """A :class:`srperf.profile.trial.ProfileTrial` of forwarding CPU ``cpu`` (and its
        threads named ``thread_prefix*``), through this SUT's transport, with the
        forwarder's own sources."""
        from srperf.profile.trial import ProfileTrial

        if not self.env:
            self.install()
        return ProfileTrial(self.transport, cpu,
                            self.forwarder.profile_sources(self.transport, self.env),
                            frequency_hz=frequency_hz, top=top, thread_prefix=thread_prefix,
                            out_port=self.tb.sut.out_port.name)


def configure(tb: TestbedConfig, forwarder: str, function: str,
              options: Settings | None = None, behavior: str | None = None) -> None:
    """Run one function of ``forwarder``'s script in the SUT namespace of a virtual ``tb``
    (for ``behavior``: with its :meth:`Forwarder.behavior_env`).

    For tests and benchmarks on this host; raises like :meth:`SutControl.call`.
    """
    from srperf.forwarders import registry as forwarders
    from srperf.transports.netns import NetnsTransport

    with NetnsTransport(tb.sut_ns) as transport:
        control = SutControl(forwarders.get(forwarder), transport, tb, options)
        control.install()
        control.call(function, behavior)


__all__ = ["SutControl", "configure", "EXIT_UNSUPPORTED"]
