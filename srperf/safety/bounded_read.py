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

import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

log = logging.getLogger(__name__)

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


class NotOurs(OSError):
    """A state file srperf keeps (under ``/run/srperf``) that is not one it made: a
    symlink, a FIFO or another kind, another user's, or writable by others."""


def read_state(path: str | Path, max_bytes: int, tail: bool = False) -> str:
    """The text of a state file srperf made (a testbed record, a PID file, a guest's
    log), read without following a symlink and without blocking: :class:`NotOurs`
    unless it is a regular file of srperf's user that no one else may write (a FIFO
    planted in its place never hangs a command).  At most ``max_bytes`` are read: the
    first ones (TooLarge beyond), or with ``tail`` the last ones (a long log)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY
                 | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            from srperf.safety.safe_paths import _kind

            raise NotOurs(f"{path}: {_kind(st.st_mode)}, not a regular file srperf made")
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise NotOurs(f"{path}: uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}: "
                          "not a file srperf made")
        if tail and st.st_size > max_bytes:
            f.seek(st.st_size - max_bytes)
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        if not tail:
            raise TooLarge(str(path), max_bytes)
        raw = raw[-max_bytes:]
    return raw.decode("utf-8", "replace")


RECORD_BYTES = 1 << 20
"""The largest record of srperf's own read (srperf writes a few kilobytes)."""


def read_record(path: str | Path) -> Any:
    """The JSON of a record srperf wrote under ``/run/srperf`` (a testbed's settings);
    None when there is none, or when it is not one srperf made (:func:`read_state`: a
    FIFO, a symlink or another user's file is never read; that is logged)."""
    try:
        return json.loads(read_state(path, RECORD_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TooLarge) as exc:
        log.warning("%s: not a record srperf made, ignored: %s", path, exc)
        return None


def read_text(path: str | Path, max_bytes: int) -> str:
    """:func:`read_bytes` decoded as UTF-8 (bad bytes replaced)."""
    return read_bytes(path, max_bytes).decode("utf-8", "replace")


def quote_line(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as an error quotes it: through the redaction boundary first
    (:func:`srperf.safety.redact.redact_quoted`: a secret-looking ``KEY=VALUE``, a
    password hash, a PEM block are hidden), then its ``repr``, cut to ``limit``
    characters."""
    from srperf.safety.redact import redact_quoted

    text = redact_quoted(text)
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


__all__ = ["BLOCK", "Line", "MAX_LINE", "NotOurs", "QUOTE_CHARS", "TooLarge", "lines",
           "may_quote", "quote_line", "read_bytes", "read_record", "read_state",
           "read_text"]
