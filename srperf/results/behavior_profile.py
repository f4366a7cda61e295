"""One behavior's profile trials summarised (:class:`BehaviorProfile`), the type that
:mod:`srperf.results.profiles` builds from the store and :mod:`srperf.results.diagnosis`
and :mod:`srperf.results.suspects` read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BehaviorProfile:
    """One behavior's profile trials summarised (ns per packet, shares 0..1, kpps)."""

    behavior: str
    packet_size: int
    n: int
    """Profile trials with a time per packet."""
    ns_per_packet: float | None
    """Median busy ns of the forwarding CPU per forwarded packet."""
    pdr_kpps: float | None
    """Median PDR (the searches' highest loss threshold), kpps."""
    shares: dict[str, float] = field(default_factory=dict)
    """Function -> mean share of the busy samples over the trials (largest first)."""
    cycles_per_packet: float | None = None
    instructions_per_packet: float | None = None
    notes: list[str] = field(default_factory=list)
    """Distinct reasons for what was not measured (no PMU, no perf, ...)."""
    programs: dict[str, float] = field(default_factory=dict)
    """BPF program -> median ns per run."""
    nodes: dict[str, float] = field(default_factory=dict)
    """VPP graph node -> median clocks per packet."""
    ns_values: list[float] = field(default_factory=list)
    """ns per packet of each profile trial used (the repetitions)."""
    basis: str = "PDR"
    """Load of the trials used: ``PDR`` (a fraction of the behavior's own PDR: the SUT
    near its limit, comparable across behaviors) or ``highest passing rate`` (every
    search was generator-limited: a lighter load, where time per packet is larger)."""
    node_vectors: dict[str, float] = field(default_factory=dict)
    """VPP graph node -> median vectors per call (the batch it ran on)."""
    stacks: dict[tuple[str, str, str], float] = field(default_factory=dict)
    """(group, kind, name) -> mean inclusive share over the trials with call chains
    (:class:`srperf.profile.model.StackShare`; a trial without an entry counts 0)."""

    def stack_ns(self, group: str, kind: str = "total", name: str | None = None) \
            -> float | None:
        """ns per packet whose call chains pass through ``group`` (or one of its paths
        or functions): median ns per packet x mean inclusive share; None without call
        chains."""
        if self.ns_per_packet is None or not self.stacks:
            return None
        return self.ns_per_packet * self.stacks.get((group, kind, group if name is None
                                                     else name), 0.0)

    def stack_items(self, group: str, kind: str) -> list[tuple[str, float]]:
        """(name, mean share) of ``group``'s paths or functions, largest first."""
        items = [(n, v) for (g, k, n), v in self.stacks.items() if g == group and k == kind]
        return sorted(items, key=lambda kv: -kv[1])

    def group_ns(self, prefixes: tuple[str, ...]) -> float | None:
        """ns per packet in the sampled functions whose names start with ``prefixes``
        (of the top functions kept: a lower bound)."""
        if self.ns_per_packet is None or not self.shares:
            return None
        return self.ns_per_packet * sum(v for s, v in self.shares.items()
                                        if s.startswith(prefixes))

    def function_ns(self, top: int | None = None) -> list[tuple[str, float]]:
        if self.ns_per_packet is None:
            return []
        items = list(self.shares.items())[:top] if top else list(self.shares.items())
        return [(sym, self.ns_per_packet * share) for sym, share in items]
