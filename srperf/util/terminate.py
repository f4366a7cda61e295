"""SIGTERM handled like Ctrl-C, so that a CI timeout or ``kill PID`` cleans up.

Python ends a process on SIGTERM without unwinding: no ``finally`` runs, so a
configured SUT, namespaces and an open run would stay behind.  Inside
:func:`sigterm_as_interrupt` a SIGTERM raises :class:`Terminated` where the
program is, and every cleanup path a Ctrl-C takes runs too.

SIGINT is set to raise KeyboardInterrupt there as well, explicitly: a process
started in the background by a non-interactive shell (``srperf run ... &`` in a
script) inherits SIGINT *ignored*, and Python keeps an inherited SIG_IGN, so
``kill -INT`` would otherwise do nothing.
"""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator


def run_end(exc: BaseException | None) -> tuple[str, str | None, str | None]:
    """How a run ends after ``exc`` (None: normally): (status, reason, signal name), as
    the results store records it: ``finished``; ``interrupted`` by SIGINT or SIGTERM;
    ``failed`` with a one-line reason, never empty."""
    if exc is None:
        return "finished", None, None
    if isinstance(exc, KeyboardInterrupt):
        name = (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT).name
        return "interrupted", f"interrupted by {name}", name
    text = " ".join(str(exc).split())
    return "failed", (f"{type(exc).__name__}: {text}" if text else type(exc).__name__), None


class Terminated(KeyboardInterrupt):
    """Raised by SIGTERM inside :func:`sigterm_as_interrupt`; a KeyboardInterrupt,
    so code that cleans up on Ctrl-C cleans up on SIGTERM too."""


def _ignore_more() -> None:
    # a second SIGTERM or SIGINT must not cut the cleanup short (SIGKILL still can)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _on_sigterm(signum: int, frame: object) -> None:
    _ignore_more()
    raise Terminated()


def _on_sigint(signum: int, frame: object) -> None:
    _ignore_more()
    raise KeyboardInterrupt()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` and SIGINT KeyboardInterrupt
    (even when SIGINT was inherited ignored); after the first, both are ignored
    while the cleanup runs; the previous handlers are restored on
    the way out.  Only the main thread may enter (Python delivers
    signals there)."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    previous_int = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous)
