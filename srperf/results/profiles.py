"""Profile trials of a run, per behavior (srperf.profile; table ``profiles``).

For each (behavior, packet size): the median busy ns per packet of the forwarding CPU
over the repetitions, the mean share of each sampled function (so ns per packet of a
function = median ns per packet x its mean share), and the median PDR the searches
found.  Ratios against a reference behavior put the two views side by side: if the
CPU time per packet explains the throughput, ``ns ratio`` ~ ``1 / PDR ratio``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from srperf.profile.model import Profile
from srperf.results.behavior_profile import BehaviorProfile


GROUPS: dict[str, tuple[str, ...]] = {
    "IPv6 route lookup": ("fib6_", "ip6_pol_route", "ip6_route_", "ip6_rt_", "rt6_",
                          "ip6_dst_", "ip6_ins_rt", "ip6_create_rt_rcu"),
    "netfilter": ("nft_", "nf_", "ipt_", "ip6t_"),
}
"""Families of kernel functions (name prefixes) whose ns per packet is summed in the
profile summary: the route lookup SRPerf found behind End.X and End.DX6, and
netfilter (the planted slowdown of bench/profile_nft.py)."""


def _median(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(pd.Series(vals).median()) if vals else None


def summarize_profiles(profiles: pd.DataFrame,
                       searches: pd.DataFrame | None = None) -> list[BehaviorProfile]:
    """One :class:`BehaviorProfile` per (behavior, packet size), in the run's order."""
    out: list[BehaviorProfile] = []
    if profiles is None or profiles.empty:
        return out
    for (beh, size), grp in profiles.groupby(["behavior", "packet_size"], sort=False):
        details = [Profile.from_dict(json.loads(d)) for d in grp["detail"] if d]
        timed = [p for p in details if p.ns_per_packet is not None]
        # time per packet depends on the load (a NAPI thread that often sleeps pays
        # for each wake-up): keep the trials at a fraction of a real PDR when there
        # are some, those at a generator-limited search's highest passing rate if not
        at_pdr = [p for p in timed if p.load_basis == "PDR"]
        basis = "PDR" if at_pdr or not timed else timed[0].load_basis
        timed = at_pdr or timed
        shares: dict[str, float] = {}
        sampled = [p for p in timed if p.functions]
        for p in sampled:
            for f in p.functions:
                shares[f.symbol] = shares.get(f.symbol, 0.0) + f.share / len(sampled)
        shares = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
        chained = [p for p in timed if p.stacks]
        stacks: dict[tuple[str, str, str], float] = {}
        for p in chained:
            for st in p.stacks:
                key = (st.group, st.kind, st.name)
                stacks[key] = stacks.get(key, 0.0) + st.share / len(chained)
        notes: list[str] = []
        for p in details:
            for note in (p.sampler_note, p.pmu_note, p.stacks_note, *p.notes,
                         "" if p.ns_per_packet is not None else p.busy_note):
                if note and note not in notes:
                    notes.append(note)
        programs: dict[str, list[float]] = {}
        for p in details:
            for prog in p.programs:
                if prog.ns_per_run is not None:
                    programs.setdefault(prog.name, []).append(prog.ns_per_run)
        nodes: dict[str, list[float]] = {}
        vectors: dict[str, list[float]] = {}
        for p in details:
            for node in p.nodes:
                if node.clocks_per_packet is not None:
                    nodes.setdefault(node.node, []).append(node.clocks_per_packet)
                    vectors.setdefault(node.node, []).append(node.vectors_per_call)
        pdr = None
        if searches is not None and not searches.empty:
            s = searches[(searches["behavior"] == beh) & (searches["packet_size"] == size)]
            if len(s):
                s = s[s["threshold_pct"] == s["threshold_pct"].max()]
                ok = s[s["status"].isin(["ok", "at_max"])]["lower_pps"].dropna()
                pdr = float(ok.median()) / 1000.0 if len(ok) else None
        out.append(BehaviorProfile(
            str(beh), int(size), len(timed), _median([p.ns_per_packet for p in timed]),
            pdr, shares,
            _median([p.cycles_per_packet for p in timed if p.cycles_per_packet is not None]),
            _median([p.instructions_per_packet for p in timed
                     if p.instructions_per_packet is not None]),
            notes, {k: _median(v) or 0.0 for k, v in programs.items()},
            {k: _median(v) or 0.0 for k, v in nodes.items()},
            [p.ns_per_packet for p in timed if p.ns_per_packet is not None], basis,
            {k: _median(v) or 0.0 for k, v in vectors.items()},
            stacks))
    return out


@dataclass(frozen=True)
class Agreement:
    """A behavior against the reference: time per packet and PDR, as ratios."""

    behavior: str
    reference: str
    ns_ratio: float
    """ns per packet of the behavior / of the reference."""
    pdr_ratio: float
    """PDR of the reference / of the behavior (1 / PDR ratio: comparable with ns_ratio)."""

    @property
    def disagreement_pct(self) -> float:
        """How far the time ratio is from the inverse PDR ratio, % of the latter."""
        return 100.0 * (self.ns_ratio / self.pdr_ratio - 1.0)


def agreements(rows: list[BehaviorProfile], reference: str | None = None) -> list[Agreement]:
    """Each behavior against ``reference`` (default: ``end`` when profiled, else the
    first), where both have a time per packet and a PDR."""
    by = {(r.behavior, r.packet_size): r for r in rows}
    names = [r.behavior for r in rows]
    ref_name = reference or ("end" if "end" in names else (names[0] if names else ""))
    out = []
    for r in rows:
        ref = by.get((ref_name, r.packet_size))
        if ref is None or r is ref or None in (r.ns_per_packet, ref.ns_per_packet,
                                               r.pdr_kpps, ref.pdr_kpps) \
                or "PDR" != r.basis or "PDR" != ref.basis:
            continue
        out.append(Agreement(r.behavior, ref_name, r.ns_per_packet / ref.ns_per_packet,
                             ref.pdr_kpps / r.pdr_kpps))  # type: ignore[operator]
    return out


def format_profiles(rows: list[BehaviorProfile], top: int = 3) -> str:
    """Plain text for the terminal: ns/packet, PDR, top functions; then the ratios."""
    if not rows:
        return "(no profile trials)"
    lines = [f"{'behavior':<16} {'size':>4} {'n':>2} {'ns/pkt':>8} {'PDR kpps':>9}  "
             f"top functions (share of the forwarding's samples)"]
    for r in rows:
        ns = f"{r.ns_per_packet:8.0f}" if r.ns_per_packet is not None else f"{'-':>8}"
        pdr = f"{r.pdr_kpps:9.1f}" if r.pdr_kpps is not None else f"{'-':>9}"
        funcs = ", ".join(f"{s} {100 * v:.1f} %" for s, v in list(r.shares.items())[:top])
        if r.basis != "PDR":
            funcs += f" [at a {r.basis}: generator-limited]"
        extra = []
        if r.cycles_per_packet is not None:
            extra.append(f"{r.cycles_per_packet:.0f} cycles/pkt, "
                         f"{r.instructions_per_packet or 0:.0f} instr/pkt")
        extra += [f"{k} {v:.0f} ns/run" for k, v in r.programs.items()]
        extra += [f"{k} {v:.1f} clk/pkt" for k, v in list(r.nodes.items())[:top]]
        lines.append(f"{r.behavior:<16} {r.packet_size:>4} {r.n:>2} {ns} {pdr}  "
                     f"{funcs or '-'}" + (f"; {'; '.join(extra)}" if extra else ""))
    notes = sorted({n for r in rows for n in r.notes})
    lines += [f"  not measured: {n}" for n in notes]
    ag = agreements(rows)
    if ag:
        lines.append(f"time per packet against {ag[0].reference} (ns ratio) and "
                     f"{ag[0].reference}'s PDR / the behavior's (PDR ratio):")
        for a in ag:
            lines.append(f"  {a.behavior:<16} ns x{a.ns_ratio:.2f}  PDR x{a.pdr_ratio:.2f}  "
                         f"({a.disagreement_pct:+.0f} %)")
    for name, prefixes in GROUPS.items():
        found = [(r, r.group_ns(prefixes)) for r in rows]
        if any(ns for _, ns in found):
            lines.append(f"ns per packet in {name} functions' self time ({', '.join(prefixes)}*"
                         f", top functions only): "
                         + ", ".join(f"{r.behavior} {ns:.0f}" for r, ns in found
                                     if ns is not None))
    lines += _inclusive_lines(rows)
    extra = extra_time(rows)
    if extra:
        ref = next(iter(extra.values()))[0]
        lines.append(f"where the extra time goes against {ref} (ns per packet grown most):")
        for beh, (_, grown) in extra.items():
            lines.append(f"  {beh:<16} " + "; ".join(
                f"{g.symbol} {g.delta_ns:+.0f} ns" for g in grown if g.delta_ns is not None))
    return "\n".join(lines)


def _inclusive_lines(rows: list[BehaviorProfile], top: int = 3) -> list[str]:
    """The route-lookup diagnosis (:mod:`srperf.results.diagnosis`), then per behavior
    the route lookup split by path and, against the reference, the lookup's functions
    whose inclusive ns per packet grew most (not its entries and dispatch layers, which
    contain them)."""
    from srperf.profile.stacks import ROUTE_LOOKUP
    from srperf.results.diagnosis import diagnose, format_diagnosis

    lines = []
    diags = diagnose(rows)
    table = format_diagnosis(diags)
    if table:
        lines.append(table)
    group = ROUTE_LOOKUP.name
    ref_name = diags[0].reference if diags else ""
    by = {(r.behavior, r.packet_size): r for r in rows}
    for r in rows:
        ns = r.ns_per_packet
        if ns is None or not r.stacks:
            continue
        paths = ", ".join(f"{n} {ns * v:.0f}" for n, v in r.stack_items(group, "path"))
        line = f"  {r.behavior:<14} {group} ns/pkt by path: {paths or '-'}"
        ref = by.get((ref_name, r.packet_size))
        if ref is not None and ref is not r and ref.stacks and ref.basis == r.basis:
            grown = sorted(((n, (r.stack_ns(group, "function", n) or 0.0)
                             - (ref.stack_ns(group, "function", n) or 0.0))
                            for n, _ in r.stack_items(group, "function")
                            if ROUTE_LOOKUP.specific(n)), key=lambda kv: -kv[1])
            grown = [(n, d) for n, d in grown if d > 0][:top]
            if grown:
                line += (f"; inside it, grown most against {ref_name} (inclusive): "
                         + ", ".join(f"{n} {d:+.0f}" for n, d in grown))
        lines.append(line)
    return lines


def extra_time(rows: list[BehaviorProfile], reference: str | None = None,
               top: int = 3) -> dict[str, tuple[str, list[Any]]]:
    """Behavior -> (reference, the functions whose ns per packet grew most against the
    reference): where a slower behavior spends its extra time."""
    from srperf.results.suspects import suspects

    by = {(r.behavior, r.packet_size): r for r in rows}
    names = [r.behavior for r in rows]
    ref_name = reference or ("end" if "end" in names else (names[0] if names else ""))
    out: dict[str, tuple[str, list[Any]]] = {}
    for r in rows:
        ref = by.get((ref_name, r.packet_size))
        if ref is None or r is ref or r.ns_per_packet is None or ref.ns_per_packet is None \
                or not r.shares or not ref.shares or r.basis != ref.basis:
            continue   # time per packet at different loads would not compare
        grown = suspects(ref, r, top)
        if grown:
            out[r.behavior] = (ref_name, grown)
    return out


def profile_rows(store: Any, run_id: str) -> list[BehaviorProfile]:
    """The run's profile trials summarised (empty when it has none)."""
    return summarize_profiles(store.frame("profiles", run_id), store.frame("searches", run_id))


__all__ = ["BehaviorProfile", "Agreement", "summarize_profiles", "agreements",
           "format_profiles", "profile_rows", "extra_time", "GROUPS"]
