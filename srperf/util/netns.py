"""Run commands on this host or inside a network namespace."""

from __future__ import annotations

import logging
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Mapping, Sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommandResult:
    """Exit status and output of one command."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandFailed(RuntimeError):
    def __init__(self, result: CommandResult) -> None:
        self.result = result
        msg = (result.stderr or result.stdout).strip()
        super().__init__(f"{' '.join(result.argv)} exited {result.returncode}: {msg}")


def run(argv: Sequence[str], *, ns: str | None = None, check: bool = True,
        env: Mapping[str, str] | None = None, timeout: float = 60.0,
        input_text: str | None = None) -> CommandResult:
    """Run ``argv`` (in namespace ``ns`` when given) and return its result.

    With ``check`` a non-zero exit raises :class:`CommandFailed`.
    """
    full = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    log.debug("run %s", " ".join(full))
    proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                          env=dict(env) if env is not None else None, input=input_text)
    result = CommandResult(tuple(full), proc.returncode, proc.stdout, proc.stderr)
    if check and not result.ok:
        raise CommandFailed(result)
    return result


@contextmanager
def veth_pair_namespace(prefix: str) -> Iterator[str]:
    """Namespace ``<prefix>-<tag>`` holding a veth pair t0 <-> t1, both up, with IPv6
    off (no neighbour discovery noise); deleted on the way out, whatever happened."""
    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    try:
        run(["ip", "netns", "add", ns])
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
        run(["ip", "link", "add", "t0", "type", "veth", "peer", "name", "t1"], ns=ns)
        for dev in ("lo", "t0", "t1"):
            run(["ip", "link", "set", "dev", dev, "up"], ns=ns)
        yield ns
    finally:
        run(["ip", "netns", "del", ns], check=False)


def netns_names() -> list[str]:
    """Names of the network namespaces ``ip netns list`` shows."""
    out = run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_exists(name: str) -> bool:
    """True when ``ip netns list`` shows ``name``."""
    return name in netns_names()


def link_stats(ns: str | None, dev: str) -> dict[str, int]:
    """The kernel's 64-bit counters of ``dev``: rx_packets, tx_packets, tx_dropped, ..."""
    import json

    out = run(["ip", "-s", "-j", "link", "show", "dev", dev], ns=ns).stdout
    data = json.loads(out)[0]["stats64"]
    return {f"{d}_{k}": int(v) for d in ("rx", "tx") for k, v in data[d].items()}
