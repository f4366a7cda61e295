"""The ways a node can count monitored flows, by name: ``pm.implementation``.

Each :class:`Implementation` says which roles it can take (``ingress``: count and colour
the packets it sends on; ``egress``: count per colour the packets it receives) and how to
attach it to an interface of a node, giving a :class:`~srperf.pm.counters.CounterNode`.
The eBPF implementations are here; the kernel-path ones (ip6tables, nftables, ipset)
register themselves from their own modules through :func:`register`.  ``none`` (the
base case of a throughput experiment: nothing counts) is not an implementation: callers
attach nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from srperf.errors import ConfigError
from srperf.pm.counters import CounterNode, EbpfNode
from srperf.pm.maps import Runner
from srperf.pm.model import Flow
from srperf.pm.node import attach_egress, attach_ingress

ROLES = ("ingress", "egress")

Attach = Callable[[Runner, str, str, Path], CounterNode]
"""``attach(runner, role, dev, obj_dir)``: attach on ``dev`` of the node ``runner`` runs
on, in ``role``; ``obj_dir`` is where the node has the PF-PLM objects (eBPF only)."""


Probe = Callable[[Runner, str, str], Optional[str]]
"""``probe(runner, role, dev)``: None when the implementation can be attached in ``role``
on ``dev`` of that node, else why not in the node's tool's or kernel's own words (an
``unsupported`` result); it leaves nothing behind."""

CheckFlows = Callable[[list[Flow], str], None]
"""``check_flows(flows, source)``: ConfigError (naming ``source`` and the key) for flows
the implementation cannot tell apart or hold; run before anything is configured."""


@dataclass(frozen=True)
class Implementation:
    """One way of counting: its name, the roles it takes, and how to attach it;
    optionally how to find out whether a node can run it (``probe``; None: no probe,
    attaching says), how many flows it holds (``max_flows``; None: pm_flows' size) and
    which flows it refuses (``check_flows``)."""

    name: str
    roles: tuple[str, ...]
    attach: Attach
    summary: str
    probe: Probe | None = None
    max_flows: int | None = None
    check_flows: CheckFlows | None = None


def _ebpf_tc(runner: Runner, role: str, dev: str, obj_dir: Path) -> CounterNode:
    return EbpfNode(runner, attach_ingress(runner, dev, obj_dir / "pm_tc_ingress.o"))


def _ebpf_xdp(runner: Runner, role: str, dev: str, obj_dir: Path) -> CounterNode:
    return EbpfNode(runner, attach_egress(runner, dev, obj_dir / "pm_xdp_egress.o"))


IMPLEMENTATIONS: dict[str, Implementation] = {}


def register(impl: Implementation) -> None:
    """Add ``impl`` under its name (a name registered twice is a programming error)."""
    if impl.name in IMPLEMENTATIONS:
        raise ValueError(f"pm implementation {impl.name!r} registered twice")
    IMPLEMENTATIONS[impl.name] = impl


register(Implementation("ebpf_tc", ("ingress",), _ebpf_tc,
                        "eBPF on tc clsact egress of the interface the node sends on"))
register(Implementation("ebpf_xdp", ("egress",), _ebpf_xdp,
                        "eBPF on XDP of the interface the node receives on"))


def lookup(name: str, role: str, source: str, key: str = "pm.implementation") -> Implementation:
    """The implementation ``name`` for ``role``; ConfigError (exit 2) naming ``source``
    and ``key`` for an unknown name or a role it cannot take."""
    impl = IMPLEMENTATIONS.get(name)
    if impl is None:
        raise ConfigError(source, key, name,
                          f"not a loss-monitoring implementation (known: "
                          f"{', '.join(sorted(IMPLEMENTATIONS))})")
    if role not in impl.roles:
        raise ConfigError(source, key, name,
                          f"{name} cannot be the {role} node (it can be: "
                          f"{', '.join(impl.roles)})")
    return impl


def check_flows(impl: Implementation, flows: list[Flow], source: str) -> None:
    """``impl``'s refusals of ``flows`` (more than it holds, flows it cannot tell apart)."""
    cap = impl.max_flows
    if cap is not None and len(flows) > cap:
        raise ConfigError(source, "pm.flows", len(flows),
                          f"{impl.name} counts at most {cap} flows")
    if impl.check_flows is not None:
        impl.check_flows(flows, source)


def probe(impl: Implementation, runner: Runner, role: str, dev: str) -> str | None:
    """Why ``impl`` cannot be attached there (None: it can, or it has no probe)."""
    return impl.probe(runner, role, dev) if impl.probe is not None else None


# The kernel-path implementations register themselves (they import register above).
from srperf.pm import ip6tables_node, ipset_node, nft_node  # noqa: E402,F401

__all__ = ["Attach", "CheckFlows", "Probe", "check_flows", "probe", "IMPLEMENTATIONS", "Implementation", "ROLES", "lookup", "register"]
