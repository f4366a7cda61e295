"""TCP congestion control of network namespaces: which algorithms this host lets a
namespace other than the initial one make its default, and reading and setting a
namespace's default (``net.ipv4.tcp_congestion_control``).

Outside the initial namespace the kernel sets as default only an algorithm of the global
``net.ipv4.tcp_allowed_congestion_control`` list (else EPERM); srperf never changes that
host-global list.  A new default applies to sockets made afterwards, including the ones a
listening server accepts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from srperf.util.netns import run

log = logging.getLogger(__name__)

SYSCTL = "net.ipv4.tcp_congestion_control"
ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
"""Algorithms a non-initial namespace may take as its default (host-global list)."""


class CongestionUnsupported(RuntimeError):
    """A namespace's default congestion control could not be set (sysctl's words)."""


def settable(allowed: Path | None = None) -> tuple[str, ...]:
    """Algorithms a namespace of this host can take as its default (read from
    ``allowed``, by default :data:`ALLOWED`); () if unreadable."""
    allowed = allowed or ALLOWED
    try:
        return tuple(allowed.read_text().split())
    except OSError as exc:
        log.warning("cannot read %s: %s", allowed, exc)
        return ()


def get(ns: str) -> str:
    """The default congestion control of namespace ``ns``."""
    return run(["sysctl", "-n", SYSCTL], ns=ns).stdout.strip()


def set_default(ns: str, algorithm: str) -> None:
    """Make ``algorithm`` the default congestion control of ``ns``."""
    res = run(["sysctl", "-q", "-w", f"{SYSCTL}={algorithm}"], ns=ns, check=False)
    if res.returncode != 0:
        raise CongestionUnsupported(f"{SYSCTL}={algorithm} in {ns}: "
                                    f"{(res.stderr or res.stdout).strip()}")


__all__ = ["settable", "get", "set_default", "CongestionUnsupported", "SYSCTL"]
