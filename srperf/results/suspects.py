"""First suspects of a regression: which sampled functions' cost grew between two runs.

For one behavior profiled in both runs (:mod:`srperf.results.profiles`), each function's
ns per packet (median ns per packet x its mean share of the busy samples) is compared;
the functions whose cost grew most come first.  A function absent from the baseline's
top functions counts as 0 there and is marked ``new`` (it may have been just below the
baseline's top).  Where a side has no time per packet, shares are compared instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from srperf.results.behavior_profile import BehaviorProfile


@dataclass(frozen=True)
class Suspect:
    """One function whose cost changed (shares 0..1, ns per packet)."""

    symbol: str
    baseline_share: float
    current_share: float
    baseline_ns: float | None
    current_ns: float | None

    @property
    def new(self) -> bool:
        return self.baseline_share == 0.0

    @property
    def delta_ns(self) -> float | None:
        if self.baseline_ns is None or self.current_ns is None:
            return None
        return self.current_ns - self.baseline_ns

    @property
    def delta_share(self) -> float:
        return self.current_share - self.baseline_share

    def describe(self) -> str:
        ns = f", {self.delta_ns:+.0f} ns/pkt" if self.delta_ns is not None else ""
        return (f"{self.symbol}{' (new)' if self.new else ''} "
                f"{100 * self.baseline_share:.1f} % -> {100 * self.current_share:.1f} % "
                f"of samples{ns}")


@dataclass(frozen=True)
class StackChange:
    """A stack group's inclusive time from baseline to current (ns per packet; shares
    0..1 of the forwarding's samples whose call chains pass through the group)."""

    group: str
    baseline_share: float
    current_share: float
    baseline_ns: float | None
    current_ns: float | None

    @property
    def delta_ns(self) -> float | None:
        if self.baseline_ns is None or self.current_ns is None:
            return None
        return self.current_ns - self.baseline_ns

    def describe(self) -> str:
        ns = (f", {self.baseline_ns:.0f} -> {self.current_ns:.0f} ns/pkt"
              if self.baseline_ns is not None and self.current_ns is not None else "")
        return (f"call chains through {self.group} {100 * self.baseline_share:.1f} % -> "
                f"{100 * self.current_share:.1f} % of samples{ns}")


def stack_suspects(base: BehaviorProfile, cur: BehaviorProfile) -> list[StackChange]:
    """The stack groups (route lookup, netfilter) whose inclusive time grew, most first;
    empty when either side has no call chains."""
    if not base.stacks or not cur.stacks:
        return []
    groups = dict.fromkeys(g for (g, kind, _) in [*base.stacks, *cur.stacks] if kind == "total")
    out = []
    for g in groups:
        b, c = base.stacks.get((g, "total", g), 0.0), cur.stacks.get((g, "total", g), 0.0)
        out.append(StackChange(g, b, c, base.stack_ns(g), cur.stack_ns(g)))
    grown = [x for x in out if (x.delta_ns if x.delta_ns is not None
                                else x.current_share - x.baseline_share) > 0]
    return sorted(grown, key=lambda x: -(x.delta_ns or 0.0))


def _changes(base: BehaviorProfile, cur: BehaviorProfile) -> tuple[list[Suspect], bool]:
    """Every sampled function of either side; True when both have a time per packet."""
    out = []
    for sym in dict.fromkeys([*cur.shares, *base.shares]):
        b, c = base.shares.get(sym, 0.0), cur.shares.get(sym, 0.0)
        bn = base.ns_per_packet * b if base.ns_per_packet is not None else None
        cn = cur.ns_per_packet * c if cur.ns_per_packet is not None else None
        out.append(Suspect(sym, b, c, bn, cn))
    return out, base.ns_per_packet is not None and cur.ns_per_packet is not None


def suspects(base: BehaviorProfile, cur: BehaviorProfile, top: int = 3) -> list[Suspect]:
    """The ``top`` functions whose cost grew most from ``base`` to ``cur``."""
    out, timed = _changes(base, cur)
    key = (lambda s: -(s.delta_ns or 0.0)) if timed else (lambda s: -s.delta_share)
    grown = [s for s in sorted(out, key=key) if (s.delta_ns or s.delta_share) > 0]
    return grown[:top]


def function_changes(base: BehaviorProfile, cur: BehaviorProfile) -> list[Suspect]:
    """Every function whose cost changed, the largest change (grown or shrunk) first: by
    ns per packet where both sides have a time per packet, else by share of samples
    (kernel against kernel, :mod:`srperf.results.kernel_compare`)."""
    out, timed = _changes(base, cur)
    size = (lambda s: abs(s.delta_ns or 0.0)) if timed else (lambda s: abs(s.delta_share))
    return [s for s in sorted(out, key=lambda s: -size(s)) if size(s) > 0]


__all__ = ["Suspect", "suspects", "function_changes", "StackChange", "stack_suspects"]
