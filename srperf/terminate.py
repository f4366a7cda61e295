"""SIGTERM handled like Ctrl-C, so that a CI timeout or ``kill PID`` cleans up.

Python ends a process on SIGTERM without unwinding: no ``finally`` runs, so a
configured SUT, namespaces and an open run would stay behind.  Inside
:func:`sigterm_as_interrupt` a SIGTERM raises :class:`Terminated` where the
program is, and every cleanup path a Ctrl-C takes runs too.
"""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """Raised by SIGTERM inside :func:`sigterm_as_interrupt`; a KeyboardInterrupt,
    so code that cleans up on Ctrl-C cleans up on SIGTERM too."""


def _on_sigterm(signum: int, frame: object) -> None:
    # a second SIGTERM must not cut the cleanup short (SIGKILL still can)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated`; the previous handler is
    restored on the way out.  Only the main thread may enter (Python delivers
    signals there)."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
