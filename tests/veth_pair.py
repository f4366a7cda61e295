"""A namespace holding one veth pair t0 <-> t1, for tests that send frames through it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from srperf.netns import run


@contextmanager
def veth_pair_namespace(prefix: str) -> Iterator[str]:
    """Namespace ``<prefix>-<tag>`` with a veth pair t0 <-> t1 up (IPv6 off: no ND noise);
    deleted on the way out, whatever happened."""
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
