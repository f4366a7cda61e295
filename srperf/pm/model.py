"""Dataclasses of the loss monitor: its settings, a flow, a block, a block's loss.

Limits come from ``testbed/dataplanes/pm/pm_common.h`` (read, not copied), so C and
Python cannot drift apart.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, field

from srperf.errors import ConfigError
from srperf.resources import pm_dir

MIN_PERIOD_S = 0.2
"""Shortest colour period T (seconds): the counters are read at T/2 after a flip and
one read (bpftool over the transport, both nodes) must end well before the next flip."""


@functools.lru_cache(maxsize=1)
def c_limits() -> dict[str, int]:
    """``PM_MAX_SEGS`` and ``PM_MAX_FLOWS`` as pm_common.h defines them."""
    text = (pm_dir() / "pm_common.h").read_text()
    out = {}
    for name in ("PM_MAX_SEGS", "PM_MAX_FLOWS"):
        match = re.search(rf"#define\s+{name}\s+(\d+)", text)
        if match is None:
            raise ValueError(f"{pm_dir() / 'pm_common.h'}: no #define {name}")
        out[name] = int(match.group(1))
    return out


@dataclass(frozen=True)
class Flow:
    """A monitored flow: its SID list in travel order (the first segment first, as
    ``ip -6 route ... encap seg6 ... segs A,B,C`` takes it); ``index`` 0..PM_MAX_FLOWS-1
    is its counters' slot."""

    index: int
    sids: tuple[str, ...]


@dataclass(frozen=True)
class PmSettings:
    """How the monitor runs.

    period_s: the colour period T in seconds (the colour flips every T; the inactive
    colour is read T/2 after each flip).  marking: colour the packets (False: count
    only).  source: the file the settings came from, for error messages.
    """

    period_s: float = 1.0
    marking: bool = True
    source: str = "<pm settings>"

    def __post_init__(self) -> None:
        if not isinstance(self.period_s, (int, float)) or self.period_s < MIN_PERIOD_S:
            raise ConfigError(self.source, "pm.period_s", self.period_s,
                              f"the colour period must be a number of seconds >= {MIN_PERIOD_S} "
                              "(the counters are read at T/2 after each flip)")


def make_flows(sid_lists: list[list[str]], source: str = "<pm flows>") -> list[Flow]:
    """Flows 0..n-1 from SID lists; refuses more flows than pm_flows holds, an empty or
    too long list, a SID that is not an IPv6 address, or the same list twice."""
    limits = c_limits()
    if len(sid_lists) > limits["PM_MAX_FLOWS"]:
        raise ConfigError(source, "pm.flows", len(sid_lists),
                          f"at most {limits['PM_MAX_FLOWS']} monitored flows (pm_flows' size)")
    flows, seen = [], set()
    for i, sids in enumerate(sid_lists):
        key = f"pm.flows[{i}]"
        if not 1 <= len(sids) <= limits["PM_MAX_SEGS"]:
            raise ConfigError(source, key, sids,
                              f"a flow has 1..{limits['PM_MAX_SEGS']} SIDs (PM_MAX_SEGS)")
        try:
            norm = tuple(str(ipaddress.IPv6Address(s)) for s in sids)
        except ValueError as exc:
            raise ConfigError(source, key, sids, f"not an IPv6 SID list: {exc}") from None
        if norm in seen:
            raise ConfigError(source, key, sids, "the same SID list twice: flows are distinct")
        seen.add(norm)
        flows.append(Flow(i, norm))
    return flows


@dataclass(frozen=True)
class Count:
    """Packets and bytes (bytes: the IPv6 packet's length, its header included)."""

    packets: int = 0
    bytes: int = 0

    def __sub__(self, other: "Count") -> "Count":
        return Count(self.packets - other.packets, self.bytes - other.bytes)


@dataclass(frozen=True)
class Block:
    """One marking block: ``index`` 0, 1, ... in order; ``colour`` 0 or 1 (blocks
    alternate); ``flipped_at_s`` the monotonic time (seconds) its colour stopped being
    marked; ``read_at_s`` when its counters were read (None before)."""

    index: int
    colour: int
    flipped_at_s: float
    read_at_s: float | None = None


@dataclass(frozen=True)
class BlockLoss:
    """One flow's loss in one block: ``sent`` counted by the ingress node, ``received``
    by the egress node (packets and bytes of that block's colour)."""

    flow: int
    block: int
    colour: int
    sent: Count
    received: Count
    extra: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def lost_packets(self) -> int:
        """Packets lost between the two nodes (negative: more arrived than were sent,
        i.e. packets of another block or flow were counted here)."""
        return self.sent.packets - self.received.packets

    @property
    def loss_ratio(self) -> float:
        """Lost / sent packets (0..1; 0.0 for a block with nothing sent)."""
        return self.lost_packets / self.sent.packets if self.sent.packets else 0.0


__all__ = ["MIN_PERIOD_S", "Block", "BlockLoss", "Count", "Flow", "PmSettings", "c_limits",
           "make_flows"]
