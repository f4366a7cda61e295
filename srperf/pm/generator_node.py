"""The traffic generator as the ingress node of a loss trial (the SUT is the egress node).

It colours by sending each block's frames with the block's colour (Traffic Class bit
``PM_COLOUR_TC_BIT`` of the outer IPv6 header), and counts what it sent: packet ``i``
of a trial belongs to flow ``i % N`` (srgen's order, :mod:`srperf.traffic.flows`), so
a trial of ``sent`` packets gave flow ``f`` ``ceil((sent - f) / N)`` of them.  The
counts are the generator's, not a meter's: they stand where an ingress node's would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from srperf.pm.model import Count, Flow

COLOUR_BYTE = 14 + 1
"""Byte of the Ethernet frame holding the low 4 bits of the outer Traffic Class."""
COLOUR_MASK = 0x04 << 4
"""PM_COLOUR_TC_BIT (pm_common.h) where it lies in that byte."""


def coloured(frame: bytes, colour: int) -> bytes:
    """``frame`` (Ethernet + IPv6) with its colour bit set to ``colour``."""
    if len(frame) <= COLOUR_BYTE or frame[14] >> 4 != 6:
        raise ValueError("a coloured frame must be Ethernet + IPv6")
    raw = bytearray(frame)
    raw[COLOUR_BYTE] = (raw[COLOUR_BYTE] | COLOUR_MASK) if colour & 1 else \
        (raw[COLOUR_BYTE] & ~COLOUR_MASK & 0xFF)
    return bytes(raw)


@dataclass
class GeneratorNode:
    """A :class:`srperf.pm.counters.CounterNode` made of the generator: ``prepare(frame)``
    hands it a frame (all flows are varied from it), ``add_trial(sent)`` counts a trial."""

    frame: bytes
    prepare: Callable[[bytes], Any]
    n_flows: int
    role: str = "ingress"
    colour: int = 0
    _counts: dict[int, Count] = field(default_factory=dict)

    def set_flows(self, flows: list[Flow]) -> None:
        self.n_flows = max(1, len(flows))
        self._counts = {}

    def set_colour(self, colour: int, marking: bool) -> None:
        self.colour = colour & 1 if marking else 0
        self.prepare(coloured(self.frame, self.colour))

    def add_trial(self, sent: int) -> None:
        """Count a trial of ``sent`` packets, all of the current colour."""
        size = len(self.frame) - 14
        for f in range(self.n_flows):
            packets = max(0, -(-(sent - f) // self.n_flows))
            idx = f * 2 + self.colour
            old = self._counts.get(idx, Count())
            self._counts[idx] = Count(old.packets + packets, old.bytes + packets * size)

    def read(self) -> dict[int, Count]:
        return dict(self._counts)

    def detach(self) -> None:
        self.prepare(self.frame)


__all__ = ["COLOUR_BYTE", "COLOUR_MASK", "GeneratorNode", "coloured"]
