"""Bar chart of profile trials: per behavior, ns per packet split by top functions."""

from __future__ import annotations

from srperf.results.plots import COLORS, plt, png_data_uri
from srperf.results.profiles import BehaviorProfile

OTHER = "(other)"


def stacked_functions(rows: list[BehaviorProfile], top: int = 8) -> list[str]:
    """The functions that get their own colour: the largest ns/packet over all rows."""
    weight: dict[str, float] = {}
    for r in rows:
        for sym, ns in r.function_ns():
            weight[sym] = max(weight.get(sym, 0.0), ns)
    return [s for s, _ in sorted(weight.items(), key=lambda kv: -kv[1])[:top]]


def profile_bars_png(rows: list[BehaviorProfile], title: str, top: int = 8) -> str:
    """Horizontal stacked bars (PNG data URI): one per behavior, length = median ns per
    packet, split into the ``top`` largest functions and the rest."""
    rows = [r for r in rows if r.ns_per_packet is not None]
    names = stacked_functions(rows, top)
    fig, ax = plt.subplots(figsize=(10.0, 1.0 + 0.45 * max(len(rows), 1)))
    labels = [f"{r.behavior} ({r.packet_size} B)" for r in rows]
    left = [0.0] * len(rows)
    for i, sym in enumerate([*names, OTHER]):
        widths = []
        for r in rows:
            part = dict(r.function_ns())
            rest = (r.ns_per_packet or 0.0) - sum(part.get(s, 0.0) for s in names)
            widths.append(part.get(sym, 0.0) if sym != OTHER else rest)
        ax.barh(labels, widths, left=left, label=sym,
                color="#cccccc" if sym == OTHER else COLORS[i % len(COLORS)])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("ns per forwarded packet (forwarding CPU time / packets)")
    ax.set_title(title, fontsize=10)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return png_data_uri(fig)


__all__ = ["profile_bars_png", "stacked_functions", "OTHER"]
