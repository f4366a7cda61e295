"""TEST FIXTURE (not part of srperf): a real OpenSSH sshd in a network namespace.

:class:`SshdNode` joins two existing namespaces with a management veth on
203.0.113.0/24 (TEST-NET-3; a /29 per ``tag``, so up to 32 can coexist), makes
throw-away ed25519 host and client keys in a private temporary directory, and
runs ``/usr/sbin/sshd -D -e`` in ``server_ns`` (key-only logins, root allowed
with a key).  A client reaches it from this host through
``proxy_command`` (``ip netns exec CLIENT_NS nc -v %h %p``: -v makes nc
say why a connection failed), or directly from a
process running inside ``client_ns``.  No traffic leaves the two namespaces.

Example::

    with SshdNode("sshq-a", "sshq-b", tag=1) as node:
        testbed["sut"]["transport"] = {"kind": "ssh", "ssh": node.ssh_config()}

On exit (also after a failure) every process it started is killed by PID and
the veth and the temporary directory are removed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest

from srperf.kernel.guest_sshd import key_only_sshd_config

log = logging.getLogger(__name__)

SSHD = "/usr/sbin/sshd"
MGMT_NET = ipaddress.IPv4Network("203.0.113.0/24")
"""TEST-NET-3 (RFC 5737): documentation addresses, never routed."""
BLOCK = 8
"""Addresses per tag: .1 client, .2 server, .3-.6 unused (for 'unreachable' tests)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc/PID/task/*/children)."""
    kids: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the process ended meanwhile: no children left to find
        return kids
    for task in tasks:
        try:
            kids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def _descendants(pid: int) -> list[int]:
    """Every descendant of ``pid``, deepest last."""
    found: list[int] = []
    todo = _children(pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo += _children(child)
    return found


def _kill(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class SshdNode:
    """A throw-away sshd listening on ``host:port`` inside ``server_ns``."""

    def __init__(self, server_ns: str, client_ns: str, tag: int = 0, port: int = 22,
                 user: str = "root") -> None:
        if not 0 <= tag < MGMT_NET.num_addresses // BLOCK:
            raise ValueError(f"tag {tag} out of range 0-{MGMT_NET.num_addresses // BLOCK - 1}")
        self.server_ns, self.client_ns, self.tag = server_ns, client_ns, tag
        base = MGMT_NET.network_address + tag * BLOCK
        self.client_ip = str(base + 1)
        self.host = str(base + 2)
        self.unused_ips = tuple(str(base + i) for i in range(3, BLOCK - 1))
        """On the management link but nobody's: a first connection there waits for
        ARP (3 s, then 'no route to host'; the kernel then remembers the failure
        for a while, so use each address for one timeout test only)."""
        self.prefix_len = 32 - (BLOCK - 1).bit_length()
        self.port = port
        self.user = user
        self.server_if = f"sshm{tag}s"
        self.client_if = f"sshm{tag}c"
        self.proxy_command = f"ip netns exec {client_ns} nc -v %h %p"
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._veth = False

    # -- files -------------------------------------------------------------------------
    @property
    def dir(self) -> Path:
        assert self._dir is not None, "SshdNode used outside its with block"
        return self._dir

    @property
    def key_file(self) -> str:
        return str(self.dir / "client_key")

    @property
    def known_hosts(self) -> str:
        return str(self.dir / "known_hosts")

    @property
    def log_file(self) -> Path:
        return self.dir / "sshd.log"

    def new_key(self, name: str) -> str:
        """Another ed25519 key pair in the private directory (not authorized)."""
        path = self.dir / name
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                        "-f", str(path)], check=True)
        return str(path)

    def ssh_config(self, **overrides: Any) -> dict[str, Any]:
        """A ``sut.transport.ssh`` mapping for a testbed YAML."""
        cfg: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user,
                               "key_file": self.key_file, "known_hosts": self.known_hosts,
                               "proxy_command": self.proxy_command, "timeout_s": 10}
        cfg.update(overrides)
        return cfg

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> "SshdNode":
        try:
            self._setup()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            if self._veth:
                _ip("-n", self.server_ns, "link", "del", self.server_if, check=False)
                self._veth = False
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def _setup(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix=f"srperf-sshd{self.tag}-"))  # mode 0700
        _ip("-n", self.server_ns, "link", "add", self.server_if, "type", "veth",
            "peer", "name", self.client_if, "netns", self.client_ns)
        self._veth = True
        for ns, dev, addr in ((self.server_ns, self.server_if, self.host),
                              (self.client_ns, self.client_if, self.client_ip)):
            _ip("-n", ns, "addr", "add", f"{addr}/{self.prefix_len}", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        host_key = self.new_key("host_key")
        self.new_key("client_key")
        (self.dir / "authorized_keys").write_text(Path(self.key_file + ".pub").read_text())
        host_pub = Path(host_key + ".pub").read_text().split()
        name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        Path(self.known_hosts).write_text(f"{name} {host_pub[0]} {host_pub[1]}\n")
        (self.dir / "sshd_config").write_text(key_only_sshd_config(
            self.port, self.host, str(host_key), str(self.dir / "authorized_keys"),
            str(self.dir / "sshd.pid")) + "MaxStartups 50\nLogLevel VERBOSE\n")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        subprocess.run([SSHD, "-t", "-f", str(self.dir / "sshd_config")], check=True,
                       capture_output=True)
        self.start()

    def start(self) -> None:
        """Start the listener (if it is not running) and wait until it accepts."""
        if self._proc is not None and self._proc.poll() is None:
            return
        with open(self.log_file, "ab") as logf:
            # ip netns exec execs sshd: the Popen PID is the listener's PID.
            self._proc = subprocess.Popen(
                ["ip", "netns", "exec", self.server_ns, SSHD, "-D", "-e",
                 "-f", str(self.dir / "sshd_config")],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = subprocess.run(["ip", "netns", "exec", self.client_ns, "nc", "-z",
                                    "-w", "1", self.host, str(self.port)],
                                   capture_output=True)
            if probe.returncode == 0:
                log.debug("sshd %s:%s up (pid %s)", self.host, self.port, self._proc.pid)
                return
            if self._proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"sshd in {self.server_ns} did not start: "
                           f"{self.log_file.read_text()[-2000:]}")

    def session_pids(self) -> list[int]:
        """PIDs of the per-connection sshd processes (and what they run)."""
        if self._proc is None or self._proc.poll() is not None:
            return []
        return _descendants(self._proc.pid)

    def drop_sessions(self) -> int:
        """SIGKILL every connection's sshd (not the listener), as a crash would;
        returns how many processes were killed."""
        pids = self.session_pids()
        _kill(pids)
        return len(pids)

    def stop(self) -> None:
        """Kill the listener and its sessions (by PID); start() brings it back."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            _kill(_descendants(proc.pid))
            proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def sshd_in_new_namespaces(server_ns: str, client_ns: str, tag: int = 0) -> Iterator[SshdNode]:
    """An :class:`SshdNode` between two namespaces made for it (and removed after it)."""
    made: list[str] = []
    try:
        for ns in (server_ns, client_ns):
            subprocess.run(["ip", "netns", "add", ns], check=True)
            made.append(ns)
        with SshdNode(server_ns, client_ns, tag=tag) as node:
            yield node
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], check=False)


SHORT_SEARCH: dict[str, Any] = {"algorithm": "bisect", "trial_duration_s": 0.2,
                                "accuracy": "10%", "min_rate": "2%", "max_rate": "20%"}
"""A short bisection for runs over the SSH double (seconds per behavior)."""


def trusting_known_hosts(folder: Path, hosts: Sequence[str]) -> Path:
    """``folder/known_hosts`` trusting one fresh ed25519 key under each of ``hosts``: for
    checks that refuse a testbed before any connection (nobody listens there)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    str(folder / "key")], check=True)
    pub = " ".join((folder / "key.pub").read_text().split()[:2])
    (folder / "known_hosts").write_text("".join(f"{h} {pub}\n" for h in hosts))
    return folder / "known_hosts"


def virtual_sshd_fixture(prefix: str, tag: int, name: str) -> Callable[[], Iterator[SshdNode]]:
    """A module-scoped pytest fixture (assign it to ``node``) yielding the sshd of
    :func:`sshd_on_virtual_testbed` ``prefix``."""
    @pytest.fixture(scope="module")
    def node() -> Iterator[SshdNode]:
        with sshd_on_virtual_testbed(prefix, tag=tag, name=name) as sshd:
            yield sshd

    return node


@contextlib.contextmanager
def sshd_on_virtual_testbed(prefix: str, tag: int, name: str = "links") -> Iterator[SshdNode]:
    """A virtual testbed ``prefix`` (data links and the SUT's base setup) whose SUT
    namespace runs an sshd reached from its tester namespace; both removed after."""
    from srperf.config.model import TestbedConfig
    from srperf.testbeds.virtual import VirtualTestbed

    vt = VirtualTestbed(TestbedConfig(name=name, prefix=prefix))
    try:
        vt.up()
        with SshdNode(f"{prefix}-sut", f"{prefix}-tester", tag=tag) as node:
            yield node
    finally:
        vt.down()


@contextlib.contextmanager
def sshd_endpoint_hosts(mgmt: str, sut: str, client: str, server: str, tags: tuple[int, int, int],
                        links_up: bool = False) -> Iterator[dict[str, SshdNode]]:
    """Three SSH hosts for a stateful run over SSH: ``sut``, ``client`` and ``server``
    namespaces, each running an sshd reached from ``mgmt``, cabled client c0 -- s0 SUT
    s1 -- c1 server with the MACs a testbed file names by default (``links_up``: set
    up, as cabled ports are).  Yields {"sut", "client", "server": node}; every
    namespace is removed after."""
    from srperf.config.model import TestbedConfig

    defaults = TestbedConfig(name="macs")
    made: list[str] = []
    try:
        with contextlib.ExitStack() as stack:
            for ns in (mgmt, sut, client, server):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
                subprocess.run(["ip", "netns", "add", ns], check=True)
                made.append(ns)
            t, s = defaults.tester, defaults.sut
            for end_ns, end_dev, end_mac, sut_dev, sut_mac in (
                    (client, "c0", t.tx.mac, "s0", s.in_port.mac),
                    (server, "c1", t.rx.mac, "s1", s.out_port.mac)):
                subprocess.run(["ip", "link", "add", end_dev, "netns", end_ns, "address",
                                end_mac, "type", "veth", "peer", "name", sut_dev, "netns",
                                sut, "address", sut_mac], check=True)
                for ns, dev in ((end_ns, end_dev), (sut, sut_dev)) if links_up else ():
                    subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
            yield {role: stack.enter_context(SshdNode(ns, mgmt, tag=tag))
                   for role, ns, tag in zip(("sut", "client", "server"),
                                            (sut, client, server), tags)}
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
