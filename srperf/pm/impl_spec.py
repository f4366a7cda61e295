"""What a loss-monitoring implementation is: :class:`Implementation` (its name, roles,
attach, and optionally its probe, flow limit and flow refusals), and the checks that
use those.  The registry by name is :mod:`srperf.pm.implementations`; the kernel-path
modules build their :class:`Implementation` from here (so nothing imports in a circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from srperf.errors import ConfigError
from srperf.pm.counters import CounterNode
from srperf.pm.maps import Runner
from srperf.pm.model import Flow

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


__all__ = ["Attach", "CheckFlows", "Implementation", "Probe", "check_flows", "probe"]
