"""Transport over SSH with paramiko: host keys checked, SFTP push, exit status,
stderr, stdin, timeouts, and clear errors when the node cannot be reached.

Connection loss: when the session drops (sshd killed, node rebooted, proxy
gone), the command running at that moment raises :class:`TransportError`
("connection lost"), and so does every later ``run`` until the caller calls
:meth:`SshTransport.reconnect`.  There is no silent reconnect-and-retry: the
outcome of the interrupted command is unknown, and repeating a configuration
command behind the caller's back could apply it twice.  ``close()`` reconnects
once on its own, best effort, to remove the working directory.  Callers that know
their command is idempotent (the SUT's CFG functions, counter reads:
:class:`srperf.testbeds.sut.SutControl`) reconnect and run it again.

Timeouts: each command runs under coreutils ``timeout -k 5 T`` on the node, so
a command that runs out of time is stopped there too (exit status 124), not
left configuring the SUT in the background.  The node needs ``timeout``,
``mktemp``, ``env`` and ``rm`` (coreutils) and an SFTP subsystem.
"""

from __future__ import annotations

import errno
import logging
import select
import socket
import stat
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import paramiko

from srperf.safety import redact
from srperf.config.model import SshConfig, expand_proxy_command
from srperf.errors import TransportError
from srperf.util.netns import CommandResult
from srperf.transports.base import TIMED_OUT, Held, Transport, env_argv, shell_line
from srperf.transports.ssh_proxy import ShellProxyCommand

log = logging.getLogger(__name__)

KILL_AFTER_S = 5.0
"""``timeout -k``: seconds between TERM and KILL for a command out of time."""
_GRACE_S = KILL_AFTER_S + 10.0
"""Local backstop beyond ``timeout`` when the node does not stop the command."""


class UnknownHostKey(paramiko.SSHException):
    """The node's host key is not in known_hosts (raised by :class:`_RejectUnknown`)."""

    def __init__(self, hostname: str, key: paramiko.PKey) -> None:
        self.hostname = hostname
        self.key = key
        super().__init__(f"{hostname} not found in known_hosts")


class _RejectUnknown(paramiko.RejectPolicy):
    """RejectPolicy that keeps the key it refused, for a useful message."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        raise UnknownHostKey(hostname, key)


class SshTransport(Transport):
    """Runs commands on a node over SSH.  Host keys are checked (RejectPolicy): the
    node's key must be in ``cfg.known_hosts`` (when unset, ``~/.ssh/known_hosts``)."""

    name = "ssh"

    def __init__(self, cfg: SshConfig) -> None:
        super().__init__(cfg.tmp_base)
        self.cfg = cfg
        if cfg.proxy_command:   # may hold a secret: never in a message, log or the store
            redact.register_proxy_command(cfg.proxy_command, cfg.host, cfg.port, cfg.user)
        self._client: paramiko.SSHClient | None = None
        self._proxy: ShellProxyCommand | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lost: str | None = None  # why the session was lost, until reconnect()

    @property
    def where(self) -> str:
        return self.cfg.where

    # -- connection ------------------------------------------------------------------
    def _transport(self) -> paramiko.Transport:
        """The live SSH transport, connecting on first use."""
        if self._lost is not None:
            raise self._lost_error(self._lost)
        if self._client is None:
            self._connect()
        assert self._client is not None
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            self._lost = "the session is no longer active"
            raise self._lost_error(self._lost)
        return transport

    def _check_files(self) -> None:
        """The key and known_hosts files, checked by the read gate again just before
        paramiko opens them by name (they decide whom root trusts and as whom it logs
        in): root's or the invoking user's along their whole path, writable by no one
        else, regular files (a FIFO never blocks).  Untrusted (exit 2) otherwise."""
        from srperf.safety import read_gate

        for key, path in (("known_hosts", self.cfg.known_hosts),
                          ("key_file", self.cfg.key_file)):
            if path:
                read_gate.trusted_file(path, self.where, f"transport.ssh.{key}")

    def _connect(self) -> None:
        cfg = self.cfg
        self._check_files()
        client = paramiko.SSHClient()
        if cfg.known_hosts:
            try:
                client.load_host_keys(cfg.known_hosts)
            except (OSError, paramiko.SSHException, ValueError) as exc:
                raise TransportError(f"{self.where}: cannot read known_hosts "
                                     f"{cfg.known_hosts}: {exc}") from exc
        else:
            client.load_system_host_keys()
        client.set_missing_host_key_policy(_RejectUnknown())
        proxy = None
        if cfg.proxy_command:
            command = expand_proxy_command(cfg.proxy_command, cfg.host, cfg.port, cfg.user)
            log.debug("%s: proxy command %s", self.where, redact.redacted_command(command))
            proxy = ShellProxyCommand(command)
        log.debug("%s: connecting", self.where)
        started = time.monotonic()
        try:
            client.connect(cfg.host, port=cfg.port, username=cfg.user,
                           key_filename=cfg.key_file, timeout=cfg.timeout_s,
                           banner_timeout=cfg.timeout_s, auth_timeout=cfg.timeout_s,
                           channel_timeout=cfg.timeout_s, allow_agent=False,
                           look_for_keys=cfg.key_file is None, sock=proxy)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a TransportError
            client.close()
            if proxy is not None:
                proxy.exited(wait_s=1.0)
            error = self._connect_error(exc, proxy, time.monotonic() - started)
            error = TransportError(redact.redact(str(error)))
            if proxy is not None:
                proxy.close()
            raise error from exc
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(cfg.keepalive_s)
        self._client, self._proxy = client, proxy
        log.info("%s: connected", self.where)

    def _connect_error(self, exc: BaseException, proxy: ShellProxyCommand | None,
                       elapsed: float) -> TransportError:
        cfg, where = self.cfg, self.where
        known = cfg.known_hosts or "~/.ssh/known_hosts"
        if isinstance(exc, UnknownHostKey):
            fp = exc.key.fingerprint if hasattr(exc.key, "fingerprint") else "?"
            scan = f"ssh-keyscan -p {cfg.port} {cfg.host}"
            return TransportError(
                f"{where}: unknown host key: {exc.hostname} offered {exc.key.get_name()} "
                f"{fp}, which is not in {known}; check that fingerprint on the node "
                f"(ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub) and add the key to {known} "
                f"(for instance `{scan} >> {known}`, through the proxy if there is one)")
        if isinstance(exc, paramiko.BadHostKeyException):
            return TransportError(
                f"{where}: host key mismatch: {cfg.host} offered {exc.key.fingerprint}, "
                f"{known} expects {exc.expected_key.fingerprint}; the node was reinstalled "
                f"or this is not the right host: verify it, then replace its entry in "
                f"{known}")
        if isinstance(exc, paramiko.PasswordRequiredException):
            return TransportError(f"{where}: key_file {cfg.key_file} is encrypted; use a "
                                  "key without a passphrase for benchmarks")
        if isinstance(exc, paramiko.AuthenticationException):
            key = f"key {cfg.key_file}" if cfg.key_file else "the keys in ~/.ssh"
            return TransportError(
                f"{where}: authentication failed: the node refused {key} for user "
                f"{cfg.user}; put the matching public key in ~{cfg.user}/.ssh/authorized_keys "
                f"on the node (root logins also need PermitRootLogin prohibit-password) "
                f"or set key_file to the right key")
        detail = str(exc) or type(exc).__name__
        if proxy is not None and proxy.exited():
            said = proxy.stderr_text()
            detail = (f"proxy command exited with status {proxy.process.returncode}"
                      + (f": {said}" if said else ""))
            reason = _classify(said)
        else:
            reason = _classify_exception(exc)
        if not reason and elapsed >= 0.9 * cfg.timeout_s:
            reason = "timeout"  # no banner in time (a proxy may still be waiting)
        via = (f" (via proxy_command {redact.redacted_command(cfg.proxy_command)!r})"
               if cfg.proxy_command else "")
        if reason == "refused":
            return TransportError(f"{where}: connection refused{via}: nothing listens on "
                                  f"port {cfg.port}; start sshd on the node or fix "
                                  f"host/port ({detail})")
        if reason == "unreachable":
            return TransportError(f"{where}: host unreachable{via}: check the address and "
                                  f"the route to it ({detail})")
        if reason == "timeout":
            return TransportError(f"{where}: no answer within {cfg.timeout_s:g} s{via}: "
                                  "the node is down, a firewall drops the packets, or the "
                                  f"address is wrong ({detail})")
        if reason == "resolve":
            return TransportError(f"{where}: cannot resolve host name {cfg.host!r}: "
                                  f"fix sut.transport.ssh.host ({detail})")
        if proxy is not None and proxy.exited():
            return TransportError(f"{where}: the proxy ended before the SSH banner{via}: "
                                  f"{detail}; nothing listens there, the host is "
                                  "unreachable, or the proxy itself failed: run the proxy "
                                  "command by hand (nc -v shows why)")
        return TransportError(f"{where}: cannot open an SSH session{via}: {detail}")

    def _lost_error(self, why: str) -> TransportError:
        return TransportError(f"{self.where}: connection lost ({why}); the outcome of a "
                              "command that was running is unknown; call reconnect() "
                              "(if sshd still listens) to clean up the node")

    def _mark_lost(self, why: str) -> TransportError:
        why = redact.redact(why)
        self._lost = why
        log.warning("%s: connection lost: %s", self.where, why)
        return self._lost_error(why)

    def reconnect(self) -> None:
        """Drop the current connection (if any) and open a new one; raises
        TransportError when the node still cannot be reached."""
        self._disconnect()
        self._lost = None
        self._transport()

    def _disconnect(self) -> None:
        for thing in (self._sftp, self._client, self._proxy):
            if thing is not None:
                try:
                    thing.close()
                except Exception as exc:  # noqa: BLE001 - best effort on a dead link
                    log.debug("%s: closing %r: %s", self.where, thing, exc)
        self._sftp = self._client = self._proxy = None

    def close(self) -> None:
        """Remove the working directory (reconnecting once if the session was lost)
        and disconnect.  Idempotent."""
        if self._lost is not None and self._workdir is not None:
            try:
                self.reconnect()
            except TransportError as exc:
                log.warning("%s: cannot remove %s: %s", self.where, self._workdir, exc)
                self._workdir = None
        super().close()
        self._lost = None

    # -- commands --------------------------------------------------------------------
    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        transport = self._transport()
        line = shell_line(["timeout", "-k", f"{KILL_AFTER_S:g}", f"{timeout:.3f}"]
                          + env_argv(argv, env))
        log.debug("%s: %s", self.where, line)
        try:
            chan = transport.open_session(timeout=self.cfg.timeout_s)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if not transport.is_active():
                raise self._mark_lost(f"opening a channel: {exc}") from exc
            raise TransportError(f"{self.where}: cannot open a channel: {exc}") from exc
        try:
            return self._exchange(chan, transport, tuple(argv), line, timeout, input_text)
        finally:
            chan.close()

    def _exchange(self, chan: paramiko.Channel, transport: paramiko.Transport,
                  argv: tuple[str, ...], line: str, timeout: float,
                  input_text: str | None) -> CommandResult:
        out, err = bytearray(), bytearray()
        start = time.monotonic()
        deadline = start + timeout + _GRACE_S
        try:
            chan.exec_command(line)
            if input_text:
                chan.settimeout(timeout)
                chan.sendall(input_text.encode())
            chan.shutdown_write()
            chan.settimeout(0.0)
            while True:
                _drain(chan, out, err)
                if chan.exit_status_ready() and (chan.closed or chan.eof_received):
                    _drain(chan, out, err)
                    break
                if not transport.is_active():
                    break
                if time.monotonic() > deadline:
                    return CommandResult(argv, TIMED_OUT, out.decode(errors="replace"),
                                         err.decode(errors="replace")
                                         + f"timed out after {timeout} s (the node did not "
                                         "stop the command)")
                select.select([chan], [], [], 0.05)
        except socket.timeout:
            return CommandResult(argv, TIMED_OUT, out.decode(errors="replace"),
                                 f"timed out after {timeout} s sending stdin")
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if not transport.is_active():
                raise self._mark_lost(f"while running {argv[0] if argv else ''!s}: "
                                      f"{exc}") from exc
            raise TransportError(f"{self.where}: {line}: {exc}") from exc
        if chan.exit_status == -1:
            if not transport.is_active():
                raise self._mark_lost(f"while running {' '.join(argv)[:80]}")
            err += b"\nno exit status from the node (the command was killed by a signal?)"
            return CommandResult(argv, 255, out.decode(errors="replace"),
                                 err.decode(errors="replace"))
        rc = chan.exit_status
        stderr = err.decode(errors="replace")
        if rc in (TIMED_OUT, 128 + 9) and time.monotonic() - start >= timeout:
            # coreutils timeout: 124 after TERM, 137 when it needed KILL
            rc = TIMED_OUT
            stderr += f"timed out after {timeout} s"
        return CommandResult(argv, rc, out.decode(errors="replace"), stderr)

    def hold(self, argv: Sequence[str]) -> Held:
        """``argv`` on a channel of its own, without ``timeout``: it lives until
        :meth:`Held.close` or until the connection ends (sshd then closes its stdin)."""
        transport = self._transport()
        try:
            chan = transport.open_session(timeout=self.cfg.timeout_s)
            chan.exec_command(shell_line(argv))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if not transport.is_active():
                raise self._mark_lost(f"starting {argv[0] if argv else ''}: {exc}") from exc
            raise TransportError(f"{self.where}: cannot start {shell_line(argv)[:80]}: "
                                 f"{exc}") from exc
        return _HeldChannel(chan, self.where)

    # -- files -----------------------------------------------------------------------
    def _sftp_client(self) -> paramiko.SFTPClient:
        transport = self._transport()
        if self._sftp is None:
            assert self._client is not None
            try:
                self._sftp = self._client.open_sftp()
            except (paramiko.SSHException, EOFError, OSError) as exc:
                if not transport.is_active():
                    raise self._mark_lost(f"opening SFTP: {exc}") from exc
                raise TransportError(f"{self.where}: SFTP unavailable ({exc}); enable "
                                     "'Subsystem sftp' in the node's sshd_config") from exc
        return self._sftp

    def _put_file(self, local: Path, remote: str) -> None:
        sftp = self._sftp_client()
        try:
            sftp.put(str(local), remote)
            sftp.chmod(remote, stat.S_IMODE(local.stat().st_mode))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            transport = self._client.get_transport() if self._client else None
            if transport is None or not transport.is_active():
                raise self._mark_lost(f"copying {local.name}: {exc}") from exc
            raise TransportError(f"{self.where}: cannot copy {local} to {remote}: "
                                 f"{exc}") from exc


class _HeldChannel(Held):
    """A process on the node held through its SSH channel's stdin."""

    def __init__(self, chan: paramiko.Channel, where: str) -> None:
        self.chan, self.where = chan, where
        self._buf = bytearray()

    def readline(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TransportError(f"{self.where}: no answer within {timeout:g} s")
            self.chan.settimeout(left)
            try:
                data = self.chan.recv(4096)
            except socket.timeout:
                continue
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise TransportError(f"{self.where}: {exc}") from exc
            if not data:  # the process ended (or the channel closed)
                line, self._buf = bytes(self._buf), bytearray()
                return line.decode(errors="replace")
            self._buf += data
        line, _, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line.decode(errors="replace")

    def send(self, line: str) -> None:
        try:
            self.chan.settimeout(10.0)
            self.chan.sendall((line + "\n").encode())
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise TransportError(f"{self.where}: the held process ended ({exc})") from exc

    def alive(self) -> bool:
        transport = self.chan.get_transport()
        return (not self.chan.closed and not self.chan.exit_status_ready()
                and transport is not None and transport.is_active())

    def close(self) -> None:
        try:
            self.chan.shutdown_write()
            deadline = time.monotonic() + 5.0
            while not self.chan.exit_status_ready() and time.monotonic() < deadline:
                time.sleep(0.02)
        except (paramiko.SSHException, EOFError, OSError):
            pass
        self.chan.close()


def _drain(chan: paramiko.Channel, out: bytearray, err: bytearray) -> None:
    while chan.recv_ready():
        out += chan.recv(65536)
    while chan.recv_stderr_ready():
        err += chan.recv_stderr(65536)


def _classify(text: str) -> str:
    """refused / unreachable / timeout / resolve / '' from a proxy's message."""
    low = text.lower()
    if "refused" in low:
        return "refused"
    if "unreachable" in low or "no route" in low:
        return "unreachable"
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if "name or service not known" in low or "could not resolve" in low \
            or "temporary failure in name resolution" in low:
        return "resolve"
    return ""


def _classify_exception(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return "resolve"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timeout"
    errors: list[Any] = [exc]
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        errors = list(exc.errors.values())
    codes = {getattr(e, "errno", None) for e in errors}
    if errno.ECONNREFUSED in codes:
        return "refused"
    if codes & {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}:
        return "unreachable"
    if errno.ETIMEDOUT in codes:
        return "timeout"
    return ""
