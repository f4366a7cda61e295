"""A shell held on a node that runs commands sent to it: one round trip per command.

On an SSH testbed every :meth:`Transport.run` opens a channel and starts a process
on the SUT: several round trips, and a new process, per call.  Reading the SUT's
counters once per trial that way costs more than the trial's own bookkeeping.  A
:class:`ResidentShell` is a ``bash`` loop started once through
:meth:`Transport.hold`: each command is one line on its stdin, and its output,
each line prefixed (``|`` stdout, ``!`` stderr) so that no output can pass for the
end marker, comes back followed by ``@@srperf-end STATUS``.  It has the
:meth:`run` of a transport, so code that takes a transport (a forwarder's
``counters``) runs through it unchanged.  The held shell ends when its stdin
closes (:meth:`close`, srperf's end, a dropped connection).
"""

from __future__ import annotations

import logging
import shlex
from typing import Mapping, Sequence

from srperf.errors import TransportError
from srperf.util.netns import CommandResult
from srperf.transports.base import Held, Transport

log = logging.getLogger(__name__)

END = "@@srperf-end"
_LOOP = (
    'err=$(mktemp) || exit 1; trap \'rm -f "$err"\' EXIT; '
    'while IFS= read -r line; do '
    'out=$(eval "$line" 2>"$err"); rc=$?; '
    '[ -n "$out" ] && printf "%s\\n" "$out" | sed "s/^/|/"; '
    '[ -s "$err" ] && sed "s/^/!/" "$err"; '
    f'echo "{END} $rc"; '
    'done')


class ResidentShell:
    """Commands on ``transport``'s node through one held ``bash`` (see the module)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._held: Held | None = None

    @property
    def where(self) -> str:
        return self.transport.where

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """Run ``argv`` (with ``env``) in the held shell; like :meth:`Transport.run`
        (no stdin: ``input_text`` goes through the transport itself)."""
        if input_text is not None:
            return self.transport.run(argv, env=env, timeout=timeout, input_text=input_text)
        words = ["env", *(f"{k}={v}" for k, v in (env or {}).items()), *argv] if env else argv
        line = " ".join(shlex.quote(w) for w in words)
        held = self._shell()
        try:
            held.send(line)
            out: list[str] = []
            err: list[str] = []
            while True:
                text = held.readline(timeout)
                if text == "":
                    raise TransportError(f"{self.where}: the resident shell ended")
                if text.startswith(END + " "):
                    return CommandResult(tuple(argv), int(text.split()[1]),
                                         "".join(o + "\n" for o in out),
                                         "".join(e + "\n" for e in err))
                (out if text.startswith("|") else err).append(text[1:])
        except TransportError:
            self.close()
            raise

    def _shell(self) -> Held:
        if self._held is None or not self._held.alive():
            self.close()
            self._held = self.transport.hold(["bash", "-c", _LOOP])
            log.debug("%s: resident shell started", self.where)
        return self._held

    def close(self) -> None:
        """End the held shell (idempotent)."""
        if self._held is not None:
            held, self._held = self._held, None
            try:
                held.close()
            except TransportError:
                pass


__all__ = ["ResidentShell"]
