"""A static HTTP server in a namespace, for tests that fetch an object through a path."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fetch(ns: str, url: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess:
    """``curl`` ``url`` from namespace ``ns``; the body is the result's stdout (bytes)."""
    return subprocess.run(["ip", "netns", "exec", ns, "curl", "-sS", "-m", str(timeout_s), url],
                          capture_output=True, timeout=timeout_s + 30)


@contextmanager
def http_server(ns: str, address: str, directory: Path, port: int,
                client_ns: str | None = None) -> Iterator[str]:
    """``python3 -m http.server`` serving ``directory`` on [``address``]:``port`` in
    namespace ``ns``; yields its base URL.  With ``client_ns``, waits (up to about 50 s)
    until a client there gets an answer.  The server is stopped on the way out,
    whatever happened."""
    srv = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-m", "http.server",
                            "-b", address, "-d", str(directory), str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://[{address}]:{port}"
    try:
        if client_ns is not None:
            for _ in range(50):
                if subprocess.run(["ip", "netns", "exec", client_ns, "curl", "-s", "-o",
                                   "/dev/null", "-m", "1", f"{url}/"]).returncode == 0:
                    break
        yield url
    finally:
        srv.terminate()
        srv.wait()
