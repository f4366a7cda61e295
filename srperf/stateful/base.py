"""The interface every stateful runner implements, and what it gets and gives.

A runner (one per experiment kind, :data:`srperf.stateful.KINDS`) measures real
connections between two :class:`Endpoints` across the SUT, once the SUT runs the
behavior and the TCP traffic is steered through it (:mod:`srperf.stateful.steering`).
The session calls, per behavior::

    runner.start(endpoints, config)                 # servers up (iperf3 -s, lighttpd)
    for variant in runner.variants(config):         # e.g. one per object size
        for repetition in ...:
            sample = runner.run(endpoints, config, duration_s, variant)
    runner.stop(endpoints)                          # always, even after a failure

A :class:`StatefulSample` maps metric names to numbers; each name carries its unit
(``goodput_mbps``, ``retransmits``, ``requests_per_s``, ``transfer_mbps``,
``latency_p50_ms``, ``sut_cpu_busy_pct``).  A measurement the setup could not make
is a sample with ``status`` other than ``ok`` and a ``reason``, never a number.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from srperf.errors import SrperfError
from srperf.transports.base import Transport


class StatefulError(SrperfError):
    """A stateful measurement could not be set up or run (a tool failed to start,
    its output could not be read)."""


@dataclass(frozen=True)
class Endpoint:
    """One end of the measured connections: a node and the address TCP uses there."""

    role: str
    """``client`` or ``server``."""
    node: Transport
    """How commands reach the node (a namespace of this host, or SSH)."""
    ip6: str
    """The endpoint's IPv6 address for the measured traffic (a server listens on it,
    a client connects from it)."""
    dev: str = ""
    """The endpoint's interface towards the SUT (its steering routes leave by it)."""
    cpu: int | None = None
    """CPU the endpoint's load processes are pinned to (None: not pinned)."""


@dataclass(frozen=True)
class Endpoints:
    """Client and server on either side of the SUT, and the SUT itself."""

    client: Endpoint
    server: Endpoint
    sut: Transport
    """The SUT's node: its CPU busy share and counters are read through it."""
    sut_cpu: int | None = None
    """The SUT's forwarding CPU (its busy share is reported; None: all CPUs)."""


def second_address(address: str) -> str:
    """``address + 1``: the server's address reached through the second chain."""
    return str(ipaddress.IPv6Address(address) + 1)


@dataclass(frozen=True)
class Variant:
    """One point a runner sweeps within a behavior (an object size, a stream count)."""

    label: str
    """Short text naming the point in tables (``1KB``, ``10 streams``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """What the runner needs to run it (``{"object_size_bytes": 1024}``)."""


OK = "ok"
"""Status of a sample whose metrics were measured."""


@dataclass(frozen=True)
class StatefulSample:
    """What one repetition of one configuration measured."""

    metrics: Mapping[str, float]
    """Metric name (with its unit in the name: ``goodput_mbps``, ``retransmits``,
    ``requests_per_s``, ``transfer_mbps``, ``latency_p50_ms``) -> value."""
    status: str = OK
    """``ok``, or why there is no number (``failed``, ``unsupported``)."""
    reason: str = ""
    """The cause when ``status`` is not ``ok`` (the tool's own words)."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """Raw per-process figures (per-stream Mb/s, ...), kept in the store as JSON."""

    @property
    def ok(self) -> bool:
        return self.status == OK


class StatefulRunner(Protocol):
    """A stateful experiment kind: what it sweeps, how it starts servers and measures."""

    kind: str
    """The experiment kind it implements (``goodput``, ``http``)."""
    primary_metric: str
    """The metric tables, plots and ``compare`` lead with (``goodput_mbps``)."""

    def variants(self, config: Any) -> list[Variant]:
        """The points measured per behavior, from the kind's settings block."""

    def start(self, endpoints: Endpoints, config: Any) -> None:
        """Start the servers (and make what they serve); raise StatefulError on failure."""

    def run(self, endpoints: Endpoints, config: Any, duration_s: float,
            variant: Variant) -> StatefulSample:
        """One repetition of ``variant`` lasting ``duration_s`` seconds."""

    def stop(self, endpoints: Endpoints) -> None:
        """Stop every process :meth:`start` and :meth:`run` started (idempotent)."""


__all__ = ["StatefulError", "Endpoint", "Endpoints", "Variant", "StatefulSample", "StatefulRunner", "OK",
           "second_address"]
