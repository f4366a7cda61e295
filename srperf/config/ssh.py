"""A node's ``transport`` block and its ``ssh`` settings: host names, key files and
known_hosts files checked before any connection is tried.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from srperf.config.model import SshConfig, TransportConfig, expand_proxy_command
from srperf.errors import ConfigError


def _transport(file: str, base: Path, role: str, data: dict[str, Any]) -> TransportConfig:
    """The ``ROLE.transport`` block (``kind`` defaults to ssh when an ssh block is given)."""
    ssh = _ssh(file, base, data["ssh"], role) if "ssh" in data else None
    kind = data.get("kind", "ssh" if ssh else "netns")
    if kind == "ssh" and ssh is None:
        raise ConfigError(file, f"{role}.transport.ssh", None,
                          f"required when {role}.transport.kind is 'ssh'")
    return TransportConfig(kind, ssh)


def _ssh(file: str, base: Path, data: dict[str, Any], role: str = "sut") -> SshConfig:
    """The ``ROLE.transport.ssh`` block; key files resolved against the YAML's folder."""
    fields: dict[str, Any] = dict(data)
    _check_host(file, f"{role}.transport.ssh.host", str(fields["host"]))
    for name in ("key_file", "known_hosts"):
        if fields.get(name) is None:
            continue
        value = fields[name]
        key = f"{role}.transport.ssh.{name}"
        named = base / Path(value).expanduser()
        found = _existing_file(file, key, value, named)
        _check_trusted(file, key, value, named)
        if name == "key_file":
            _check_private_key(file, key, value, found)
        if name == "known_hosts":
            _check_known_hosts(file, key, value, found)
        fields[name] = str(found)
    ssh = SshConfig(**fields)
    if ssh.proxy_command is not None:
        from srperf.safety import redact

        redact.register_proxy_command(ssh.proxy_command, ssh.host, ssh.port, ssh.user)
        try:
            expand_proxy_command(ssh.proxy_command, ssh.host, ssh.port, ssh.user)
        except ValueError as exc:
            raise ConfigError(file, f"{role}.transport.ssh.proxy_command",
                              redact.redacted_command(ssh.proxy_command), str(exc)) from None
    return ssh


def _check_host(file: str, key: str, host: str) -> None:
    """An IP address or a host name of dot-separated labels (never an option, a
    pattern or a second line: the name goes into ssh and known_hosts lines)."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or not all(re.fullmatch(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}"
                                                r"[A-Za-z0-9_])?", label) for label in labels):
        raise ConfigError(file, key, host, "not a host name (letters, digits, '-' and '_' in "
                          "dot-separated labels of at most 63, not starting or ending with "
                          "'-') nor an IP address")


def _existing_file(file: str, key: str, value: str, path: Path) -> Path:
    """``path`` resolved, when it is a regular file; ConfigError otherwise (a missing
    file, a directory, a device, a symlink loop)."""
    import os
    import stat as stat_mod

    try:
        found = path.resolve(strict=True)
        mode = os.stat(found).st_mode
    except FileNotFoundError:
        raise ConfigError(file, key, value, f"{path} does not exist") from None
    except (RuntimeError, OSError) as exc:   # ELOOP: "Symlink loop", a too long name...
        why = "a symlink loop" if "loop" in str(exc).lower() or \
            getattr(exc, "errno", None) == 40 else getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(file, key, value, f"{path}: cannot be opened: {why}") from None
    if not stat_mod.S_ISREG(mode):
        raise ConfigError(file, key, value, f"{found} is not a regular file")
    if not os.access(found, os.R_OK):
        raise ConfigError(file, key, value, f"{found}: permission denied")
    return found


def _check_trusted(file: str, key: str, value: str, path: Path) -> None:
    """A key or known_hosts file decides whom srperf trusts as root: it must belong to
    root or the invoking user and be writable by no one else, and no other user's
    symlink may lead to it (:func:`srperf.safety.safe_paths.check_trusted_file`)."""
    from srperf.safety import read_gate

    try:   # the file, and every directory on its path (read_gate)
        read_gate.check_config_path(path, file, key)
    except ConfigError as exc:
        raise ConfigError(file, key, value, f"{path}: {exc.reason}") from None


def _check_private_key(file: str, key: str, value: str, path: Path) -> None:
    """A private key others may read is refused, as OpenSSH refuses it ("UNPROTECTED
    PRIVATE KEY FILE"): its owner is checked by :func:`_check_trusted`, its mode here
    (nothing for its group or others)."""
    import os
    import stat as stat_mod

    mode = stat_mod.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise ConfigError(file, key, value, f"{path}: UNPROTECTED PRIVATE KEY FILE (mode "
                          f"{mode:04o}): its group or others may read it, so it is refused "
                          "as OpenSSH refuses it; chmod 600 it")


def _check_known_hosts(file: str, key: str, value: str, path: Path) -> None:
    """Every line of a known_hosts file is an entry paramiko can read (or a comment)."""
    import paramiko
    from paramiko.hostkeys import HostKeyEntry

    from srperf.safety import bounded_read

    try:   # read up to a bound: no memory in proportion to the file
        text = bounded_read.read_bytes(path, 16 << 20).decode("utf-8")
    except bounded_read.TooLarge:
        raise ConfigError(file, key, value, f"{path}: larger than 16 MiB: not a known_hosts "
                          "file") from None
    except UnicodeDecodeError:
        raise ConfigError(file, key, value, f"{path}: not a known_hosts file (not text)") \
            from None
    except OSError as exc:
        raise ConfigError(file, key, value, f"{path}: cannot read: {exc.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "@")):
            continue
        ok = len(line.split()) >= 3
        try:   # None: a key type paramiko does not know, which it skips too
            HostKeyEntry.from_line(line, number)
        except (paramiko.SSHException, ValueError, TypeError, IndexError,
                paramiko.hostkeys.InvalidHostKey):
            ok = False
        if not ok:
            raise ConfigError(file, key, value,
                              f"{path} line {number}: not a known_hosts entry (HOST KEYTYPE "
                              "BASE64KEY); fix or remove the line, or use "
                              "srperf testbed trust")
