"""The conformance matrix's vocabulary: a :class:`Case` and its expected outcome.

A case is a packet variant sent to one behavior (one or more frames) and what
the specification says must come out: :class:`Forward` (the frames that must
arrive, checked byte for byte with :func:`srperf.measure.checks.compare`'s rules),
:class:`Drop` (nothing may arrive; ``reason`` names the drop, and a forwarder
with counters maps it to the counter that must move) or :class:`NotApplicable`
(the variant means nothing for this behavior; not sent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from srperf.measure.checks import Expectation

DROP_REASONS = {
    "hop_limit": "hop limit (TTL) 1 on a packet to forward: time exceeded",
    "segments_left": "Segments Left is 0 where the behavior needs more, or not 0 where "
                     "it must be",
    "bad_srh": "Segments Left > Last Entry + 1, or Last Entry beyond the header",
    "upper_layer": "the upper-layer header is not one the behavior processes",
    "no_srh": "no SRH where the behavior needs one",
    "inner_hop_limit": "the inner packet's hop limit (TTL) expires at this node",
    "vnf": "the VNF (an ordinary router) drops the inner packet: hop limit/TTL 1",
    "duplicate": "a second identical inner packet while the first is inside the VNF",
}
"""Why a case's frames must be dropped (keys forwarders map to their counters)."""


@dataclass(frozen=True)
class Forward:
    """Frames that must come out.  Each received frame of the case must equal one of
    ``frames`` (each used at most once); at least ``at_least`` of them must arrive
    (default: all)."""

    frames: tuple[Expectation, ...]
    at_least: int | None = None

    @property
    def required(self) -> int:
        return len(self.frames) if self.at_least is None else self.at_least

    @property
    def kind(self) -> str:
        return "forward"


@dataclass(frozen=True)
class Drop:
    """Nothing may come out; ``reason`` is a key of :data:`DROP_REASONS`."""

    reason: str

    def __post_init__(self) -> None:
        if self.reason not in DROP_REASONS:
            raise ValueError(f"drop reason {self.reason!r} not in {sorted(DROP_REASONS)}")

    @property
    def kind(self) -> str:
        return "drop"


@dataclass(frozen=True)
class NotApplicable:
    """The variant means nothing for this behavior (why, in ``reason``)."""

    reason: str

    @property
    def kind(self) -> str:
        return "n/a"


Outcome = Union[Forward, Drop, NotApplicable]


@dataclass(frozen=True)
class Case:
    """One packet variant for one behavior and the outcome its specification demands."""

    behavior: str
    name: str
    """Short, unique within the behavior (e.g. ``sl_last_entry``, ``inner_tcp``)."""
    dimension: str
    """What the variant varies: sl, segments, srh_tlv, ext_header, hop_limit, inner,
    l4, fragments, size, flow."""
    frames: tuple[bytes, ...]
    outcome: Outcome
    spec: str
    """The section (and pseudocode line) the outcome comes from."""
    tag: int = 0
    """The number the case's frames carry (:func:`wire.tag_of`)."""
    burst: bool = False
    """Send the frames back-to-back, apart from the other cases (several packets must be
    inside the SUT at once for the case to mean anything)."""
    description: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.behavior}/{self.name}"


__all__ = ["Case", "Forward", "Drop", "NotApplicable", "Outcome", "DROP_REASONS"]
