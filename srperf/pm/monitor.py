"""The loss monitor: flip the colour, read the inactive colour on both nodes, per-flow
per-block loss (RFC 9341 alternate marking).

Counters are cumulative per flow and colour; block k has colour k % 2, so its counts are
the colour's counters read after block k ended minus the same counters read after block
k-2.  :meth:`LossMonitor.flip` ends a block, :meth:`LossMonitor.read` reads it (call it
at T/2 after the flip: the block's late packets have arrived, and the colour is not
marked again before the next flip); :meth:`LossMonitor.run` does both every period T.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from srperf.pm.counters import CounterNode, EbpfNode
from srperf.pm.model import Block, BlockLoss, Count, Flow, PmSettings

log = logging.getLogger(__name__)


PmNode = EbpfNode
"""The eBPF node (kept under its first name)."""


@dataclass
class LossMonitor:
    """Alternate-marking loss monitor over an ingress and an egress node."""

    ingress: CounterNode
    egress: CounterNode
    flows: list[Flow]
    settings: PmSettings = field(default_factory=PmSettings)
    clock: Callable[[], float] = time.monotonic
    colour: int = 0
    blocks_done: int = 0
    _last: dict[tuple[str, int], Count] = field(default_factory=dict)

    def start(self) -> None:
        """Fill both nodes' flow maps and start marking colour 0 (block 0)."""
        for node in (self.ingress, self.egress):
            node.set_flows(self.flows)
        self.colour = 0
        self.ingress.set_colour(0, self.settings.marking)

    def flip(self) -> Block:
        """Mark the other colour from now on; the block that just ended."""
        ended = Block(self.blocks_done, self.colour, self.clock())
        self.colour ^= 1
        self.ingress.set_colour(self.colour, self.settings.marking)
        self.blocks_done += 1
        return ended

    def _block_counts(self, side: str, node: CounterNode, colour: int) -> dict[int, Count]:
        now = node.read()
        out = {}
        for flow in self.flows:
            idx = flow.index * 2 + colour
            total = now.get(idx, Count())
            out[flow.index] = total - self._last.get((side, idx), Count())
            self._last[(side, idx)] = total
        return out

    def read(self, block: Block) -> tuple[Block, list[BlockLoss]]:
        """The ended ``block``'s loss per flow (ingress count - egress count)."""
        if block.colour == self.colour and self.settings.marking:
            log.warning("pm: reading block %d while its colour %d is being marked",
                        block.index, block.colour)
        sent = self._block_counts("ingress", self.ingress, block.colour)
        received = self._block_counts("egress", self.egress, block.colour)
        read = replace(block, read_at_s=self.clock())
        return read, [BlockLoss(f.index, block.index, block.colour, sent[f.index],
                                received[f.index]) for f in self.flows]

    def run(self, blocks: int, sleep: Callable[[float], None] = time.sleep
            ) -> Iterator[tuple[Block, list[BlockLoss]]]:
        """``blocks`` periods from now: the k-th flip at k*T, the read of the block it
        ended at k*T + T/2 (times on :attr:`clock`; a late step is logged, not skipped)."""
        period = self.settings.period_s
        t0 = self.clock()

        def wait_until(at: float) -> None:
            left = at - self.clock()
            if left > 0:
                sleep(left)

        for k in range(1, blocks + 1):
            wait_until(t0 + k * period)
            ended = self.flip()
            wait_until(t0 + k * period + period / 2)
            block, losses = self.read(ended)
            late = (block.read_at_s or 0.0) - block.flipped_at_s
            if late >= period:
                log.warning("pm: block %d read %.3f s after its flip, past the next flip "
                            "(period %.3f s)", block.index, late, period)
            yield block, losses


__all__ = ["LossMonitor", "PmNode"]
