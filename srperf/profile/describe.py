"""One line per profile trial, for progress output."""

from __future__ import annotations

from srperf.profile.model import Profile
from srperf.profile.stacks import ROUTE_LOOKUP


def describe_profile(p: Profile, top: int = 3) -> str:
    """``812 ns/pkt on cpu1 (620.0 kpps, 2 s); fib6_table_lookup 9.1 %, ...`` or why not."""
    ns = p.ns_per_packet
    if ns is None:
        return f"not measured: {p.busy_note or 'no packets forwarded'}"
    who = f"{'+'.join(p.threads)} on cpu{p.cpu}" if p.thread_ns is not None \
        else f"cpu{p.cpu}"
    whole = f", whole CPU {p.cpu_ns_per_packet:.0f}" if p.thread_ns is not None \
        and p.cpu_ns_per_packet is not None else ""
    parts = [f"{ns:.0f} ns/pkt in {who}{whole} ({p.rate_pps / 1e3:.1f} kpps, "
             f"{p.duration_s:g} s, {p.packets} packets, loss {100 * (p.loss_ratio or 0):.2f} %)"]
    if p.cycles_per_packet is not None:
        parts.append(f"{p.cycles_per_packet:.0f} cycles/pkt, "
                     f"{p.instructions_per_packet or 0:.0f} instructions/pkt")
    if p.functions:
        parts.append(", ".join(f"{f.symbol} {100 * f.share:.1f} %" for f in p.functions[:top]))
    else:
        parts.append(f"no functions: {p.sampler_note}")
    lookup = p.stack_share(ROUTE_LOOKUP.name)
    if lookup is not None:
        parts.append(f"{ROUTE_LOOKUP.name} {ns * lookup:.0f} ns/pkt ({100 * lookup:.1f} % of "
                     f"the time, inclusive)")
    elif p.functions:
        parts.append(f"no inclusive time: {p.stacks_note}")
    for prog in p.programs:
        if prog.ns_per_run is not None:
            parts.append(f"BPF {prog.name} {prog.ns_per_run:.0f} ns/run")
        elif not prog.timed:
            parts.append(f"BPF {prog.name} {prog.runs} runs")
    for node in p.nodes[:top]:
        parts.append(f"VPP {node.node} {node.clocks:.1f} clk/pkt")
    return "; ".join(parts)


__all__ = ["describe_profile"]
