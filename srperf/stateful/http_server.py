"""A static HTTP server (lighttpd, or nginx from ``nginx-light``) on an endpoint node.

:class:`StaticHttpServer` writes the server's configuration and the objects it serves
(random bytes of each listed size, ``obj-<size>.bin``) into the node's private work
directory, starts the server daemonized with a pid file, and stops it by that pid.
Everything goes through the node's :class:`~srperf.transports.base.Transport`, so the
same code serves from a namespace of this host or a host reached over SSH.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
import time
from dataclasses import dataclass, field
from typing import Sequence

from srperf.stateful.base import StatefulError
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

SERVERS = ("lighttpd", "nginx")
"""The HTTP servers srperf can start."""


def object_name(size: int) -> str:
    """The path (under the document root) of the generated object of ``size`` bytes."""
    return f"obj-{size}.bin"


def _lighttpd_conf(root: str, ip6: str, port: int, pidfile: str, errlog: str) -> str:
    return "\n".join([
        f'server.document-root = "{root}"',
        f'server.bind = "[{ip6}]"',
        f"server.port = {port}",
        f'server.pid-file = "{pidfile}"',
        f'server.errorlog = "{errlog}"',
        'mimetype.assign = (".bin" => "application/octet-stream")',
        "server.max-connections = 4096",
        "",
    ])


def _nginx_conf(root: str, ip6: str, port: int, pidfile: str, errlog: str) -> str:
    return "\n".join([
        "daemon on;",
        "worker_processes 1;",
        f"pid {pidfile};",
        f"error_log {errlog};",
        "events { worker_connections 4096; }",
        "http {",
        "  access_log off;",
        "  sendfile on;",
        f"  client_body_temp_path {root}/../nginx-tmp;",
        "  types { application/octet-stream bin; }",
        f"  server {{ listen [{ip6}]:{port}; root {root}; }}",
        "}",
        "",
    ])


@dataclass
class StaticHttpServer:
    """One HTTP server process on ``node`` serving objects of ``sizes`` bytes."""

    node: Transport
    """Where the server runs."""
    ip6: str
    """Address it listens on."""
    port: int
    """TCP port it listens on."""
    sizes: Sequence[int]
    """Sizes of the objects it serves (bytes)."""
    server: str = "lighttpd"
    """``lighttpd`` or ``nginx``."""
    cpu: int | None = None
    """CPU the server is pinned to (None: not pinned)."""
    root: str = field(default="", init=False)
    """The document root on the node (set by :meth:`start`)."""
    _pidfile: str = field(default="", init=False)
    _errlog: str = field(default="", init=False)

    def start(self) -> None:
        """Make the objects and start the server; StatefulError when it does not come up."""
        if self.server not in SERVERS:
            raise StatefulError(f"unknown HTTP server {self.server!r}; known: {', '.join(SERVERS)}")
        base = posixpath.join(self.node.workdir(), f"http-{self.port}")
        self.root = posixpath.join(base, "www")
        self._pidfile = posixpath.join(base, "server.pid")
        self._errlog = posixpath.join(base, "error.log")
        make = [f"mkdir -p {shlex.quote(self.root)} {shlex.quote(base + '/nginx-tmp')}"]
        for size in self.sizes:
            path = posixpath.join(self.root, object_name(size))
            make.append(f"head -c {int(size)} /dev/urandom > {shlex.quote(path)}")
        self.node.check(["sh", "-c", " && ".join(make)], timeout=120.0)
        conf_text = (_lighttpd_conf if self.server == "lighttpd" else _nginx_conf)(
            self.root, self.ip6, self.port, self._pidfile, self._errlog)
        conf = posixpath.join(base, f"{self.server}.conf")
        self.node.check(["sh", "-c", f"cat > {shlex.quote(conf)}"], input_text=conf_text)
        argv = ["lighttpd", "-f", conf] if self.server == "lighttpd" else ["nginx", "-c", conf]
        if self.cpu is not None:
            argv = ["taskset", "-c", str(self.cpu)] + argv
        res = self.node.run(argv, timeout=30.0)
        if not res.ok:
            raise StatefulError(f"{self.node.where}: {' '.join(argv)} failed: "
                                f"{(res.stderr or res.stdout).strip()}")
        self._wait_listening()
        log.info("%s: %s serving %d objects on [%s]:%d", self.node.where, self.server,
                 len(self.sizes), self.ip6, self.port)

    def _wait_listening(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            res = self.node.run(["ss", "-Hltn", f"sport = :{self.port}"], timeout=10.0)
            if res.ok and res.stdout.strip():
                return
            time.sleep(0.1)
        log_text = self.node.run(["cat", self._errlog], timeout=10.0).stdout.strip()
        self.stop()
        raise StatefulError(f"{self.node.where}: {self.server} is not listening on port "
                            f"{self.port} after {timeout_s:g} s: {log_text[-1000:]}")

    def pid(self) -> int | None:
        """The server's pid (from its pid file), None when it is not running."""
        if not self._pidfile:
            return None
        res = self.node.run(["cat", self._pidfile], timeout=10.0)
        text = res.stdout.strip()
        return int(text) if res.ok and text.isdigit() else None

    def stop(self) -> None:
        """Stop the server by its pid and wait until it is gone (idempotent)."""
        pid = self.pid()
        if pid is None:
            return
        self.node.run(["kill", str(pid)], timeout=10.0)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if not self.node.run(["kill", "-0", str(pid)], timeout=10.0).ok:
                break
            time.sleep(0.05)
        else:
            self.node.run(["kill", "-9", str(pid)], timeout=10.0)
        self.node.run(["rm", "-f", self._pidfile], timeout=10.0)

    def sha256(self, size: int) -> str:
        """The SHA-256 (hex) of the object of ``size`` bytes as the server has it."""
        path = posixpath.join(self.root, object_name(size))
        return self.node.check(["sha256sum", path], timeout=60.0).stdout.split()[0]


__all__ = ["StaticHttpServer", "SERVERS", "object_name"]
