"""A throw-away PostgreSQL server for tests: initdb in a temp dir, unix socket only.

As root the server runs as the ``postgres`` user (``runuser``); it listens on
no TCP port, only on a socket in its own directory.  :func:`start` returns a
handle whose :meth:`PgServer.stop` stops the server (``pg_ctl stop``, then its
postmaster PID if it is still there) and removes the directory.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PORT = 5432  # only names the socket file inside our own directory


def find_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def unavailable() -> str | None:
    """Why a server cannot be started here, or None."""
    if not find_bin("initdb") or not find_bin("pg_ctl"):
        return "PostgreSQL server binaries (Debian package postgresql) not installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root but there is no 'postgres' user to run the server"
        if not shutil.which("runuser"):
            return "running as root without runuser"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg (the pg extra) not installed"
    return None


@dataclass
class PgServer:
    root: Path
    data: Path
    log: Path
    prefix: list[str]

    @property
    def url(self) -> str:
        return f"postgresql://srperf@/postgres?host={self.root}&port={PORT}"

    def _pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        pid = self._pid()
        try:
            subprocess.run(self.prefix + [find_bin("pg_ctl") or "pg_ctl", "-D", str(self.data),
                                          "-m", "immediate", "-w", "-t", "20", "stop"],
                           capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if pid is not None:
            try:
                os.kill(pid, 0)
                os.kill(pid, signal.SIGKILL)  # pg_ctl could not stop it: ours, by PID
            except ProcessLookupError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


def start() -> PgServer:
    root = Path(tempfile.mkdtemp(prefix="srperf-pg-", dir="/tmp"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    server = PgServer(root, root / "data", root / "log", prefix)
    try:
        subprocess.run(prefix + [find_bin("initdb") or "initdb", "-D", str(server.data),
                                 "-U", "srperf", "-A", "trust", "--no-sync", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        opts = f"-c listen_addresses='' -k {root} -p {PORT} -F"
        subprocess.run(prefix + [find_bin("pg_ctl") or "pg_ctl", "-D", str(server.data),
                                 "-o", opts, "-l", str(server.log), "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=90)
        deadline = time.monotonic() + 30
        while not (root / f".s.PGSQL.{PORT}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    except BaseException:
        server.stop()
        raise
    return server
