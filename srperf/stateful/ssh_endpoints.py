"""Client and server hosts of an ssh testbed, reached over SSH (``endpoints`` in its file).

Each host's interface ``dev`` is cabled to one of the SUT's ports and takes the tester's
place there (see :class:`srperf.config.model.EndpointHostConfig`)::

    client host (ssh)          SUT (ssh)              server host (ssh)
      dev tester_tx_ip6 ----- in ....... out ----- dev tester_rx_ip6
      lo src6                                       lo dst6, dst6 + 1

For a stateful run, :meth:`SshEndpoints.up` applies each host's base setup and
:meth:`SshEndpoints.down` (always called) undoes it, so nothing srperf did stays on
the hosts between runs:

* sysctls: ``seg6_enabled`` on all, default and ``dev``; no DAD on ``dev``;
* ``dev`` up with the link address, the traffic's addresses on ``lo``;
* routes towards the SUT's port (``via sut_in_ip6`` / ``sut_out_ip6``): the SIDs
  (``sid_prefix``) on both, ``dst_prefix6`` on the client (preferred source ``src6``),
  ``src6``'s /64 on the server (no default route: a host's management route is left
  alone);
* ``ip sr tunsrc`` set to the link address (the outer source of its H.Encaps).

As for an SSH SUT (:mod:`srperf.testbeds.ssh_prepare`, which does the work), what is
changed is first recorded on the host (``/run/srperf/prepared-<testbed>-client.json``)
and put back from that record; a run killed meanwhile leaves the record, and the next
run's ``up`` keeps it (the state from before srperf) and its ``down`` undoes all, as
does ``srperf testbed unprepare``.  The private work directories the runners use on a
host are listed beside that record (``...-client.workdirs``) as they are made; ``up``,
``down`` and ``unprepare`` stop the servers a killed run left there (by their pid files,
only a process whose command line names that directory), remove the directories and the
steering it left (SRv6 routes over ``dev``, the End.DT6 tables' addresses).
The SRv6 steering of each behavior is set and removed per configuration by
:class:`srperf.stateful.steering.Steering`, through the same transports.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from srperf.config.model import EndpointHostConfig, TestbedConfig
from srperf.errors import SrperfError
from srperf.stateful import undo_journal
from srperf.stateful.base import Endpoint, Endpoints, StatefulError, second_address
from srperf.testbeds import ssh_prepare
from srperf.testbeds.base import Testbed
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

SIDES = ("client", "server")

_REAP = r"""set -u
ours() {  # $1 pid, $2 dir: the process names the directory (command line or marker)
  tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2" && return 0
  tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF -- "SRPERF_WORKDIR=$2"
}
stopped=""
for dir in "$@"; do
  case "$dir" in /*/srperf.??????????) ;; *) continue ;; esac
  [ -d "$dir" ] || continue
  for f in "$dir"/*.pid "$dir"/*/*.pid; do
    [ -s "$f" ] || continue
    pid=$(head -n 1 "$f")
    case "$pid" in ''|*[!0-9]*) continue ;; esac
    if ours "$pid" "$dir"; then
      comm=$(cat "/proc/$pid/comm" 2>/dev/null || echo gone)
      kill "$pid" 2>/dev/null && echo "stopped $pid ($comm)" && stopped="$stopped $pid:$dir"
    fi
  done
done
# wait until they are gone (SIGKILL after 5 s), then remove the directories
for _ in $(seq 50); do
  left=""
  for pd in $stopped; do ours "${pd%%:*}" "${pd#*:}" && left="$left $pd"; done
  stopped=$left
  [ -z "$stopped" ] && break
  sleep 0.1
done
for pd in $stopped; do kill -9 "${pd%%:*}" 2>/dev/null || true; done
for dir in "$@"; do
  case "$dir" in /*/srperf.??????????) rm -rf -- "$dir" ;; esac
done
"""
"""Stops the processes of the work directories given (pid files whose process names the
directory on its command line or carries ``SRPERF_WORKDIR=<dir>`` in its environment:
:func:`srperf.stateful.marked.argv`), waits until they are gone and removes the
directories."""


def workdirs_list(tb: TestbedConfig, side: str) -> str:
    """The file listing, on endpoint host ``side``, the work directories runs made there."""
    return host_setup(tb, side).record.removesuffix(".json") + ".workdirs"


def reap(node: Transport, tb: TestbedConfig, side: str) -> list[str]:
    """Stop what runs in the work directories listed on the host, remove them and the
    list; returns what was stopped."""
    listing = workdirs_list(tb, side)
    res = node.run(["cat", listing], timeout=30.0)
    if not res.ok:
        return []
    dirs = [line.strip() for line in res.stdout.splitlines() if line.strip()]
    out = node.run(["sh", "-c", _REAP, "reap", *dirs], timeout=60.0)
    if not out.ok:
        raise StatefulError(f"{node.where}: cleaning {', '.join(dirs)} failed: "
                            f"{(out.stderr or out.stdout).strip()}")
    node.run(["rm", "-f", listing], timeout=30.0)
    drop_steering(node, tb, side)
    stopped = out.stdout.split("\n")
    return [line for line in stopped if line.strip()]


_DROP_STEERING = r"""dev=$1; shift
ip -6 route show dev "$dev" | awk '/encap seg6/ {print $1}' | while read -r p; do
  ip -6 route del "$p" dev "$dev" 2>/dev/null || true
done
while [ $# -ge 2 ]; do
  ip -6 route del local "$2/128" dev lo table "$1" 2>/dev/null || true
  shift 2
done
true
"""


def drop_steering(node: Transport, tb: TestbedConfig, side: str) -> None:
    """Remove the steering a killed run left on endpoint host ``side`` (best effort):
    the SRv6 routes over its ``dev`` and the End.DT6 tables' own addresses."""
    from srperf.stateful.steering import CHAIN_TABLE, CLIENT_TABLE

    assert tb.endpoints is not None
    a = tb.addressing
    pairs = [str(CLIENT_TABLE), a.src6] if side == "client" else \
        [str(CHAIN_TABLE), a.dst6, str(CHAIN_TABLE + 1), second_address(a.dst6)]
    node.run(["sh", "-c", _DROP_STEERING, "drop", getattr(tb.endpoints, side).dev, *pairs],
             timeout=60.0)


def host_setup(tb: TestbedConfig, side: str) -> ssh_prepare.BaseSetup:
    """The base setup of endpoint host ``side`` (``client`` or ``server``) of ``tb``."""
    assert tb.endpoints is not None
    a = tb.addressing
    host: EndpointHostConfig = getattr(tb.endpoints, side)
    dev = host.dev
    if side == "client":
        mine, gw, lo = a.tester_tx_ip6, a.sut_in_ip6, [a.src6]
        routes = [a.sid_prefix, a.dst_prefix6]
    else:
        mine, gw, lo = a.tester_rx_ip6, a.sut_out_ip6, [a.dst6, second_address(a.dst6)]
        # the client's /64, not its /128: the steering replaces and deletes that one
        routes = [a.sid_prefix, str(ipaddress.IPv6Network(f"{a.src6}/64", strict=False))]
    sysctls = {"net.ipv6.conf.all.seg6_enabled": "1",
               "net.ipv6.conf.default.seg6_enabled": "1",
               f"net.ipv6.conf.{dev}.disable_ipv6": "0",
               f"net.ipv6.conf.{dev}.seg6_enabled": "1",
               f"net.ipv6.conf.{dev}.accept_dad": "0"}
    addresses = (ssh_prepare.Address(dev, f"{mine}/{a.link_prefix_len6}", "-6"),
                 *(ssh_prepare.Address("lo", f"{addr}/128", "-6") for addr in lo))
    record = ssh_prepare.record_path(tb).removesuffix(".json") + f"-{side}.json"
    return ssh_prepare.BaseSetup(
        sysctls=sysctls, ports=(dev,), addresses=addresses, neighbours=(), tunsrc=mine,
        mtu=None, record=record,
        # connections the client opens leave from src6 (wrk cannot bind an address)
        routes=tuple(ssh_prepare.RouteEntry(p, gw, dev, a.src6 if side == "client" else "")
                     for p in routes),
        ports_key=f"endpoints.{side}.dev")


def expected_mac(tb: TestbedConfig, side: str) -> tuple[str, str]:
    """The MAC the SUT's neighbour entry gives endpoint ``side``, and the key naming it."""
    port = tb.tester.tx if side == "client" else tb.tester.rx
    return port.mac.lower(), f"tester.{'tx' if side == 'client' else 'rx'}.mac"


class SshEndpoints:
    """The client and server hosts of an ssh testbed (a context manager)."""

    def __init__(self, testbed: Testbed) -> None:
        tb: TestbedConfig = testbed.config
        if tb.endpoints is None:
            raise StatefulError(f"{tb.source}: endpoints: no client and server hosts named")
        self.testbed, self.tb = testbed, tb
        self._nodes: dict[str, Transport] = {}
        self._prepared: list[str] = []
        self.endpoints: Endpoints | None = None

    def node(self, side: str) -> Transport:
        """The SSH transport of endpoint host ``side``, opened once."""
        if side not in self._nodes:
            from srperf.transports.ssh import SshTransport

            assert self.tb.endpoints is not None
            ssh = getattr(self.tb.endpoints, side).transport.ssh
            node = SshTransport(ssh)
            listing = workdirs_list(self.tb, side)

            def note(path: str) -> None:   # before anything runs there
                node.check(["sh", "-c", 'mkdir -p "$(dirname "$1")" && echo "$2" >> "$1"',
                            "note", listing, path], timeout=30.0)

            node.on_workdir = note
            self._nodes[side] = node
        return self._nodes[side]

    def up(self) -> Endpoints:
        """Check each host's ``dev`` and apply its base setup (StatefulError, with
        everything undone, when a host refuses)."""
        tb, a = self.tb, self.tb.addressing
        assert tb.endpoints is not None
        try:
            for side in SIDES:
                self._check_dev(side)
            sut = self.testbed.node("sut")
            for what in undo_journal.replay(sut, tb, "sut"):
                log.warning("%s: a killed run's steering undone: %s", sut.where, what)
            for side in SIDES:
                node = self.node(side)
                self._prepared.append(side)
                for what in undo_journal.replay(node, tb, side):
                    log.warning("%s: a killed run's steering undone: %s", node.where, what)
                for what in reap(node, tb, side):
                    log.warning("%s: a killed run's process %s", node.where, what)
                ssh_prepare.prepare(node, host_setup(tb, side))
        except BaseException as exc:
            self.down()
            if isinstance(exc, SrperfError) and not isinstance(exc, StatefulError):
                raise StatefulError(str(exc)) from exc
            raise
        ends = tb.endpoints
        self.endpoints = Endpoints(
            client=Endpoint("client", self.node("client"), a.src6, ends.client.dev,
                            ends.client.cpu),
            server=Endpoint("server", self.node("server"), a.dst6, ends.server.dev,
                            ends.server.cpu),
            sut=self.testbed.node("sut"), sut_cpu=tb.sut.cpu)
        log.info("stateful endpoints %s and %s up", self.node("client").where,
                 self.node("server").where)
        return self.endpoints

    def _check_dev(self, side: str) -> None:
        """``dev`` exists on the host and has the MAC the SUT's neighbour entry names."""
        assert self.tb.endpoints is not None
        node, dev = self.node(side), getattr(self.tb.endpoints, side).dev
        res = node.run(["cat", f"/sys/class/net/{dev}/address"], timeout=30.0)
        if not res.ok:
            raise StatefulError(f"{self.tb.source}: endpoints.{side}.dev = {dev}: no such "
                                f"interface on {node.where}")
        mac = res.stdout.strip().lower()
        want, key = expected_mac(self.tb, side)
        if mac != want:
            raise StatefulError(f"{self.tb.source}: endpoints.{side}.dev = {dev} on "
                                f"{node.where} has MAC {mac}, but the SUT reaches the "
                                f"{side} at {key} = {want}: set {key} to {mac}")

    def down(self) -> None:
        """Undo each host's base setup and close the connections (errors are logged)."""
        for side in reversed(self._prepared):
            node = self.node(side)
            try:
                for what in reap(node, self.tb, side):
                    log.warning("%s: a server was still running: %s", node.where, what)
                node.forget_workdir()   # removed by reap
                ssh_prepare.unprepare(node, host_setup(self.tb, side))
            except SrperfError as exc:
                log.error("undoing the %s host's setup failed: %s", side, exc)
        self._prepared.clear()
        for node in self._nodes.values():
            try:
                node.close()
            except SrperfError as exc:
                log.error("closing %s failed: %s", node.where, exc)
        self._nodes.clear()
        self.endpoints = None

    def __enter__(self) -> Endpoints:
        return self.up()

    def __exit__(self, *exc: Any) -> None:
        self.down()


def undo_left_setup(tb: TestbedConfig) -> list[str]:
    """Undo endpoint base setups a killed run left (``srperf testbed unprepare``);
    returns the hosts where one was undone."""
    done: list[str] = []
    if tb.endpoints is None:
        return done
    from srperf.transports.ssh import SshTransport

    for side in SIDES:
        ssh = getattr(tb.endpoints, side).transport.ssh
        with SshTransport(ssh) as node:
            undone = undo_journal.replay(node, tb, side)
            stopped = reap(node, tb, side)
            if ssh_prepare.unprepare(node, host_setup(tb, side)) or stopped or undone:
                done.append(node.where + "".join(f"; {s}" for s in stopped) +
                            (f"; {len(undone)} steering commands undone" if undone else ""))
    return done


def host_status(testbed: Testbed) -> list[str]:
    """What ``srperf testbed status`` says of the endpoint hosts (empty: none named):
    per host, unreachable, its ``dev`` missing or with another MAC than the SUT's
    neighbour entry, or a killed run's base setup (its record) or work directories left
    (``srperf testbed unprepare`` undoes them); else that it is ready."""
    tb: TestbedConfig = testbed.config
    if tb.endpoints is None:
        return []
    ends = SshEndpoints(testbed)
    lines = []
    try:
        for side in SIDES:
            host = getattr(tb.endpoints, side).transport.ssh.host
            try:
                node = ends.node(side)
                if not node.run(["true"], timeout=30.0).ok:
                    raise SrperfError("a command there failed")
                ends._check_dev(side)
            except SrperfError as exc:
                lines.append(f"endpoints.{side} ({host}): {exc}")
                continue
            left = [path for path in (host_setup(tb, side).record, workdirs_list(tb, side))
                    if node.run(["test", "-e", path], timeout=30.0).ok]
            lines.append(f"endpoints.{side} ({host}): " + (
                f"a killed run's setup is left ({', '.join(left)}): srperf testbed "
                "unprepare" if left else "ready"))
    finally:
        for node in ends._nodes.values():
            node.close()
    return lines


__all__ = ["SshEndpoints", "host_setup", "expected_mac", "undo_left_setup", "host_status",
           "SIDES"]
