"""What a profile trial found (:mod:`srperf.profile.trial`).

Every figure carries its unit in its name; a figure the setup cannot give is None
with a note that says why (never a zero).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class FunctionShare:
    """One sampled function on the forwarding CPU."""

    symbol: str
    """Function name as perf resolved it (``[unknown]`` when it could not)."""
    share: float
    """Share of the busy samples on that CPU, 0..1."""
    samples: int
    """Samples that landed in it."""
    kernel: bool = True
    """True for a kernel function (perf's ``[k]``), False for user space (``[.]``)."""


@dataclass(frozen=True)
class StackShare:
    """Samples whose call chain passes through a group of functions (inclusive time,
    each sample counted once): the group's total, one of its paths, or one of its
    member functions (:mod:`srperf.profile.stacks`)."""

    group: str
    """The stack group (``route lookup``, ``netfilter``)."""
    kind: str
    """``total`` (the whole group), ``path`` (the samples whose outermost matching
    frame is that path's entry) or ``function`` (the samples through that member)."""
    name: str
    share: float
    """Share of the busy samples kept (the forwarding threads'), 0..1."""
    samples: int


@dataclass(frozen=True)
class ProgramCost:
    """One BPF program's runs during the trial (``kernel.bpf_stats_enabled``)."""

    name: str
    prog_id: int
    runs: int
    run_ns: int
    """Nanoseconds spent in the program during the trial (sum over runs)."""
    timed: bool = True
    """False: only runs were counted (the fast path's per-step statistics in count
    mode); ``run_ns`` means nothing then."""

    @property
    def ns_per_run(self) -> float | None:
        return self.run_ns / self.runs if self.runs and self.timed else None


@dataclass(frozen=True)
class NodeCost:
    """One VPP graph node in ``show runtime`` after the trial (cleared before it)."""

    thread: str
    node: str
    state: str
    calls: int
    vectors: int
    suspends: int
    clocks: float
    """VPP's Clocks column: clocks per vector (per packet) when the node handled
    vectors, else per call."""
    vectors_per_call: float

    @property
    def clocks_per_packet(self) -> float | None:
        return self.clocks if self.vectors else None


@dataclass
class Profile:
    """The profile trial of one search: load, what the forwarding CPU did, and why not
    where a part could not be measured."""

    fraction: float
    """Load as a fraction of the PDR found (see :attr:`load_basis`)."""
    rate_pps: float
    """Offered rate of the trial, packets per second."""
    duration_s: float
    cpu: int | None
    """The SUT's forwarding CPU (None: not known, nothing per CPU measured)."""
    packets: int = 0
    """Packets forwarded during the window (see :attr:`packets_source`)."""
    packets_source: str = ""
    """Where :attr:`packets` comes from: the SUT egress port's kernel counter, or the
    tester's received count where the SUT has none."""
    loss_ratio: float | None = None
    busy_ns: int | None = None
    """system + irq + softirq nanoseconds of ``cpu`` during the trial (/proc/stat)."""
    busy_note: str = ""
    window_s: float | None = None
    """Wall time between the two /proc/stat reads around the traffic, seconds."""
    threads: list[str] = field(default_factory=list)
    """The forwarding threads measured on ``cpu`` (threaded NAPI kthreads on the
    virtual testbed); empty where the forwarding runs in softirq of any task."""
    thread_ns: int | None = None
    """utime + stime nanoseconds of ``threads`` during the trial (/proc/PID/stat): the
    forwarding's own time, whatever else runs on the CPU (a shared machine)."""
    cycles: int | None = None
    instructions: int | None = None
    pmu_note: str = ""
    """Why there are no cycles or instructions (no PMU), or '' when there are."""
    functions: list[FunctionShare] = field(default_factory=list)
    """The top sampled functions, largest share first."""
    samples: int = 0
    """Busy samples taken on ``cpu`` (idle time gives none)."""
    sampler_note: str = ""
    """Why there are no sampled functions (perf missing or failing), or ''."""
    stacks: list[StackShare] = field(default_factory=list)
    """Inclusive time of the stack groups (the route lookup...), from the samples' call
    chains; empty with :attr:`stacks_note` saying why when there are none."""
    stacks_note: str = ""
    """Why there is no inclusive time (no samples, no call chains), or ''."""
    programs: list[ProgramCost] = field(default_factory=list)
    nodes: list[NodeCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the forwarder's own sources (BPF stats, VPP runtime) could not measure."""
    load_basis: str = "PDR"
    """What ``fraction`` applies to: ``PDR``, or ``highest passing rate`` when the
    search ended generator-limited (the SUT's PDR is above what the tester could send;
    the time per packet is still the SUT's)."""

    @property
    def ns_per_packet(self) -> float | None:
        """Nanoseconds of forwarding per forwarded packet: the forwarding threads' time
        where they are known (:attr:`thread_ns`), else the CPU's busy time."""
        ns = self.thread_ns if self.thread_ns is not None else self.busy_ns
        return ns / self.packets if ns is not None and self.packets else None

    @property
    def cpu_ns_per_packet(self) -> float | None:
        """Busy nanoseconds of the whole forwarding CPU per forwarded packet (includes
        whatever else ran there)."""
        return self.busy_ns / self.packets if self.busy_ns is not None and self.packets \
            else None

    @property
    def cycles_per_packet(self) -> float | None:
        return self.cycles / self.packets if self.cycles is not None and self.packets \
            else None

    @property
    def instructions_per_packet(self) -> float | None:
        return self.instructions / self.packets \
            if self.instructions is not None and self.packets else None

    def function_ns(self) -> list[tuple[str, float]]:
        """(function, ns per packet) of the top functions: ns per packet x share."""
        total = self.ns_per_packet
        if total is None:
            return []
        return [(f.symbol, total * f.share) for f in self.functions]

    def stack_share(self, group: str, kind: str = "total",
                    name: str | None = None) -> float | None:
        """Share of the samples through ``group`` (or one of its paths or functions),
        0 when the group was measured but none passed through it, None when there are
        no call chains."""
        if not self.stacks:
            return None
        want = group if name is None else name
        return next((s.share for s in self.stacks
                     if s.group == group and s.kind == kind and s.name == want), 0.0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Profile":
        d = dict(data)
        d["functions"] = [FunctionShare(**f) for f in d.get("functions", [])]
        d["programs"] = [ProgramCost(**p) for p in d.get("programs", [])]
        d["nodes"] = [NodeCost(**n) for n in d.get("nodes", [])]
        d["stacks"] = [StackShare(**s) for s in d.get("stacks", [])]
        return cls(**d)


__all__ = ["FunctionShare", "StackShare", "ProgramCost", "NodeCost", "Profile"]
