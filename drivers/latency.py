"""Latency figures of one latency stream: what TRex's flow-stats latency block says.

TRex reports, per packet group (``STLFlowLatencyStats(pg_id)``), in microseconds:
``total_min``, ``average``, ``total_max``, ``jitter``, a bucket ``histogram``
(``{bucket_us: count}``, buckets of 10 us, then 100 us, ... wide, keyed by their
lower edge) and, when the server runs with ``--hdrh``, ``hdrh``: an HDR histogram
encoded as TRex sends it (decoded with the ``hdrh`` package).  Percentiles come
from the HDR histogram when there is one (precise to its 3 significant digits),
else from the buckets (then a percentile is the lower edge of the bucket holding
it: coarse, and said so by ``source``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
"""Percentiles reported, in percent."""


@dataclass(frozen=True)
class LatencyStats:
    """One latency stream's figures, microseconds."""

    min_us: float
    avg_us: float
    max_us: float
    jitter_us: float
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    p999_us: float | None
    packets: int
    """Latency packets the figures are based on."""
    source: str
    """Where the percentiles come from: ``hdrh``, ``buckets`` or ``none``."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def from_trex(block: Mapping[str, Any]) -> LatencyStats:
    """:class:`LatencyStats` from TRex's ``stats["latency"][pg_id]["latency"]`` block."""
    hist = {float(k): int(v) for k, v in (block.get("histogram") or {}).items()}
    encoded = block.get("hdrh")
    if encoded:
        pcts, source = _hdrh_percentiles(encoded), "hdrh"
    elif hist:
        pcts, source = [_bucket_percentile(hist, p) for p in PERCENTILES], "buckets"
    else:
        pcts, source = [None] * len(PERCENTILES), "none"
    packets = sum(hist.values()) if hist else int(block.get("packets", 0) or 0)
    return LatencyStats(min_us=float(block.get("total_min", 0)),
                        avg_us=float(block.get("average", 0)),
                        max_us=float(block.get("total_max", 0)),
                        jitter_us=float(block.get("jitter", 0)),
                        p50_us=pcts[0], p90_us=pcts[1], p99_us=pcts[2], p999_us=pcts[3],
                        packets=packets, source=source)


def _bucket_percentile(hist: Mapping[float, int], pct: float) -> float | None:
    total = sum(hist.values())
    if total == 0:
        return None
    need, seen = math.ceil(pct * total / 100.0 - 1e-9), 0  # rank of the percentile
    for edge in sorted(hist):
        seen += hist[edge]
        if seen >= need:
            return edge
    return max(hist)


def _hdrh_percentiles(encoded: str) -> list[float | None]:
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram.decode(encoded)
    return [float(h.get_value_at_percentile(p)) for p in PERCENTILES]


__all__ = ["PERCENTILES", "LatencyStats", "from_trex"]
