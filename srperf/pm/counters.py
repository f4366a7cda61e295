"""The seam between the loss monitor and the ways a node counts: :class:`CounterNode`.

A node that monitors flows (the ingress node counting and colouring, the egress node
counting per colour) is driven by :class:`srperf.pm.monitor.LossMonitor` through four
calls only, whatever counts underneath: eBPF maps (:class:`EbpfNode`, this module),
ip6tables or nftables rule counters, ipset counters (other implementations, in modules of
their own, registered in :mod:`srperf.pm.implementations`).

Counter indexes are ``flow.index * 2 + colour`` everywhere, and every count is
cumulative since the node's flows were set (the monitor takes differences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from srperf.pm.maps import Runner, read_counters, set_flows, set_state
from srperf.pm.model import Count, Flow
from srperf.pm.node import Attached, detach


class CounterNode(Protocol):
    """One monitoring node as the loss monitor sees it."""

    role: str
    """``ingress`` (counts, and colours when marking) or ``egress`` (counts per colour)."""

    def set_flows(self, flows: list[Flow]) -> None:
        """Monitor exactly ``flows`` from now on (their counters start at 0)."""

    def set_colour(self, colour: int, marking: bool) -> None:
        """Ingress node: mark ``colour`` (0 or 1) on every monitored packet from now on
        (``marking`` False: count as colour ``colour``, leave the packets unmarked)."""

    def read(self) -> dict[int, Count]:
        """Cumulative counts per index ``flow * 2 + colour`` (zero entries may be left out)."""

    def detach(self) -> None:
        """Remove everything this node added (programs, maps, rules, sets, qdiscs)."""


@dataclass
class EbpfNode:
    """A node counting with the PF-PLM eBPF programs (TC at ingress, XDP at egress)."""

    runner: Runner
    attached: Attached
    detached: bool = field(default=False, init=False)
    """Set by :meth:`detach`: a second call (a cleanup path after a normal end) does
    nothing, as the kernel nodes' detach does (it would fail on a gone filter)."""

    @property
    def role(self) -> str:
        return self.attached.role

    def set_flows(self, flows: list[Flow]) -> None:
        set_flows(self.runner, self.attached.maps, flows)

    def set_colour(self, colour: int, marking: bool) -> None:
        set_state(self.runner, self.attached.maps, colour, marking)

    def read(self) -> dict[int, Count]:
        return read_counters(self.runner, self.attached.maps)

    def detach(self) -> None:
        if not self.detached:
            detach(self.runner, self.attached)
            self.detached = True


__all__ = ["CounterNode", "EbpfNode"]
