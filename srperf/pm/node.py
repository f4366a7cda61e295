"""Attach and detach the PF-PLM programs on a node, through a :data:`Runner`.

The ingress node's program goes on tc clsact *egress* of the interface it sends the
encapsulated packets out of (filter preference :data:`TC_PREF`); the egress node's on
XDP of the interface it receives them on.  Detaching removes the program, and with it
its maps (they are not pinned); the clsact qdisc goes too when srperf added it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from srperf.pm.maps import PmMaps, Runner, find_maps

log = logging.getLogger(__name__)

TC_PREF = 4646
"""tc filter preference of the ingress node's program (ours, so we delete only it)."""
INGRESS_PROG = "pm_tc_ingress"
EGRESS_PROG = "pm_xdp_egress"


@dataclass
class Attached:
    """One attached PF-PLM program: ``role`` ``ingress`` or ``egress``, the interface,
    whether srperf added the clsact qdisc, and the maps' ids."""

    role: str
    dev: str
    maps: PmMaps
    added_qdisc: bool = False


def _has_clsact(runner: Runner, dev: str) -> bool:
    return "clsact" in runner(["tc", "qdisc", "show", "dev", dev])


def attach_ingress(runner: Runner, dev: str, obj: Path | str) -> Attached:
    """pm_tc_ingress on tc egress of ``dev`` (``obj``: pm_tc_ingress.o's path on the node)."""
    added = not _has_clsact(runner, dev)
    if added:
        runner(["tc", "qdisc", "add", "dev", dev, "clsact"])
    try:
        runner(["tc", "filter", "replace", "dev", dev, "egress", "pref", str(TC_PREF),
                "handle", "1", "bpf", "da", "obj", str(obj), "sec", "tc"])
        maps = find_maps(runner, INGRESS_PROG)
    except Exception:
        _detach_tc(runner, dev, added)
        raise
    log.info("pm: %s attached on tc egress of %s (prog %d)", INGRESS_PROG, dev, maps.prog_id)
    return Attached("ingress", dev, maps, added)


def attach_egress(runner: Runner, dev: str, obj: Path | str) -> Attached:
    """pm_xdp_egress on XDP of ``dev`` (``obj``: pm_xdp_egress.o's path on the node)."""
    runner(["ip", "link", "set", "dev", dev, "xdp", "obj", str(obj), "sec", "xdp"])
    try:
        maps = find_maps(runner, EGRESS_PROG)
    except Exception:
        runner(["ip", "link", "set", "dev", dev, "xdp", "off"])
        raise
    log.info("pm: %s attached on XDP of %s (prog %d)", EGRESS_PROG, dev, maps.prog_id)
    return Attached("egress", dev, maps)


def _detach_tc(runner: Runner, dev: str, added_qdisc: bool) -> None:
    if added_qdisc:
        runner(["tc", "qdisc", "del", "dev", dev, "clsact"])
    else:
        runner(["tc", "filter", "del", "dev", dev, "egress", "pref", str(TC_PREF)])


def detach(runner: Runner, node: Attached) -> None:
    """Remove the program (and so its maps) from the node."""
    if node.role == "ingress":
        _detach_tc(runner, node.dev, node.added_qdisc)
    else:
        runner(["ip", "link", "set", "dev", node.dev, "xdp", "off"])
    log.info("pm: %s program detached from %s", node.role, node.dev)


__all__ = ["Attached", "EGRESS_PROG", "INGRESS_PROG", "TC_PREF", "attach_egress",
           "attach_ingress", "detach"]
