"""Segments carried in the SRH, not visited: the client's ``srh_carry`` program.

The caching-proxy paper varies the length of the label stack the proxy caches and puts
back; the labels are not used for steering (its section V-A1).  The SRv6 port's variable
is the segment-list length.  Visiting each extra segment (an End SID of the server) would
add a pass through a network stack per segment, which on a virtual testbed runs on the
SUT's vCPU (veth hands a packet to the next namespace on the sending CPU): the measured
goodput then falls with segments for that work, not for the proxy's.

``carried`` puts the extra SIDs first in the client's segment list and lets
``testbed/dataplanes/ebpf/srh_carry.c`` (tc egress on the client's port) mark them as
already visited (Segments Left = the number of SIDs still to visit - 1, the destination
the first of those), so the whole list rides through the SUT and only the behavior's SID
and the server's last SID process it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from srperf.build import ensure_built
from srperf.resources import ebpf_dir
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

CARRIED, VISITED = "carried", "visited"
MODES = (CARRIED, VISITED)
"""``goodput.segment_mode`` values."""
CONFIG_MAP, STATS_MAP = "srh_carry_cfg", "srh_carry_stats"
PREF = 4244
"""tc filter preference of srh_carry on the client's port (egress)."""
_BPF_CFLAGS = ["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-target", "bpf", "-mcpu=v3",
               "-I/usr/include/x86_64-linux-gnu"]


def carry_object() -> str:
    """Build (if needed) srh_carry.o; return its path."""
    src = ebpf_dir() / "srh_carry.c"
    return str(ensure_built("srh_carry.o", [src, ebpf_dir() / "srh.h"],
                            ["clang", *_BPF_CFLAGS, "-c", str(src), "-o", "{out}"]))


def _map_id(node: Transport, dev: str, name: str) -> int:
    filters = json.loads(node.check(["tc", "-j", "filter", "show", "dev", dev, "egress",
                                     "pref", str(PREF)]).stdout or "[]")
    for f in filters:
        prog = f.get("options", {}).get("prog", {})
        if "id" not in prog:
            continue
        info = json.loads(node.check(["bpftool", "-j", "prog", "show", "id",
                                      str(prog["id"])]).stdout)
        for map_id in info.get("map_ids", []):
            minfo = json.loads(node.check(["bpftool", "-j", "map", "show", "id",
                                           str(map_id)]).stdout)
            if minfo.get("name") == name:
                return int(map_id)
    raise RuntimeError(f"{node.where}: no {name} map on {dev} egress (pref {PREF})")


def attach(node: Transport, dev: str, visit: int) -> None:
    """srh_carry on ``dev``'s egress on ``node``: SRHs leave with ``visit`` SIDs to visit."""
    if not 1 <= visit <= 255:
        raise ValueError(f"visit {visit}: must be 1..255")
    obj = node.push(Path(carry_object()))
    if "clsact" not in node.run(["tc", "qdisc", "show", "dev", dev, "clsact"]).stdout:
        node.check(["tc", "qdisc", "add", "dev", dev, "clsact"])
    node.check(["tc", "filter", "replace", "dev", dev, "egress", "pref", str(PREF), "handle",
                "1", "bpf", "direct-action", "object-file", obj, "section", "tc"])
    value = [f"{(visit >> s) & 0xff:02x}" for s in (0, 8, 16, 24)]
    node.check(["bpftool", "map", "update", "id", str(_map_id(node, dev, CONFIG_MAP)),
                "key", "hex", "00", "00", "00", "00", "value", "hex", *value])
    log.info("%s: %s carries SIDs beyond the %d visited ones", node.where, dev, visit)


def counts(node: Transport, dev: str) -> dict[str, int]:
    """Packets srh_carry changed (``carried``) and left alone (``alone``) on ``dev``."""
    dump = json.loads(node.check(["bpftool", "-j", "map", "dump", "id",
                                  str(_map_id(node, dev, STATS_MAP))]).stdout)
    out = {"carried": 0, "alone": 0}
    for entry in dump:
        formatted = entry.get("formatted", entry)
        n = sum(int(v["value"]) for v in formatted["values"])
        out["carried" if int(formatted["key"]) == 0 else "alone"] += n
    return out


def detach_argv(dev: str) -> list[str]:
    """The command that removes srh_carry from ``dev`` (its clsact qdisc may stay)."""
    return ["tc", "filter", "del", "dev", dev, "egress", "pref", str(PREF)]


__all__ = ["CARRIED", "VISITED", "MODES", "attach", "counts", "detach_argv", "carry_object"]
