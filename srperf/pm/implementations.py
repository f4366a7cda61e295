"""The ways a node can count monitored flows, by name: ``pm.implementation``.

Each :class:`Implementation` says which roles it can take (``ingress``: count and colour
the packets it sends on; ``egress``: count per colour the packets it receives) and how to
attach it to an interface of a node, giving a :class:`~srperf.pm.counters.CounterNode`.
The eBPF implementations are here; the kernel-path ones (ip6tables, nftables, ipset)
are built in their own modules (:mod:`.ip6tables_node`, :mod:`.nft_node`,
:mod:`.ipset_node`) and registered here; :class:`Implementation` itself is in
:mod:`.impl_spec`.  ``none`` (the
base case of a throughput experiment: nothing counts) is not an implementation: callers
attach nothing for it.
"""

from __future__ import annotations

from pathlib import Path

from srperf.errors import ConfigError
from srperf.pm import ip6tables_node, ipset_node, nft_node
from srperf.pm.counters import CounterNode, EbpfNode
from srperf.pm.impl_spec import (Attach, CheckFlows, Implementation, Probe, check_flows,
                                 probe)
from srperf.pm.maps import Runner
from srperf.pm.node import attach_egress, attach_ingress

ROLES = ("ingress", "egress")

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


# The kernel-path implementations, each built in its own module.
for _impl in (ip6tables_node.IMPLEMENTATION, nft_node.IMPLEMENTATION, ipset_node.IMPLEMENTATION):
    register(_impl)


__all__ = ["Attach", "CheckFlows", "IMPLEMENTATIONS", "Implementation", "Probe", "ROLES",
           "check_flows", "lookup", "probe", "register"]
