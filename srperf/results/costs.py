"""Per-packet cost measured without a generator, stored beside a run's trials.

The xdp forwarder runs its attached chain with ``BPF_PROG_RUN`` over the behavior's
own test frame after each behavior's verification (:meth:`srperf.forwarders.xdp.
forwarder.XdpForwarder.packet_cost`); the session stores one :class:`PacketCost` per
behavior and size in the ``costs`` table.  This module holds the record, reads it back
per behavior (:func:`cost_rows`), prints it (:func:`format_costs`) and sets two runs'
costs side by side (:func:`compare_costs`, where both sides have them).

The figure is the chain's own CPU time on the SUT (``ns_per_packet`` = the median
run, ``ns_min`` the least disturbed one): it ranks chains also where the fast path
outruns the generator and the end-to-end search ends ``generator_limited``.  It is not
a throughput: a packet through a NIC also pays the driver, the redirect and the
transmit, which BPF_PROG_RUN does not.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srperf.results.store import ResultStore

METHOD_PROG_RUN = "bpf_prog_run"


@dataclass(frozen=True)
class StepCost:
    """One step program's share of the measured runs (per-step statistics)."""

    program: str
    runs: int
    ns: int | None
    """Nanoseconds over those runs (None: only runs were counted, step_stats count)."""

    @property
    def ns_per_run(self) -> float | None:
        return self.ns / self.runs if self.ns is not None and self.runs else None


@dataclass(frozen=True)
class PacketCost:
    """A behavior's per-packet cost (status ok), or why there is none (failed)."""

    method: str
    status: str
    runs: int = 0
    verdict: str = ""
    ns_per_packet: float | None = None
    """The median run's nanoseconds."""
    ns_min: float | None = None
    ns_p90: float | None = None
    programs: int = 0
    """Programs one packet runs through (the dispatcher and each step)."""
    tail_calls: int = 0
    frame_bytes: int = 0
    step_stats: str = "off"
    note: str = ""
    steps: tuple[StepCost, ...] = ()

    def detail_dict(self) -> dict[str, Any]:
        return {"steps": [asdict(s) for s in self.steps]}

    def describe(self) -> str:
        """``370 ns/packet (median of 1000 BPF_PROG_RUNs, fastest 210, p90 420), 2
        programs, XDP_REDIRECT`` or ``not measured: <why>``."""
        if self.status != "ok" or self.ns_per_packet is None:
            return f"cost not measured: {self.note or self.status}"
        text = (f"{self.ns_per_packet:.0f} ns/packet (median of {self.runs} "
                f"{'BPF_PROG_RUNs' if self.method == METHOD_PROG_RUN else self.method}, "
                f"fastest {self.ns_min or 0:.0f}, p90 {self.ns_p90 or 0:.0f}), "
                f"{self.programs} programs ({self.tail_calls} tail calls), {self.verdict}")
        timed = [s for s in self.steps if s.ns_per_run is not None]
        if timed:
            text += "; per step " + ", ".join(f"{s.program} {s.ns_per_run:.0f} ns"
                                              for s in timed)
        elif self.steps:
            text += "; step runs " + ", ".join(f"{s.program} {s.runs}" for s in self.steps)
        return text


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by the nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


@dataclass
class CostRow:
    """One behavior and size of a run: its stored costs (medians over the rows)."""

    behavior: str
    packet_size: int
    n: int
    ns_per_packet: float | None
    ns_min: float | None
    programs: int
    tail_calls: int
    verdict: str
    step_stats: str
    steps: dict[str, float | None] = field(default_factory=dict)
    """Step program -> median ns per run (None: counted, not timed)."""
    notes: list[str] = field(default_factory=list)


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def cost_rows(store: "ResultStore", run_id: str) -> list[CostRow]:
    """The run's costs per behavior and packet size (in the order they were stored);
    a behavior whose every measurement failed has ``ns_per_packet`` None and notes."""
    df = store.frame("costs", run_id)
    out: list[CostRow] = []
    if df.empty:
        return out
    for (beh, size), grp in df.groupby(["behavior", "packet_size"], sort=False):
        ok = grp[grp["status"] == "ok"]
        steps: dict[str, list[float]] = {}
        counted: set[str] = set()
        for text in ok["detail"]:
            for s in json.loads(text or "{}").get("steps", []):
                cost = StepCost(**s)
                if cost.ns_per_run is None:
                    counted.add(cost.program)
                else:
                    steps.setdefault(cost.program, []).append(cost.ns_per_run)
        first = ok.iloc[0] if len(ok) else grp.iloc[0]
        out.append(CostRow(
            str(beh), int(size), len(ok), _median(list(ok["ns_per_packet"].dropna())),
            _median(list(ok["ns_min"].dropna())), int(first["programs"] or 0),
            int(first["tail_calls"] or 0), str(first["verdict"] or ""),
            str(first["step_stats"] or "off"),
            {**{p: None for p in counted}, **{p: _median(v) for p, v in steps.items()}},
            sorted({str(n) for n in grp["note"] if n})))
    return out


def _ns(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def format_costs(rows: list[CostRow]) -> str:
    """The costs as a text table (the run's output)."""
    lines = [f"{'behavior':18} {'size':>5} {'n':>3} {'ns/pkt':>7} {'fastest':>7} "
             f"{'programs':>8} {'verdict':13} per step (ns/run)"]
    for r in rows:
        steps = ", ".join(f"{p} {_ns(v)}" for p, v in r.steps.items()) or "-"
        line = (f"{r.behavior:18} {r.packet_size:5d} {r.n:3d} {_ns(r.ns_per_packet):>7} "
                f"{_ns(r.ns_min):>7} {r.programs:8d} {r.verdict or '-':13} {steps}")
        if r.ns_per_packet is None and r.notes:
            line += f"  not measured: {'; '.join(r.notes)}"
        lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True)
class CostChange:
    """One behavior's cost in two runs (no verdict: one median of single runs a side)."""

    behavior: str
    packet_size: int
    baseline_ns: float | None
    current_ns: float | None
    baseline_min: float | None = None
    """The fastest runs' ns (the least disturbed by the host's other load)."""
    current_min: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline_ns and self.current_ns is not None:
            return self.current_ns / self.baseline_ns
        return None


def compare_costs(base: list[CostRow], cur: list[CostRow]) -> list[CostChange]:
    """The behaviors and sizes both runs measured a cost of."""
    have = {(r.behavior, r.packet_size): r for r in base if r.ns_per_packet is not None}
    out = []
    for r in cur:
        b = have.get((r.behavior, r.packet_size))
        if r.ns_per_packet is not None and b is not None:
            out.append(CostChange(r.behavior, r.packet_size, b.ns_per_packet, r.ns_per_packet,
                                  b.ns_min, r.ns_min))
    return out


def format_cost_changes(changes: list[CostChange]) -> list[str]:
    """Markdown lines of :func:`compare_costs` (empty when there is nothing to set side
    by side)."""
    if not changes:
        return []
    lines = ["Per-packet cost without a generator (BPF_PROG_RUN median ns; informative, "
             "not judged):", "",
             "| behavior | size | baseline ns | current ns | current / baseline "
             "| fastest ns baseline -> current |",
             "|---|---:|---:|---:|---:|---|"]
    for c in changes:
        ratio = "-" if c.ratio is None else f"{c.ratio:.2f}"
        lines.append(f"| {c.behavior} | {c.packet_size} | {_ns(c.baseline_ns)} "
                     f"| {_ns(c.current_ns)} | {ratio} "
                     f"| {_ns(c.baseline_min)} -> {_ns(c.current_min)} |")
    return lines


__all__ = ["PacketCost", "StepCost", "CostRow", "CostChange", "cost_rows", "format_costs",
           "compare_costs", "format_cost_changes", "percentile", "METHOD_PROG_RUN"]
