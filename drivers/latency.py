"""Latency figures of one latency stream: what TRex's flow-stats latency block says.

TRex reports, per packet group (``STLFlowLatencyStats(pg_id)``), in microseconds:
``total_min``, ``average``, ``total_max``, ``jitter``, a bucket ``histogram``
(``{bucket_us: count}``, buckets of 10 us, then 100 us, ... wide, keyed by their
lower edge) and, when the server runs with ``--hdrh``, ``hdrh``: an HDR histogram
encoded as TRex sends it (decoded with the ``hdrh`` package).  Percentiles come
from the HDR histogram when there is one (precise to its 3 significant digits),
else from the buckets (then a percentile is the lower edge of the bucket holding
it: coarse, and said so by ``source``).

The local generator (srgen's probes, :func:`from_probes`) gives the same figures
from one-way latencies in nanoseconds: its HDR histogram records nanoseconds
(``hdrh_unit_ns`` 1; TRex's record microseconds, 1000), so both decode alike
with :func:`histogram`.  A trial in which no latency packet arrived has
``packets`` 0 and no figure at all (None), never a latency of zero.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
"""Percentiles reported, in percent."""
HDRH_HIGHEST_NS = 60_000_000_000
"""Largest latency the local generator's histograms hold, ns (a minute)."""
HDRH_DIGITS = 3
"""Significant digits of the local generator's histograms (as TRex's)."""


@dataclass(frozen=True)
class LatencyStats:
    """One latency stream's figures, microseconds (None: no latency packet arrived)."""

    min_us: float | None
    avg_us: float | None
    max_us: float | None
    jitter_us: float | None
    """Smoothed variation of consecutive latencies (RFC 3550 interarrival jitter)."""
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    p999_us: float | None
    packets: int
    """Latency packets the figures are based on."""
    source: str
    """Where the percentiles come from: ``hdrh``, ``buckets`` or ``none``."""
    p9999_us: float | None = None
    sent: int | None = None
    """Latency packets sent (None: the driver does not say)."""
    lost: int | None = None
    """Latency packets that never arrived."""
    reordered: int | None = None
    """Latency packets that arrived after one sent later."""
    duplicates: int | None = None
    receiver_dropped: int | None = None
    """Latency packets that arrived but the receiver itself dropped (srgen's socket
    buffer full): not counted in ``lost`` (the path's loss)."""
    hdrh: str | None = None
    """The HDR histogram, base64 (``HdrHistogram.encode``), or None."""
    hdrh_unit_ns: int = 1000
    """Nanoseconds per value recorded in ``hdrh`` (TRex: microseconds, 1000)."""
    generator: str = "trex"
    """Which generator stamped the packets (``trex`` or ``linux``)."""
    note: str = ""
    """Why figures are missing or doubtful, for humans."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def received(self) -> bool:
        """True when at least one latency packet arrived (there are figures)."""
        return self.packets > 0


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
    errors = block.get("err_cntrs") or {}

    def figure(name: str) -> float | None:
        return float(block.get(name, 0)) if packets else None

    def err(name: str) -> int | None:
        return int(errors[name]) if name in errors else None

    return LatencyStats(min_us=figure("total_min"), avg_us=figure("average"),
                        max_us=figure("total_max"), jitter_us=figure("jitter"),
                        p50_us=pcts[0], p90_us=pcts[1], p99_us=pcts[2], p999_us=pcts[3],
                        p9999_us=pcts[4], packets=packets, source=source,
                        lost=err("dropped"), reordered=err("out_of_order"),
                        duplicates=err("dup"),
                        hdrh=encoded if isinstance(encoded, str) else None,
                        note="" if packets else "no latency packet received")


def from_probes(probes: Mapping[str, Any]) -> LatencyStats:
    """:class:`LatencyStats` from srgen's ``probes`` report (one-way latencies in ns,
    in arrival order; see srgen.c ``-p``).  Percentiles come from an HDR histogram of
    the nanoseconds (3 significant digits), min/avg/max from the values themselves.
    A negative latency (the clock stepped during the trial) is left out and said."""
    from hdrh.histogram import HdrHistogram

    values = [int(v) for v in probes.get("latency_ns", [])]
    sent, received = int(probes.get("offered", 0)), int(probes.get("received", 0))
    notes = []
    negative = sum(1 for v in values if v < 0)
    if negative:
        notes.append(f"{negative} probe(s) with a negative latency left out (the clock "
                     "stepped)")
    unstamped = int(probes.get("unstamped", 0))
    if unstamped:
        notes.append(f"{unstamped} probe(s) without a kernel receive time stamp")
    dropped = int(probes.get("socket_drops", 0))
    if dropped:
        notes.append(f"{dropped} probe(s) dropped by srgen's receive buffer (not the path; "
                     "latency figures lack them)")
    late = int(probes.get("late", 0))
    if late:
        notes.append(f"{late} probe(s) of an earlier trial arrived during this one")
    good = [v for v in values if v >= 0]
    hist = HdrHistogram(1, HDRH_HIGHEST_NS, HDRH_DIGITS)
    for v in good:
        hist.record_value(max(1, min(v, HDRH_HIGHEST_NS)))
    common = dict(packets=len(good), sent=sent, lost=max(sent - received - dropped, 0),
                  receiver_dropped=dropped,
                  reordered=int(probes.get("reordered", 0)),
                  duplicates=int(probes.get("duplicates", 0)), hdrh_unit_ns=1,
                  generator="linux")
    if not good:
        notes.insert(0, f"no probe received ({sent} sent)" if not received else
                     "no probe with a usable latency")
        return LatencyStats(None, None, None, None, None, None, None, None, source="none",
                            p9999_us=None, hdrh=None, note="; ".join(notes), **common)
    jitter = 0.0
    for a, b in zip(values, values[1:]):
        if a >= 0 and b >= 0:
            jitter += (abs(b - a) - jitter) / 16.0
    pcts = [hist.get_value_at_percentile(p) / 1e3 for p in PERCENTILES]
    return LatencyStats(min_us=min(good) / 1e3, avg_us=sum(good) / len(good) / 1e3,
                        max_us=max(good) / 1e3, jitter_us=jitter / 1e3,
                        p50_us=pcts[0], p90_us=pcts[1], p99_us=pcts[2], p999_us=pcts[3],
                        p9999_us=pcts[4], source="hdrh",
                        hdrh=hist.encode().decode("ascii"), note="; ".join(notes), **common)


def histogram(stats: Mapping[str, Any]) -> Any:
    """The decoded HDR histogram (``hdrh.histogram.HdrHistogram``) of a stored
    :class:`LatencyStats` dict, or None when it has none."""
    from hdrh.histogram import HdrHistogram

    encoded = stats.get("hdrh")
    return HdrHistogram.decode(encoded) if encoded else None


def percentile_curve(stats: Mapping[str, Any],
                     ticks_per_half: int = 5) -> list[tuple[float, float]]:
    """(percentile %, latency us) points of a stored histogram, as CSIT's HDR latency
    graph draws them (percentiles halving the distance to 100 % ``ticks_per_half``
    steps at a time); empty without a histogram."""
    hist = histogram(stats)
    if hist is None or hist.get_total_count() == 0:
        return []
    unit = float(stats.get("hdrh_unit_ns", 1000)) / 1e3
    return [(float(i.percentile_level_iterated_to), i.value_iterated_to * unit)
            for i in hist.get_percentile_iterator(ticks_per_half)]


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
    if h.get_total_count() == 0:
        return [None] * len(PERCENTILES)
    return [float(h.get_value_at_percentile(p)) for p in PERCENTILES]


__all__ = ["PERCENTILES", "LatencyStats", "from_probes", "from_trex", "histogram",
           "percentile_curve"]
