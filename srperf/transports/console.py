"""Transport into a QEMU guest through a serial port: no network, no SSH in the guest.

The guest's ``/init`` (:mod:`srperf.kernel.initramfs`) runs :data:`AGENT_SCRIPT`
on its second serial port (raw mode, no echo), which QEMU connects to a unix
socket on this host.  One request is one line::

    ID CMD_B64 STDIN_B64 TIMEOUT_S

(``-`` for an empty field); the agent runs the command with ``bash`` under
``timeout`` and answers with one line::

    @@srperf ID RC STDOUT_B64 STDERR_B64

Everything is base64, so no output can pass for the marker and no byte of a
command is read by a terminal.  Lines the host does not expect (an answer to a
request that timed out) are skipped by their ID.  Files are pushed as a
command's stdin.  The socket takes one client at a time: one transport per guest.
"""

from __future__ import annotations

import base64
import itertools
import logging
import os
import shlex
import socket
import time
from pathlib import Path
from typing import Mapping, Sequence

from srperf.errors import TransportError
from srperf.util.netns import CommandResult
from srperf.transports.base import TIMED_OUT, Transport, env_argv

log = logging.getLogger(__name__)

GUEST_TTY = "/dev/ttyS1"
"""The guest's serial port the agent serves (QEMU's second ``-serial``)."""
MARK = "@@srperf"

AGENT_SCRIPT = f"""#!/bin/bash
# srperf console agent (srperf/transports/console.py): one request per line.
# (few processes per request: each fork costs milliseconds in an emulated guest)
dec() {{ if [[ "$1" != - ]]; then base64 -d <<<"$1"; fi; }}
enc() {{ if [[ -s "$1" ]]; then base64 -w0 <"$1"; else printf -- -; fi; }}
d="${{SRPERF_AGENT_DIR:-/run}}"   # scratch files (the guest's tmpfs)
cd /tmp || exit 1
while IFS=' ' read -r id cmd input limit; do
    [[ -n "$id" && -n "$limit" ]] || continue
    dec "$cmd" > "$d/srperf.cmd"
    dec "$input" > "$d/srperf.in"
    timeout "$limit" bash "$d/srperf.cmd" < "$d/srperf.in" > "$d/srperf.out" 2> "$d/srperf.err"
    rc=$?
    printf '{MARK} %s %s %s %s\\n' "$id" "$rc" "$(enc "$d/srperf.out")" "$(enc "$d/srperf.err")"
done
"""

_TIMEOUT_RCS = (124, 137, 143)
"""Exit statuses of a command busybox ``timeout`` stopped (TERM: 143, KILL: 137)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode() if data else "-"


def _unb64(text: str) -> bytes:
    return b"" if text == "-" else base64.b64decode(text)


class ConsoleTransport(Transport):
    """Commands in a guest through the agent on its serial port (``socket_path``)."""

    name = "console"

    def __init__(self, socket_path: str, label: str = "guest", tmp_base: str = "/tmp") -> None:
        super().__init__(tmp_base)
        self.socket_path = socket_path
        self.label = label
        self._sock: socket.socket | None = None
        self._buf = b""
        self._ids = itertools.count(1)

    @property
    def where(self) -> str:
        return f"{self.label} (console {self.socket_path})"

    # -- connection -------------------------------------------------------------
    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.socket_path)
            except OSError as exc:
                sock.close()
                raise TransportError(f"{self.where}: cannot connect: {exc} "
                                     "(is the guest up?)") from exc
            self._sock, self._buf = sock, b""
        return self._sock

    def _disconnect(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def reconnect(self) -> None:
        self._disconnect()
        self._connect()

    def _readline(self, deadline: float) -> str:
        sock = self._connect()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            try:
                data = sock.recv(65536)
            except socket.timeout:
                raise TimeoutError from None
            except OSError as exc:
                self._disconnect()
                raise TransportError(f"{self.where}: connection lost: {exc}") from exc
            if not data:
                self._disconnect()
                raise TransportError(f"{self.where}: the guest's console closed "
                                     "(did QEMU end?)")
            self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace").strip("\r")

    # -- requests -----------------------------------------------------------------
    def call(self, script: str, stdin: bytes = b"", timeout: float = 60.0
             ) -> tuple[int, bytes, bytes]:
        """Run the bash ``script`` in the guest; (exit status, stdout, stderr).

        A script still running after ``timeout`` s is stopped in the guest (status
        :data:`TIMED_OUT`); a guest that does not answer at all within ``timeout``
        + 10 s raises TransportError."""
        request_id = next(self._ids)
        limit = max(1, int(round(timeout)))
        line = f"{request_id} {_b64(script.encode())} {_b64(stdin)} {limit}\n"
        sock = self._connect()
        start = time.monotonic()
        try:
            sock.sendall(line.encode())
        except OSError as exc:
            self._disconnect()
            raise TransportError(f"{self.where}: cannot send: {exc}") from exc
        deadline = start + limit + 10.0
        while True:
            try:
                text = self._readline(deadline)
            except TimeoutError:
                raise TransportError(f"{self.where}: no answer within {limit + 10} s") from None
            words = text.split(" ")
            if len(words) != 5 or words[0] != MARK:
                continue
            if words[1] != str(request_id):
                log.debug("%s: late answer to request %s skipped", self.where, words[1])
                continue
            rc = int(words[2])
            if rc in _TIMEOUT_RCS and time.monotonic() - start >= limit - 0.5:
                rc = TIMED_OUT
            return rc, _unb64(words[3]), _unb64(words[4])

    def wait_ready(self, timeout: float, alive: "callable[[], bool] | None" = None) -> None:
        """Wait until the agent answers (the guest has booted), at most ``timeout`` s;
        ``alive()`` False (QEMU ended) stops the wait at once."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise TransportError(f"{self.where}: QEMU ended while the guest booted")
            try:
                if not os.path.exists(self.socket_path):
                    raise TransportError(f"{self.where}: no socket yet")
                self._connect()
                rc, out, _ = self._probe(min(5.0, max(0.5, deadline - time.monotonic())))
                if rc == 0 and out.strip() == b"ready":
                    return
            except (TransportError, TimeoutError) as exc:
                last = exc
                self._disconnect()
            time.sleep(0.2)
        raise TransportError(f"{self.where}: the guest did not answer within {timeout:g} s"
                             + (f" ({last})" if last else ""))

    def _probe(self, wait: float) -> tuple[int, bytes, bytes]:
        request_id = next(self._ids)
        sock = self._connect()
        sock.sendall(f"{request_id} {_b64(b'echo ready')} - 5\n".encode())
        deadline = time.monotonic() + wait
        while True:
            words = self._readline(deadline).split(" ")
            if len(words) == 5 and words[0] == MARK and words[1] == str(request_id):
                return int(words[2]), _unb64(words[3]), _unb64(words[4])

    # -- Transport ------------------------------------------------------------------
    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        words = env_argv(argv, env)
        script = " ".join(shlex.quote(w) for w in words)
        log.debug("%s: %s", self.where, script)
        rc, out, err = self.call(script, (input_text or "").encode(), timeout)
        if rc == 127 and not err:
            err = f"{argv[0]}: command not found".encode()
        return CommandResult(tuple(argv), rc, out.decode(errors="replace"),
                             err.decode(errors="replace") +
                             (f"timed out after {timeout:g} s" if rc == TIMED_OUT else ""))

    def _put_file(self, local: Path, remote: str) -> None:
        mode = oct(os.stat(local).st_mode & 0o7777)[2:]
        q = shlex.quote(remote)
        rc, _, err = self.call(f"cat > {q} && chmod {mode} {q}", Path(local).read_bytes(),
                               timeout=60.0)
        if rc != 0:
            raise TransportError(f"{self.where}: cannot write {remote}: "
                                 f"{err.decode(errors='replace').strip()}")


__all__ = ["ConsoleTransport", "AGENT_SCRIPT", "GUEST_TTY"]
