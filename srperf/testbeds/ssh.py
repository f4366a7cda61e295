"""A testbed whose SUT is another host, reached over SSH; the tester is local.

The tester's ports are on this host (``tester.netns``: a local network
namespace holding them, or this host's own), driven by the local generator;
the SUT is whatever host ``sut.transport.ssh`` reaches, running the forwarder
named by ``sut.forwarder``.  srperf brings nothing up here: the links are
cables (or, in the suite, veths).  The SUT's base setup (addresses, static
neighbours for the tester's MACs, forwarding sysctls, ``ip sr tunsrc``) is
applied from the testbed file by ``srperf testbed prepare`` and undone by
``srperf testbed unprepare`` (:mod:`srperf.testbeds.ssh_prepare`).
:meth:`SshTestbed.up` only checks that the SUT answers and has its ports, and
says what is missing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from srperf.config.model import TestbedConfig
from srperf.errors import ConfigError, SrperfError
from srperf.forwarders.base import Forwarder
from srperf.testbeds.base import Testbed, TestbedError
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport

if TYPE_CHECKING:
    from srperf.drivers.trex_server import TrexServer

log = logging.getLogger(__name__)


class SshTestbed(Testbed):
    """Local tester, SUT over SSH."""

    kind = "ssh"
    lock_roles = ("sut",)  # the lock is on the SUT; the tester is elsewhere

    def __init__(self, config: TestbedConfig) -> None:
        super().__init__(config)
        self._uses_tester = True

    def for_kind(self, kind: str) -> None:
        """A stateful run's traffic comes from the endpoint hosts: the tester's ports
        are then not needed (nor checked by :meth:`up`)."""
        self._uses_tester = kind == "pdr"

    @classmethod
    def check_config(cls, config: TestbedConfig) -> None:
        if config.sut.transport.kind != "ssh" or config.sut.transport.ssh is None:
            raise ConfigError(config.source, "sut.transport.ssh", None,
                              "an ssh testbed needs sut.transport.ssh (host, user, key_file, "
                              "known_hosts)")

    def check_forwarder(self, forwarder: Forwarder, source: str) -> None:
        if forwarder.name != self.config.sut.forwarder:
            raise ConfigError(source, "forwarder", forwarder.name,
                              f"the SUT of {self.config.source} runs "
                              f"{self.config.sut.forwarder!r} (sut.forwarder)")

    def _make_node(self, role: str) -> Transport:
        from srperf.transports.ssh import SshTransport

        if role == "tester":
            tr = self.config.tester.transport
            if tr is not None and tr.kind == "ssh" and tr.ssh is not None:
                return SshTransport(tr.ssh)
            return NetnsTransport(self.config.tester.netns)
        assert self.config.sut.transport.ssh is not None
        return SshTransport(self.config.sut.transport.ssh)

    def _lock_node(self) -> tuple[Transport, str]:
        """The lock is on the SUT (one run per testbed, whichever controller runs it),
        taken through a connection of its own; named by the testbed
        (``/run/srperf/ssh-<name>.lock``), so that two testbeds sharing one host
        (other ports, other namespaces) do not lock each other out."""
        from srperf.transports.ssh import SshTransport

        from srperf.drivers.trex_server import file_key

        assert self.config.sut.transport.ssh is not None
        return (SshTransport(self.config.sut.transport.ssh),
                f"ssh-{file_key(self.config.name)}")

    def environment(self, forwarder: Forwarder | None = None) -> dict[str, Any]:
        """Each node's environment; for a stateful run also the endpoint hosts'
        (``endpoint_client``, ``endpoint_server``: kernel, CPU, tools, their ``dev``)."""
        env = super().environment(forwarder)
        if self._uses_tester or self.config.endpoints is None:
            return env
        from srperf.measure import environment
        from srperf.transports.ssh import SshTransport

        for side in ("client", "server"):
            host = getattr(self.config.endpoints, side)
            try:
                with SshTransport(host.transport.ssh) as node:
                    env["nodes"][f"endpoint_{side}"] = environment.node(node, [host.dev])
            except SrperfError as exc:
                env["nodes"][f"endpoint_{side}"] = {"error": str(exc)}
        return env

    def _trex_server(self) -> "TrexServer | None":
        """The TRex server srperf manages on the tester host (tester.options.release)."""
        from srperf.drivers.trex_server import managed_server

        return managed_server(self.config, self.node("tester"))

    def is_up(self) -> bool:
        server = self._trex_server()
        return not self._missing() and (server is None or server.pid() is not None)

    def up(self) -> bool:
        """Check the SUT answers and has its ports; start the TRex server when srperf
        manages one.  Returns True only when a server was started."""
        missing = self._missing()
        if missing:
            raise TestbedError(f"{self.config.source}: the SUT ({self.node('sut').where}) is "
                               f"not ready: {'; '.join(missing)}")
        server = self._trex_server()
        return server.start() if server is not None else False

    def down(self) -> None:
        """Stop the TRex server srperf manages, if any; the SUT and links stay."""
        server = self._trex_server()
        if server is not None:
            server.stop()

    def status(self) -> list[str]:
        """Up or down, the lock, then what the SUT (and a TRex host over SSH) lacks,
        each naming its testbed key: what ``srperf validate`` cannot see from here; then
        each endpoint host (reachable, its dev, a killed run's setup left)."""
        from srperf.stateful.ssh_endpoints import host_status

        lines = super().status()
        lines.extend(self._missing())
        lines.extend(host_status(self))   # the stateful client and server hosts
        return lines

    def _missing(self) -> list[str]:
        sut = self.node("sut")
        missing = []
        for port in self.node_ports("sut"):
            if not sut.run(["ip", "link", "show", "dev", port], timeout=15.0).ok:
                missing.append(f"no interface {port} (sut.in_port/out_port)")
        cpu = self.config.sut.cpu
        if cpu is not None:
            online = sut.run(["cat", "/sys/devices/system/cpu/online"], timeout=15.0)
            if online.ok and cpu not in parse_cpu_list(online.stdout):
                missing.append(f"sut.cpu = {cpu}: no such CPU on the SUT (online: "
                               f"{online.stdout.strip()})")
        if not self._uses_tester:
            return missing
        missing.extend(self._tester_release_missing())
        if self.config.tester.driver == "trex":
            return missing  # the tester's ports belong to DPDK, not to the kernel
        tester = self.node("tester")
        for port in self.node_ports("tester"):
            if not tester.run(["ip", "link", "show", "dev", port], timeout=15.0).ok:
                missing.append(f"no tester interface {port} ({tester.where})")
        return missing


    def _tester_release_missing(self) -> list[str]:
        """A TRex release on a tester host reached over SSH (local ones: validate)."""
        release = self.config.tester.options.get("release")
        tr = self.config.tester.transport
        if self.config.tester.driver != "trex" or not release or tr is None \
                or tr.kind != "ssh":
            return []
        tester = self.node("tester")
        binary = f"{str(release).rstrip('/')}/t-rex-64"
        if tester.run(["test", "-x", binary], timeout=15.0).ok:
            return []
        return [f"tester.options.release = {release}: no executable t-rex-64 on "
                f"{tester.where}"]


def parse_cpu_list(text: str) -> set[int]:
    """``0-3,6`` (the kernel's CPU list format) as a set of CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


__all__ = ["SshTestbed", "parse_cpu_list"]
