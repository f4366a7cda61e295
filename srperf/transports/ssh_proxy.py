"""An OpenSSH-style ProxyCommand for paramiko that notices when the proxy ends.

``paramiko.ProxyCommand`` splits the command itself (no shell), talks to it
through pipes and, once the proxy has exited, keeps returning empty reads until
its timeout: the SSH session never learns that the connection is gone.  This
one runs the command through ``/bin/sh -c 'exec ...'`` and hands it one end of
a Unix socket pair, as OpenSSH does; the end of the proxy's output is reported
as end of stream, its stderr is kept for messages, and it is reaped on close.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess

import paramiko

log = logging.getLogger(__name__)


class _QuietTransportErrors(logging.Filter):
    """Paramiko's transport thread logs each failed handshake (a proxy that is missing or
    exits at once) as an ERROR with its traceback; srperf turns the same failure into
    one TransportError line, so those records pass only when srperf logs at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR or log.isEnabledFor(logging.DEBUG)


logging.getLogger("paramiko.transport").addFilter(_QuietTransportErrors())


class ShellProxyCommand(paramiko.ProxyCommand):
    """A socket-like object whose bytes go through ``/bin/sh -c 'exec COMMAND'``.

    The command's stdin and stdout are one end of a Unix socket pair, as in
    OpenSSH: a proxy such as ``nc`` can then signal the end of the connection
    with ``shutdown()``, which it cannot do on a pipe (it would keep the pipe
    open and the session would hang instead of failing).
    """

    def __init__(self, command: str) -> None:  # no super().__init__(): it splits argv
        self.command = command
        self.cmd = ["/bin/sh", "-c", f"exec {command}"]
        self._sock, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(self.cmd, stdin=theirs.fileno(),
                                            stdout=theirs.fileno(), stderr=subprocess.PIPE,
                                            start_new_session=True)
        except BaseException:
            self._sock.close()
            raise
        finally:
            theirs.close()
        self.timeout: float | None = None
        self._stderr: str | None = None

    def send(self, content: bytes) -> int:
        try:
            return self._sock.send(content)
        except OSError as exc:
            raise paramiko.ProxyCommandFailure(self.command,
                                               self.stderr_text() or str(exc)) from exc

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes; b"" once the proxy has closed the connection."""
        try:
            ready, _, _ = select.select([self._sock], [], [], self.timeout)
            if not ready:
                raise socket.timeout()
            return self._sock.recv(size)
        except (ConnectionError, ValueError):
            return b""

    def stderr_text(self) -> str:
        """What the proxy wrote on stderr (only once it has exited)."""
        if self._stderr is None and self.process.poll() is not None:
            try:
                assert self.process.stderr is not None
                self._stderr = self.process.stderr.read().decode(errors="replace").strip()
            except (OSError, ValueError):
                self._stderr = ""
        return self._stderr or ""

    def exited(self, wait_s: float = 0.0) -> bool:
        """True when the proxy process has ended (waiting up to ``wait_s``)."""
        try:
            self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        """Close the connection and end the proxy (TERM, then KILL), reaping it."""
        self._sock.close()
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.stderr_text()  # keep it for messages, then release the pipe
        if self.process.stderr is not None:
            self.process.stderr.close()

    @property
    def closed(self) -> bool:
        return self._sock.fileno() == -1

    @property
    def _closed(self) -> bool:
        return self.closed

    def settimeout(self, timeout: float | None) -> None:
        self.timeout = timeout
