"""Building blocks the matrices share: a case list that numbers its cases, SRv6 frames."""

from __future__ import annotations

from typing import Callable, Sequence

from scapy.layers.l2 import Ether

from srperf.traffic import packets as P
from srperf.behaviors.conformance import wire as W
from srperf.behaviors.conformance.model import Case, Drop, Forward, NotApplicable, Outcome
from srperf.measure.checks import Expectation
from srperf.config.model import TestbedConfig

SIZES = (512, None)
"""Frame size variants besides the 64-byte default: 512 bytes and the largest that fits
the link MTU (None) after what the behavior adds."""


class CaseList:
    """The cases of one behavior, numbered from 1 in the order they are added."""

    def __init__(self, tb: TestbedConfig, behavior: str) -> None:
        self.tb, self.behavior = tb, behavior
        self.cases: list[Case] = []

    @property
    def next_tag(self) -> int:
        return len(self.cases) + 1

    def add(self, name: str, dimension: str, frames: Callable[[int], Sequence[bytes]],
            outcome: Callable[[Sequence[bytes]], Outcome], spec: str,
            burst: bool = False, description: str = "") -> None:
        """A case whose ``frames(tag)`` are sent and whose ``outcome(frames)`` is expected."""
        tag = self.next_tag
        sent = tuple(bytes(f) for f in frames(tag))
        if any(f.find(W.tag_bytes(tag)) < 0 for f in sent) and dimension != "fragments":
            raise ValueError(f"{self.behavior}/{name}: a frame without its tag")
        self.cases.append(Case(self.behavior, name, dimension, sent, outcome(sent), spec,
                               tag=tag, burst=burst, description=description))

    def not_applicable(self, name: str, dimension: str, reason: str, spec: str) -> None:
        self.cases.append(Case(self.behavior, name, dimension, (), NotApplicable(reason),
                               spec, tag=self.next_tag))

    def drop(self, reason: str) -> Callable[[Sequence[bytes]], Outcome]:
        return lambda _frames: Drop(reason)


def forward_each(tb: TestbedConfig, transform: Callable[[bytes], bytes], what: str,
                 free: tuple[tuple[int, str], ...] = ()
                 ) -> Callable[[Sequence[bytes]], Outcome]:
    """Outcome: every sent frame comes out as ``transform(frame)`` (Ethernet included)."""
    def outcome(frames: Sequence[bytes]) -> Outcome:
        return Forward(tuple(Expectation(Ether(transform(f)), what, free) for f in frames))
    return outcome


def extra_sids(tb: TestbedConfig, count: int) -> list[str]:
    """``count`` SIDs routed to the tester (under sid_prefix, apart from the SUT's)."""
    base = tb.addressing.sid_next.rsplit(":", 1)[0]
    return [f"{base}:{i + 2:x}" for i in range(count)]


def sr_frame(tb: TestbedConfig, path: Sequence[str], sl: int, body: bytes, nh: int, *,
             hlim: int = P.HOP_LIMIT, tlvs: bytes = b"", before: int | None = None,
             reduced: bool = False, last_entry: int | None = None, dst: str | None = None,
             src: str | None = None) -> bytes:
    """Outer IPv6 + SRH of ``path`` (first SID first) with Segments Left ``sl`` and
    ``body`` behind it; ``reduced`` leaves the first SID out of the Segment List (the
    reduced SRH of H.Encaps.Red); ``before`` puts a hop-by-hop (0) or destination
    options (60) header before the SRH.  The DA is the active SID unless ``dst``."""
    stored = list(reversed(path[1:] if reduced else path))
    if dst is None:
        dst = stored[sl] if sl < len(stored) else path[0]
    headers = W.srh(stored, sl, nh, tlvs, last_entry)
    first = P.NH_ROUTING
    if before is not None:
        headers = W.ext_header(before, P.NH_ROUTING) + headers
        first = before
    return W.srv6(tb, dst, headers, first, body, hlim, src)


def max_inner(tb: TestbedConfig, overhead: int) -> int:
    """The largest inner packet (bytes) whose frame leaves room for ``overhead`` bytes of
    outer headers within the link MTU."""
    return tb.addressing.link_mtu - overhead


__all__ = ["CaseList", "forward_each", "extra_sids", "sr_frame", "max_inner", "SIZES"]
