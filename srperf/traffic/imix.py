"""IMIX: a mix of frame sizes sent as one load, in place of one packet size.

An experiment lists ``imix`` among its ``packet_sizes`` and names the mix in its
``imix`` key: a profile below, or a list of ``"SIZE:WEIGHT"`` strings (frame size
in bytes without FCS, as ``packet_sizes``; weight a positive integer: the share
of packets of that size).  Results of the mix are stored under packet size
:data:`IMIX_SIZE` (0) and shown as ``imix``; rates are packets per second of the
whole mix.
"""

from __future__ import annotations

import re
from typing import Any

IMIX_SIZE = 0
"""The packet size under which results of the experiment's IMIX are stored."""

PROFILES: dict[str, tuple[tuple[int, int], ...]] = {
    "simple": ((64, 7), (594, 4), (1518, 1)),
    "trex": ((60, 28), (590, 16), (1514, 4)),
}
"""Named mixes: ``simple`` is the classic 7:4:1 IMIX of 64/594/1518-byte frames;
``trex`` the one of TRex's ``stl/imix.py`` (28:16:4 of 60/590/1514 bytes)."""

_ITEM = re.compile(r"^(\d+):(\d+)\Z")


def parse_imix(value: Any, min_size: int = 48, max_size: int = 9000
               ) -> tuple[tuple[int, int], ...]:
    """The mix ``value`` names (profile name or ``["SIZE:WEIGHT", ...]``); ValueError
    saying what is wrong otherwise."""
    if isinstance(value, str):
        if value not in PROFILES:
            raise ValueError(f"unknown IMIX profile (profiles: {', '.join(PROFILES)})")
        return PROFILES[value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError("an IMIX is a profile name or a non-empty list of 'SIZE:WEIGHT'")
    mix = []
    for i, item in enumerate(value):
        m = _ITEM.match(str(item).strip())
        if not m:
            raise ValueError(f"item {i} ({item!r}) is not 'SIZE:WEIGHT'")
        size, weight = int(m.group(1)), int(m.group(2))
        if not min_size <= size <= max_size:
            raise ValueError(f"item {i}: size {size} is outside {min_size}..{max_size}")
        if weight < 1:
            raise ValueError(f"item {i}: weight {weight} must be at least 1")
        mix.append((size, weight))
    if len({s for s, _ in mix}) != len(mix):
        raise ValueError("a size is listed twice")
    return tuple(mix)


def size_label(size: int) -> str:
    """``"imix"`` for :data:`IMIX_SIZE`, else the size in bytes."""
    return "imix" if int(size) == IMIX_SIZE else str(int(size))


def mean_size(mix: tuple[tuple[int, int], ...]) -> float:
    """Mean frame size of the mix, bytes."""
    return sum(s * w for s, w in mix) / sum(w for _, w in mix)


__all__ = ["IMIX_SIZE", "PROFILES", "mean_size", "parse_imix", "size_label"]
