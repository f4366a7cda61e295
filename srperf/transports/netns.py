"""Transport into a network namespace on this host, or onto this host itself."""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

from srperf.errors import TransportError
from srperf.util.netns import CommandResult
from srperf.transports.base import TIMED_OUT, Held, Transport, env_argv

log = logging.getLogger(__name__)


class NetnsTransport(Transport):
    """Runs commands with ``ip netns exec NS`` (or directly when ``ns`` is None).

    ``ip netns exec`` keeps this host's file system, so the node's working
    directory is a ``mktemp -d`` directory under ``tmp_base`` on this host
    (default: Python's temporary directory, which a run points at its own
    directory, so that its files go with it).
    """

    name = "netns"

    def __init__(self, ns: str | None, tmp_base: str | None = None) -> None:
        super().__init__(tmp_base or tempfile.gettempdir())
        self.ns = ns

    @property
    def where(self) -> str:
        return f"netns {self.ns}" if self.ns else "this host"

    def machine(self) -> Transport:
        return NetnsTransport(None, self.tmp_base) if self.ns else self

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """Run ``argv`` with ``env`` on top of this process's environment, whose own
        ``SRPERF_*`` variables are left out (the node sees only what srperf passes, as over
        SSH)."""
        full = (["ip", "netns", "exec", self.ns] if self.ns else []) + env_argv(argv, env)
        log.debug("%s: %s", self.where, " ".join(full))
        try:
            # Own session: a timeout kills the command and everything it started.
            proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True,
                                    start_new_session=True, env=_node_environ())
        except FileNotFoundError as exc:
            if self.ns:
                raise TransportError(f"{self.where}: cannot run ip: {exc}") from exc
            return CommandResult(tuple(argv), 127, "", f"{argv[0]}: command not found")
        try:
            out, err = proc.communicate(input_text, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            try:
                out, err = proc.communicate(timeout=5.0)
            except subprocess.TimeoutExpired:  # a descendant left the group, pipes open
                out, err = "", ""
                proc.kill()
                proc.wait()
            return CommandResult(tuple(argv), TIMED_OUT, out,
                                 err + f"timed out after {timeout} s")
        if self.ns and proc.returncode == 255 and \
                err.startswith("Cannot open network namespace"):
            raise TransportError(f"{self.where}: {err.strip()} (is the testbed set up?)")
        return CommandResult(tuple(argv), proc.returncode, out, err)

    def _put_file(self, local: Path, remote: str) -> None:
        from srperf.safety import safe_paths

        safe_paths.copy_file(local, remote)

    def hold(self, argv: Sequence[str]) -> Held:
        full = (["ip", "netns", "exec", self.ns] if self.ns else []) + list(argv)
        log.debug("%s: hold %s", self.where, " ".join(full))
        try:
            # close_fds (the default): no other child inherits the stdin pipe, so
            # only this process's end closes it
            proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, bufsize=0,
                                    start_new_session=True, env=_node_environ())
        except FileNotFoundError as exc:
            raise TransportError(f"{self.where}: cannot run {full[0]}: {exc}") from exc
        return _HeldProcess(proc, self.where)


class _HeldProcess(Held):
    """A local child process held through its stdin pipe."""

    def __init__(self, proc: "subprocess.Popen[bytes]", where: str) -> None:
        self.proc, self.where = proc, where
        self._buf = b""

    def readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TransportError(f"{self.where}: no answer within {timeout:g} s")
                if not sel.select(left):
                    continue
                data = os.read(fd, 4096)
                if not data:  # the process ended
                    line, self._buf = self._buf, b""
                    return line.decode(errors="replace")
                self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((line + "\n").encode())
        except (BrokenPipeError, ValueError) as exc:
            raise TransportError(f"{self.where}: the held process ended") from exc

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.wait()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _node_environ() -> dict[str, str]:
    """This process's environment without its ``SRPERF_*`` variables (the controller's
    settings, e.g. SRPERF_BUILD_DIR, must not reach a CFG script as parameters)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SRPERF_")}
