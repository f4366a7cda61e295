"""Bar chart of profile trials: per behavior, ns per packet split by function.

Each bar is one behavior's median ns per packet; its segments are the function
families of :data:`srperf.results.profiles.GROUPS` (summed: the IPv6 route lookup,
netfilter), then the largest other functions, then the rest."""

from __future__ import annotations

from srperf.results.plots import COLORS, plt, png_data_uri
from srperf.results.profiles import GROUPS, BehaviorProfile

OTHER = "(other)"


def _group_of(symbol: str) -> str | None:
    return next((name for name, prefixes in GROUPS.items() if symbol.startswith(prefixes)),
                None)


def segments(r: BehaviorProfile) -> dict[str, float]:
    """ns per packet of each group (``name (sum)``) and of each ungrouped function."""
    out: dict[str, float] = {}
    for sym, ns in r.function_ns():
        group = _group_of(sym)
        name = f"{group} (sum)" if group else sym
        out[name] = out.get(name, 0.0) + ns
    return out


def stacked_functions(rows: list[BehaviorProfile], top: int = 8) -> list[str]:
    """The segments that get their own colour: groups first, then the functions with the
    largest ns per packet over all rows."""
    weight: dict[str, float] = {}
    for r in rows:
        for name, ns in segments(r).items():
            weight[name] = max(weight.get(name, 0.0), ns)
    groups = [n for n in weight if n.endswith(" (sum)")]
    rest = [n for n, _ in sorted(weight.items(), key=lambda kv: -kv[1]) if n not in groups]
    return (groups + rest)[:top]


def profile_bars_png(rows: list[BehaviorProfile], title: str, top: int = 8) -> str:
    """Horizontal stacked bars (PNG data URI): one per behavior, length = median ns per
    packet, split into the groups, the largest functions and the rest."""
    rows = [r for r in rows if r.ns_per_packet is not None]
    names = stacked_functions(rows, top)
    fig, ax = plt.subplots(figsize=(10.0, 1.0 + 0.45 * max(len(rows), 1)))
    labels = [f"{r.behavior} ({r.packet_size} B)"
              + ("" if r.basis == "PDR" else "\nat a generator-limited load") for r in rows]
    left = [0.0] * len(rows)
    for i, name in enumerate([*names, OTHER]):
        widths = []
        for r in rows:
            part = segments(r)
            rest = (r.ns_per_packet or 0.0) - sum(part.get(n, 0.0) for n in names)
            widths.append(part.get(name, 0.0) if name != OTHER else rest)
        ax.barh(labels, widths, left=left, label=name,
                color="#cccccc" if name == OTHER else COLORS[i % len(COLORS)])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("ns per forwarded packet (forwarding CPU time / packets)")
    ax.set_title(title, fontsize=10)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return png_data_uri(fig)


__all__ = ["profile_bars_png", "stacked_functions", "segments", "OTHER"]
