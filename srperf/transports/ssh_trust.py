"""``srperf testbed trust``: read a node's SSH host key, show its fingerprint, and add it
to known_hosts only when the user confirms (srperf never adds a host key on its own).

The key is read by an SSH handshake that stops before authentication (paramiko's
``Transport.start_client``), through the node's ``proxy_command`` when it has one.
"""

from __future__ import annotations

import base64
import hashlib
import re
import socket
from pathlib import Path

import paramiko

from srperf.config.model import SshConfig, expand_proxy_command
from srperf.errors import ConfigError, TransportError
from srperf.transports.ssh_proxy import ShellProxyCommand


def known_hosts_path(cfg: SshConfig) -> Path:
    """The known_hosts file srperf checks this node against."""
    return Path(cfg.known_hosts) if cfg.known_hosts else Path("~/.ssh/known_hosts").expanduser()


HOST_RE = re.compile(r"(?!-)[A-Za-z0-9_.:-]{1,253}")
"""What a known_hosts line may name: a host name or an IP address (no pattern,
no '*', '?', '!', ',', '[', space or newline: each would name other hosts)."""


def host_name(cfg: SshConfig) -> str:
    """The node's name as known_hosts spells it (``[host]:port`` off port 22);
    ConfigError when the host is not a host name or an address."""
    if not HOST_RE.fullmatch(cfg.host) or not 1 <= int(cfg.port) <= 65535:
        raise ConfigError("<testbed>", "transport.ssh.host", cfg.host,
                          "not a host name or an IP address: refused in known_hosts")
    return cfg.host if cfg.port == 22 else f"[{cfg.host}]:{cfg.port}"


def fetch_host_key(cfg: SshConfig) -> paramiko.PKey:
    """The host key the node offers (no authentication is attempted)."""
    sock: socket.socket | ShellProxyCommand | None = None
    try:
        if cfg.proxy_command:
            sock = ShellProxyCommand(expand_proxy_command(cfg.proxy_command, cfg.host,
                                                          cfg.port, cfg.user))
        else:
            sock = socket.create_connection((cfg.host, cfg.port), timeout=cfg.timeout_s)
        transport = paramiko.Transport(sock)
        try:
            transport.start_client(timeout=cfg.timeout_s)
            return transport.get_remote_server_key()
        finally:
            transport.close()
    except (OSError, paramiko.SSHException, EOFError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(sock, ShellProxyCommand) and sock.exited(wait_s=1.0):
            from srperf.safety.redact import redact, redacted_command

            said = sock.stderr_text()
            detail = (f"the proxy command ({redacted_command(cfg.proxy_command or '')}) "
                      f"exited with status {sock.process.returncode}"
                      + (f": {redact(said)}" if said else "")
                      + "; run it by hand to see why")
        raise TransportError(f"ssh {cfg.host}:{cfg.port}: cannot read its host key: "
                             f"{detail}") from exc
    finally:
        if isinstance(sock, ShellProxyCommand):
            sock.close()


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def add_known_host(cfg: SshConfig, key: paramiko.PKey) -> Path:
    """Append the node's key to its known_hosts (made 0600 if new); returns the file."""
    name = host_name(cfg)
    path = known_hosts_path(cfg)
    from srperf.safety import safe_paths

    return safe_paths.append_private(path, f"{name} {key.get_name()} {key.get_base64()}\n")


__all__ = ["add_known_host", "fetch_host_key", "fingerprint", "host_name", "known_hosts_path"]
