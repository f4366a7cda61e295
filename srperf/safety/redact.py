"""Secrets kept out of everything srperf prints, logs or stores: the one redactor.

Which texts are secret is decided from the *values* srperf loads, never from the
key a print site happens to know:

- every configuration mapping srperf parses (experiments, testbeds, nightly suites,
  ``--set`` values: :func:`srperf.config.yamlfile.parse_text` calls :func:`scan`),
- the command line and the environment (:func:`scan_invocation`, called first thing
  by the CLI and again by the error-log writer).

A secret is the password of any URL (``scheme://user:PASSWORD@host``, in ``--db``,
``SRPERF_DB``, a suite's ``database``, wherever it is written, even under a
misspelt key or inside a list), a ``password=...`` pair, the value of an
environment variable named like a password or token, and every text under a key
that looks like a proxy command or a password (``proxy_command``, OpenSSH's
``ProxyCommand``, ``proxy_comand``, ``password``, ``token``...), as text or as a
list of words.  A command is registered whole (shown as its program's name:
:func:`redacted_command`) and by the values of its options (so that a cut excerpt
of it, or one option value quoted alone, is redacted too).

The output boundary then passes everything through :func:`redact`: the CLI's
stdout and stderr (:func:`redacting_std_streams`), every logging handler
(:class:`RedactingFilter`), the internal-error log (``cli_guard``), the
message of every :class:`~srperf.errors.ConfigError` (before its value is cut),
and the results store's writer of run rows, reasons and notes.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import os
import re
import shlex
import sys
import threading
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import unquote

_lock = threading.Lock()
_secrets: dict[str, str] = {}   # text -> what replaces it
_pattern: re.Pattern[str] | None = None   # every secret, longest first; None: rebuild
MIN_SECRET = 6
"""Texts shorter than this are not registered alone (they would redact ordinary
words); a short URL password is still redacted inside its ``user:PASSWORD@``."""
MIN_WORD = 4
"""A word right after a short option of a proxy command (``sshpass -p WORD``) is
registered from this length on (unless it is a number or a placeholder)."""
HIDDEN = "…(redacted)"
URL_HIDDEN = "***"

_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://)"
    r"(?P<user>[^\s:/@?#'\"]{0,256}):(?P<password>[^\s@/?#'\"]{1,1024})@")
_PAIR = re.compile(r"(?i)\b(?:password|passwd|pwd|pass)\s*=\s*(?P<value>[^\s&;,='\"]{1,1024})")
_SECRET_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey",
                 "credential", "privatekey", "privkey", "accesskey", "authkey")
_SECRET_NAMES = ("pw",)
"""Whole key names (normalised) that say secret, too short to look for inside a name."""
_COMMAND_KEYS = ("proxycommand",)
_ENV_SECRET = re.compile(r"(?i)(PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY)")


# -- what is secret --------------------------------------------------------------

def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def secret_kind(key: object) -> str | None:
    """``"value"`` when ``key`` names a secret value (a password, passwd, token, secret,
    API key, private key, credential...: ``kernel.apt_password``, ``db_password``,
    ``search.token``; its value is hidden whole), ``"command"`` when it names a proxy
    command (shown as its program's name), else None.  Only the last part of a dotted
    key path counts (``search.token`` -> ``token``; ``fragment[0]`` -> ``fragment``)."""
    if not isinstance(key, str):
        return None
    parts = [p for p in re.split(r"[.\[\]]", key.lstrip("-")) if p and not p.isdigit()]
    norm = _norm(parts[-1]) if parts else ""
    if not norm:
        return None
    if any(word in norm for word in _SECRET_WORDS) or norm in _SECRET_NAMES:
        return "value"
    if "proxy" in norm and any(w in norm for w in ("command", "cmd", "comm", "exec", "jump")):
        return "command"
    if any(difflib.SequenceMatcher(None, norm, k).ratio() >= 0.75 for k in _COMMAND_KEYS):
        return "command"
    return None


def is_secret_key(key: object) -> bool:
    """True when ``key`` names a proxy command or a secret value, however it is spelt
    (``proxy_command``, ``ProxyCommand``, ``proxy-cmd``, ``proxy_comand``,
    ``db_password``, ``api_key``...): :func:`secret_kind`."""
    return secret_kind(key) is not None


def redacted_command(command: str | Iterable[str]) -> str:
    """``ssh …(redacted)``: the program of ``command`` (its base name), never its
    arguments nor ``VAR=value`` assignments before it."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
    else:
        words = [str(w) for w in command]
    words = [w for w in words if "=" not in w or w.startswith(("-", "/"))]
    program = os.path.basename(words[0]) if words else ""
    return f"{program} {HIDDEN}" if program else HIDDEN


def _forms(text: str) -> list[str]:
    """``text`` as messages may quote it: as is, in a ``repr``, in JSON, with its
    double quotes escaped."""
    out = [text, repr(text)[1:-1], json.dumps(text)[1:-1], text.replace('"', '\\"')]
    return list(dict.fromkeys(out))


def register(secret: str, replacement: str | None = None, min_len: int = MIN_SECRET) -> None:
    """Redact ``secret`` from now on (with ``replacement``, default '…(redacted)'), in
    each form a message may quote it in."""
    global _pattern
    if not isinstance(secret, str) or len(secret) < min_len:
        return
    with _lock:
        for form in _forms(secret):
            if form and _secrets.get(form) is None:
                _secrets[form] = replacement or HIDDEN
                _pattern = None


def register_command(command: str | list[Any]) -> None:
    """A proxy command (text or list of words): whole, as its ``repr``, and the words
    that hold values (an option's value: ``-p SECRET``, ``-pSECRET``,
    ``--password=SECRET``; ``VAR=SECRET``), never the program, a plain word (a host or
    namespace name a message may rightly show) or a ``%`` placeholder."""
    if isinstance(command, list):
        words = [str(w) for w in command if isinstance(w, (str, int, float))]
        shown = redacted_command(words)
        for whole in (repr(command), str(command), " ".join(words), shlex.join(words)):
            register(whole, f"[{shown}]" if whole.startswith("[") else shown)
    else:
        shown = redacted_command(command)
        register(command, shown)
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
    after_flag = False
    for i, word in enumerate(words):
        if i == 0 or "%" in word:
            after_flag = False
            continue
        if word.startswith("-"):
            if word.startswith("--") and "=" in word:
                register(word.split("=", 1)[1], min_len=MIN_WORD)
            elif not word.startswith("--") and len(word) > 2:
                register(word[2:], min_len=MIN_WORD)   # -pSECRET
            after_flag = len(word) == 2
            continue
        if "=" in word:
            register(word.split("=", 1)[1], min_len=MIN_WORD)   # VAR=value, opt=value
        if after_flag and not word.isdigit():
            register(word, min_len=MIN_WORD)   # the value of an option: -p SECRET
        scan_text(word)
        after_flag = False


def register_proxy_command(template: str, host: str, port: int, user: str) -> None:
    """Register a proxy command as written and as expanded for its node."""
    from srperf.config.model import expand_proxy_command

    register_command(template)
    try:
        register(expand_proxy_command(template, host, port, user), redacted_command(template))
    except ValueError:
        pass


def scan_text(text: str) -> None:
    """Register the passwords of the URLs and ``password=`` pairs in ``text``."""
    if not isinstance(text, str) or not text:
        return
    for m in _URL_CREDENTIALS.finditer(text):
        user, password = m.group("user"), m.group("password")
        register(f"{m.group('scheme')}{user}:{password}@",
                 f"{m.group('scheme')}{user}:{URL_HIDDEN}@", min_len=1)
        register(f"{user}:{password}@", f"{user}:{URL_HIDDEN}@", min_len=1)
        for form in {password, unquote(password)}:
            register(form, URL_HIDDEN)
    for m in _PAIR.finditer(text):
        register(m.group("value"), URL_HIDDEN, min_len=MIN_WORD)


def register_value(value: Any) -> None:
    """A secret value (under a password-, token-... like key): every text or number in
    it registered whole (from :data:`MIN_WORD` characters; a shorter one is still
    hidden wherever its key is known: :func:`redact_keys`)."""
    if isinstance(value, Mapping):
        for v in value.values():
            register_value(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            register_value(v)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        register(str(value), min_len=MIN_WORD)


def scan(data: Any, secret: bool = False) -> None:
    """Register every secret of a loaded configuration value (deep): URL passwords in
    any text, whatever sits under a proxy-command-like key (as a command) and whatever
    sits under a password-, token-, secret-like key (whole: :func:`register_value`)."""
    if isinstance(data, str):
        scan_text(data)
        if secret:
            register_command(data)
    elif isinstance(data, Mapping):
        for key, value in data.items():
            if isinstance(key, str):
                scan_text(key)
            kind = secret_kind(key)
            if kind == "value":
                register_value(value)
                scan(value)
                continue
            scan(value, secret=kind == "command" and not isinstance(value, Mapping))
    elif isinstance(data, (list, tuple)):
        words = secret and all(isinstance(v, (str, int, float)) for v in data)
        if words:
            register_command(list(data))   # one command, as a list of words
        for value in data:
            scan(value, secret=secret and not words and not isinstance(value, Mapping))


class _Hidden:
    """What a value under a secret key is replaced by (its repr: ``…(redacted)``)."""

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__


HIDDEN_VALUE = _Hidden()
_ASSIGNMENT = re.compile(r"^(?P<key>-{0,2}[A-Za-z_][A-Za-z0-9_.\-\[\]]{0,200})=(?P<value>.*)\Z",
                         re.S)


def redact_keys(data: Any) -> Any:
    """``data`` (deep) with the value under every secret-value key replaced whole by
    ``…(redacted)``, and ``KEY=VALUE`` texts with a secret KEY (``--set
    search.token=...``) shown as ``KEY=…(redacted)``: what a stored row or message
    holds of a configuration, however short the secret."""
    if isinstance(data, Mapping):
        return {k: (HIDDEN if secret_kind(k) == "value" else redact_keys(v))
                for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(redact_keys(v) for v in data) if isinstance(data, list) \
            else tuple(redact_keys(v) for v in data)
    if isinstance(data, str) and "=" in data:
        m = _ASSIGNMENT.match(data)
        if m and secret_kind(m.group("key")) == "value":
            return f"{m.group('key')}={HIDDEN}"
    return data


def redact_for_key(key: str, value: Any) -> Any:
    """``value`` as a message under ``key`` may show it: hidden whole when ``key`` names
    a secret value, else with its secret keys' values hidden (:func:`redact_keys`)."""
    if secret_kind(key) == "value":
        return HIDDEN_VALUE
    return redact_keys(value)


_CRYPT_HASH = re.compile(r"\$(?:1|2[abxy]?|5|6|7|y|gy|sha1|md5|argon2(?:id|i|d)?)\$"
                         r"[^\s:'\"]{2,}")
"""A crypt(3) password hash (``$6$salt$hash``, yescrypt ``$y$...``, bcrypt ``$2b$...``)."""
_PEM = re.compile(r"-----\s*(?:BEGIN|END)\b[^-]{0,80}-----|PRIVATE KEY")
_KEY_BLOB = re.compile(r"(?<![A-Za-z0-9+/])(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])"
                       r"[A-Za-z0-9+/]{40,}={0,2}")
"""A run of base64 long enough to be key material (a PEM body line, an API key); a
lower-case hex digest does not match (no capital letter)."""
_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,200})(?P<sep>\s*[:=]\s*)"
                        r"(?P<value>\"[^\"]*\"?|'[^']*'?|[^\s,;&]+)")


def redact_quoted(text: str) -> str:
    """A line of a file that is not srperf's configuration (a config fragment, a patch,
    a build's output), as an error may quote it: besides every registered secret
    (:func:`redact`), the value of each ``KEY=VALUE`` or ``KEY: VALUE`` whose KEY
    names a secret (:func:`secret_kind`: ``apt_password=...``, ``DB_TOKEN: ...``), URL
    passwords, crypt(3) password hashes (``$6$...``) and base64 runs long enough to be
    key material are hidden; a line of a PEM block is not shown at all."""
    if not isinstance(text, str) or not text:
        return text
    if _PEM.search(text):
        return f"{HIDDEN} (a line of a PEM block)"
    out = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{URL_HIDDEN}@",
                               text)
    out = _KEY_VALUE.sub(lambda m: f"{m.group('key')}{m.group('sep')}{HIDDEN}"
                         if secret_kind(m.group("key")) == "value" else m.group(0), out)
    out = _CRYPT_HASH.sub(HIDDEN, out)
    out = _KEY_BLOB.sub(HIDDEN, out)
    return redact(out)


def scan_invocation(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Register the secrets of a command line (URL passwords; ``KEY=VALUE`` items whose
    key looks secret, as ``--set ...proxy_command=...`` writes them) and of the
    environment (URL passwords in any variable; variables named like a password)."""
    for arg in argv:
        if not isinstance(arg, str):
            continue
        scan_text(arg)
        key, sep, value = arg.partition("=")
        kind = secret_kind(key) if sep else None
        if kind == "value":
            register(value, min_len=MIN_WORD)
        elif kind == "command":
            register_command(value)
    env = os.environ if environ is None else environ
    for name, value in env.items():
        scan_text(value)
        if _ENV_SECRET.search(name):
            register(value, URL_HIDDEN, min_len=MIN_WORD)


def reset() -> None:
    """Forget every registered secret (tests)."""
    global _pattern
    with _lock:
        _secrets.clear()
        _pattern = None


# -- the output boundary ---------------------------------------------------------

def _compiled() -> tuple[re.Pattern[str] | None, dict[str, str]]:
    global _pattern
    with _lock:
        if _pattern is None and _secrets:
            ordered = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(map(re.escape, ordered)))
        return _pattern, dict(_secrets)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced (in one pass, the longest first,
    so that a replacement is never redacted again)."""
    if not _secrets or not text or not isinstance(text, str):
        return text
    pattern, table = _compiled()
    if pattern is None or not any(secret in text for secret in table):
        return text   # (a plain search per secret is far faster than the regex on long text)
    return pattern.sub(lambda m: table[m.group(0)], text)


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
    """A handler filter that redacts every record's final message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            message = record.getMessage()
            clean = redact(message)
            if clean != message:
                record.msg, record.args = clean, None
            if record.exc_info and record.exc_text is None:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
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


__all__ = ["HIDDEN", "HIDDEN_VALUE", "MIN_SECRET", "redact_for_key", "redact_keys",
           "redact_quoted",
           "register_value", "secret_kind", "RedactingFilter", "RedactingStream", "install_log_filter",
           "is_secret_key", "redact", "redact_value", "redacted_command", "redacting_std_streams",
           "register", "register_command", "register_proxy_command", "reset", "scan",
           "scan_invocation", "scan_text"]
