"""Where a slower behavior's extra time goes: the route lookup against a reference.

SRPerf (its paper's section IV-D) found End.X and End.DX6 far below End because of a
route lookup per packet that the kernel could not cache.  For each profiled behavior
this puts side by side, against the reference (``end`` when profiled):

* its time per packet and the part of it spent in the IPv6 route lookup, counted
  inclusively from the samples' call chains (:data:`srperf.profile.stacks.ROUTE_LOOKUP`:
  the clone's allocation and free included);
* its extra time over the reference, and how much of that extra is route lookup;
* the time per packet ratio against the inverse PDR ratio (reference PDR / its PDR):
  when the forwarding CPU's time explains the throughput the two agree; they are
  said to agree within :data:`AGREEMENT_PCT`.

All times are nanoseconds of the forwarding per forwarded packet (medians over the
repetitions, shares averaged), from :mod:`srperf.results.profiles`.
"""

from __future__ import annotations

from dataclasses import dataclass

from srperf.profile.stacks import ROUTE_LOOKUP
from srperf.results.behavior_profile import BehaviorProfile

AGREEMENT_PCT = 20.0
"""Largest gap between the time ratio and the inverse PDR ratio, in % of the latter,
for the two to agree (the issue's criterion)."""

MIN_EXTRA_PCT = 5.0
"""Extra time below this % of the reference's time gets no 'of which' share."""


@dataclass(frozen=True)
class Diagnosis:
    """One behavior against the reference (ns per packet; ratios; shares in %)."""

    behavior: str
    reference: str
    packet_size: int
    ns_per_packet: float
    reference_ns: float
    group_ns: float | None
    """ns per packet whose call chains pass through the group (None: no call chains)."""
    reference_group_ns: float | None
    pdr_ratio: float | None
    """PDR of the reference / PDR of the behavior (None: a PDR is missing)."""
    group: str = ROUTE_LOOKUP.name

    @property
    def group_pct(self) -> float | None:
        """The group's part of the behavior's time, %."""
        return None if self.group_ns is None else 100.0 * self.group_ns / self.ns_per_packet

    @property
    def extra_ns(self) -> float:
        return self.ns_per_packet - self.reference_ns

    @property
    def extra_group_ns(self) -> float | None:
        if self.group_ns is None or self.reference_group_ns is None:
            return None
        return self.group_ns - self.reference_group_ns

    @property
    def group_part_of_extra_pct(self) -> float | None:
        """How much of the extra time is in the group, % (None without call chains, or
        when the extra time is under :data:`MIN_EXTRA_PCT` of the reference's: a share
        of almost nothing says nothing)."""
        extra, in_group = self.extra_ns, self.extra_group_ns
        if in_group is None or extra <= MIN_EXTRA_PCT / 100 * self.reference_ns:
            return None
        return 100.0 * in_group / extra

    @property
    def ns_ratio(self) -> float:
        return self.ns_per_packet / self.reference_ns

    @property
    def disagreement_pct(self) -> float | None:
        """How far the time ratio is from the inverse PDR ratio, % of the latter."""
        return None if self.pdr_ratio is None else 100.0 * (self.ns_ratio / self.pdr_ratio - 1)

    @property
    def agrees(self) -> bool | None:
        gap = self.disagreement_pct
        return None if gap is None else abs(gap) <= AGREEMENT_PCT


def diagnose(rows: list[BehaviorProfile], reference: str | None = None,
             group: str = ROUTE_LOOKUP.name) -> list[Diagnosis]:
    """Every behavior with a time per packet against ``reference`` (default ``end``
    when profiled, else the first), the reference itself first; only behaviors
    measured at the same load basis as the reference (a fraction of the PDR)."""
    names = [r.behavior for r in rows]
    ref_name = reference or ("end" if "end" in names else (names[0] if names else ""))
    by = {(r.behavior, r.packet_size): r for r in rows}
    out: list[Diagnosis] = []
    for r in sorted(rows, key=lambda x: (x.packet_size, x.behavior != ref_name)):
        ref = by.get((ref_name, r.packet_size))
        if ref is None or r.ns_per_packet is None or ref.ns_per_packet is None \
                or r.basis != ref.basis:
            continue
        pdr = ref.pdr_kpps / r.pdr_kpps if ref.pdr_kpps and r.pdr_kpps else None
        out.append(Diagnosis(r.behavior, ref_name, r.packet_size, r.ns_per_packet,
                             ref.ns_per_packet, r.stack_ns(group), ref.stack_ns(group), pdr,
                             group))
    return out


def _num(v: float | None, fmt: str, none: str = "-") -> str:
    return none if v is None else format(v, fmt)


def format_diagnosis(diags: list[Diagnosis]) -> str:
    """The table for the terminal ('' when there is nothing to compare)."""
    if len(diags) < 2:
        return ""
    d0 = diags[0]
    lines = [f"{d0.group} against {d0.reference} (time whose call chain passes through "
             f"the IPv6 route lookup, clone allocation and free included):",
             f"  {'behavior':<14} {'size':>4} {'ns/pkt':>7} {d0.group + ' ns/pkt':>20} "
             f"{'extra ns':>8} {'of which ' + d0.group:>30} {'ns ratio':>8} "
             f"{'PDR ratio':>9}  agree within {AGREEMENT_PCT:g} %"]
    for d in diags:
        grp = "-" if d.group_ns is None else f"{d.group_ns:.0f} ({d.group_pct:.1f} %)"
        if d.behavior == d.reference:
            extra = of = ratio = pdr = agree = ""
        else:
            extra = f"{d.extra_ns:+.0f}"
            of = _num(d.extra_group_ns, "+.0f") + (
                f" ({d.group_part_of_extra_pct:.0f} %)"
                if d.group_part_of_extra_pct is not None else "")
            ratio = f"x{d.ns_ratio:.2f}"
            pdr = _num(d.pdr_ratio, ".2f", "no PDR")
            pdr = pdr if d.pdr_ratio is None else "x" + pdr
            agree = "-" if d.agrees is None else \
                f"{'yes' if d.agrees else 'no'} ({d.disagreement_pct:+.0f} %)"
        lines.append(f"  {d.behavior:<14} {d.packet_size:>4} {d.ns_per_packet:>7.0f} "
                     f"{grp:>20} {extra:>8} {of:>30} {ratio:>8} {pdr:>9}  {agree}")
    return "\n".join(lines)


__all__ = ["AGREEMENT_PCT", "MIN_EXTRA_PCT", "Diagnosis", "diagnose", "format_diagnosis"]
