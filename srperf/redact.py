"""Secrets kept out of stored reasons, logs and output.

A testbed's ``proxy_command`` may hold a secret (a password for ``sshpass``, a
token in a URL).  When a testbed file is loaded its proxy command, as written
and as expanded for its host, is registered here; :func:`redact` then replaces
either text wherever it appears (a run's stored reason, an outcome, a log
record, a message printed by the CLI) with :func:`redacted_command`: the
program's name only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import sys
import threading
from typing import Any, Iterator

_lock = threading.Lock()
_secrets: dict[str, str] = {}   # text -> what replaces it
MIN_SECRET = 6
"""Texts shorter than this are not registered (they would redact ordinary words)."""


def redacted_command(command: str) -> str:
    """``ssh …(redacted)``: the program of ``command`` (its base name), never its
    arguments nor ``VAR=value`` assignments before it."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w or w.startswith(("-", "/"))]
    program = os.path.basename(words[0]) if words else ""
    return f"{program} …(redacted)" if program else "…(redacted)"


def register(secret: str, replacement: str | None = None) -> None:
    """Redact ``secret`` from now on (with ``replacement``, default '…(redacted)')."""
    if len(secret) < MIN_SECRET:
        return
    with _lock:
        _secrets[secret] = replacement or "…(redacted)"


def register_proxy_command(template: str, host: str, port: int, user: str) -> None:
    """Register a proxy command as written and as expanded for its node, and the
    ``repr`` forms messages quote it in."""
    from srperf.config.model import expand_proxy_command

    forms = [template]
    try:
        forms.append(expand_proxy_command(template, host, port, user))
    except ValueError:
        pass
    shown = redacted_command(template)
    for text in forms:
        for form in (text, repr(text)[1:-1], text.replace('"', '\\"')):
            register(form, shown)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced (the longest first)."""
    if not _secrets or not text:
        return text
    with _lock:
        secrets = sorted(_secrets.items(), key=lambda kv: -len(kv[0]))
    for secret, shown in secrets:
        if secret in text:
            text = text.replace(secret, shown)
    return text


def redact_value(value: object) -> object:
    """``value`` with its texts redacted (a str, or the str items of a dict/list, deep)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A handler filter that redacts every record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            message = record.getMessage()
            clean = redact(message)
            if clean != message:
                record.msg, record.args = clean, None
            if record.exc_info and record.exc_text is None:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


class RedactingStream:
    """A text stream that redacts what is written to it (the CLI's stdout and stderr)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:   # flush, isatty, fileno, encoding...
        return getattr(self._stream, name)


@contextlib.contextmanager
def redacting_std_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` redacted for the duration (the CLI's output)."""
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(before[0]), RedactingStream(before[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Put :class:`RedactingFilter` on every handler of ``logger`` (default: root)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


__all__ = ["RedactingFilter", "RedactingStream", "install_log_filter", "redacting_std_streams", "redact", "redact_value",
           "redacted_command", "register", "register_proxy_command"]
