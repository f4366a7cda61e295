"""Reads with a bound, and the one line an error may quote.

A file srperf reads for a check or a message (a config fragment, a build's output) is
read in blocks: at most :data:`MAX_LINE` characters of a line are ever held (a longer
line is cut, and reading it stops there), at most ``max_bytes`` of the file, so that
no read takes memory in proportion to its input (a 4 MiB one-line file, a 128 MiB
sparse one).  An error quotes at most one line, cut to :data:`QUOTE_CHARS`
(:func:`quote_line`), and only of a file any local user may read anyway
(:func:`may_quote`): never a line of a file such as ``/etc/shadow``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

MAX_LINE = 4096
"""Characters of one line that are kept (a longer line is cut and marked)."""
QUOTE_CHARS = 200
"""Characters of a line an error message quotes."""
BLOCK = 1 << 16


class TooLarge(Exception):
    """The file is larger than the bound its reader set."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(f"{path}: larger than {limit} bytes")
        self.path = path
        self.limit = limit


@dataclass(frozen=True)
class Line:
    """One line of a file, as :func:`lines` reads it."""

    number: int
    text: str
    """Without its newline; at most ``max_line`` characters."""
    cut: bool
    """True when the line was longer (the rest of the file is then not read)."""


def lines(path: str | Path, max_bytes: int, max_line: int = MAX_LINE) -> Iterator[Line]:
    """The lines of ``path`` (decoded UTF-8, bad bytes replaced), read in blocks.  A line
    longer than ``max_line`` is yielded cut (``cut=True``) and nothing after it is read;
    :class:`TooLarge` once more than ``max_bytes`` were read.  The file is opened without
    blocking (a FIFO in its place does not hang the read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path}: not a regular file")
        number, held, total = 0, b"", 0
        while True:
            block = f.read(BLOCK)
            total += len(block)
            if total > max_bytes:
                raise TooLarge(str(path), max_bytes)
            if not block:
                if held:
                    yield Line(number + 1, held.decode("utf-8", "replace"), False)
                return
            held += block
            parts = held.split(b"\n")
            held = parts.pop()
            for raw in parts:
                number += 1
                if len(raw) > max_line:
                    yield Line(number, raw[:max_line].decode("utf-8", "replace"), True)
                    return
                yield Line(number, raw.decode("utf-8", "replace").rstrip("\r"), False)
            if len(held) > max_line:
                yield Line(number + 1, held[:max_line].decode("utf-8", "replace"), True)
                return


def read_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The whole of a small regular file (its reader's bound ``max_bytes``: TooLarge
    beyond, having read no more than that), read without blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path}: not a regular file")
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise TooLarge(str(path), max_bytes)
    return raw


def read_text(path: str | Path, max_bytes: int) -> str:
    """:func:`read_bytes` decoded as UTF-8 (bad bytes replaced)."""
    return read_bytes(path, max_bytes).decode("utf-8", "replace")


def quote_line(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as an error quotes it: its ``repr``, cut to ``limit`` characters."""
    shown = repr(text[:limit + 1])
    if len(text) > limit or len(shown) > limit + 2:
        return shown[:limit] + "...(cut)"
    return shown


def may_quote(path: str | Path) -> bool:
    """True when an error may quote a line of ``path``: every local user may read it
    anyway (mode o+r), or it is the file of the user who ran ``sudo srperf``; so a
    message shows no one what they could not see (root's ``/etc/shadow`` is never
    quoted, even to root: messages go to logs and terminals too)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    sudo = os.environ.get("SUDO_UID", "")
    mine = sudo.isdigit() and int(sudo) != 0 and st.st_uid == int(sudo) \
        and bool(st.st_mode & stat.S_IRUSR)
    return bool(st.st_mode & stat.S_IROTH) or mine


__all__ = ["BLOCK", "Line", "MAX_LINE", "QUOTE_CHARS", "TooLarge", "lines", "may_quote",
           "quote_line", "read_bytes", "read_text"]
