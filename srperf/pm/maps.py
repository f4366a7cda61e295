"""The PF-PLM maps through bpftool: find them, fill the flows, set the colour, read.

Every function takes a :data:`Runner` (argv -> stdout; any transport, a namespace of
this host or an SSH SUT), so the same code drives a local and a remote node.  The maps
are found through the program's attachment (``bpftool net show``), not pinned: when
the program is detached they go, and nothing is left in bpffs.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import struct
from dataclasses import dataclass
from typing import Any, Callable

from srperf.errors import SrperfError
from srperf.pm.model import Count, Flow, c_limits

log = logging.getLogger(__name__)

Runner = Callable[[list[str]], str]
"""Runs argv on a node and returns its stdout (raises on failure)."""

MAP_NAMES = ("pm_flows", "pm_counters", "pm_state")


class PmMapError(SrperfError):
    """A PF-PLM program or map could not be found or read."""


@dataclass(frozen=True)
class PmMaps:
    """The bpftool ids of one attached program and its maps; ``state`` None for a
    program that never marks (the egress node's: the compiler drops the unused map)."""

    prog_id: int
    flows: int
    counters: int
    state: int | None


def _json(runner: Runner, argv: list[str]) -> Any:
    text = runner(argv).strip()
    return json.loads(text) if text else []


def find_prog(runner: Runner, prog_name: str) -> int | None:
    """The id of the attached program named ``prog_name`` (tc or xdp), None if none."""
    for group in _json(runner, ["bpftool", "-j", "net", "show"]):
        for kind in ("xdp", "tc"):
            for att in group.get(kind, []):
                prog_id = att.get("id")
                if prog_id is None:
                    continue
                info = _json(runner, ["bpftool", "-j", "prog", "show", "id", str(prog_id)])
                if info.get("name") == prog_name:
                    return int(prog_id)
    return None


def find_maps(runner: Runner, prog_name: str) -> PmMaps:
    """The maps of the attached program ``prog_name``; PmMapError if it is not attached."""
    prog_id = find_prog(runner, prog_name)
    if prog_id is None:
        raise PmMapError(f"no attached program named {prog_name}")
    info = _json(runner, ["bpftool", "-j", "prog", "show", "id", str(prog_id)])
    ids: dict[str, int] = {}
    for map_id in info.get("map_ids", []):
        name = _json(runner, ["bpftool", "-j", "map", "show", "id", str(map_id)]).get("name")
        if name in MAP_NAMES:
            ids[name] = int(map_id)
    missing = [n for n in MAP_NAMES[:2] if n not in ids]
    if missing:
        raise PmMapError(f"program {prog_name} (id {prog_id}) has no map {', '.join(missing)}")
    return PmMaps(prog_id, ids["pm_flows"], ids["pm_counters"], ids.get("pm_state"))


def _hex(data: bytes) -> list[str]:
    return [f"{b:02x}" for b in data]


def flow_key(flow: Flow) -> bytes:
    """struct pm_flow_key of a flow: nsegs, 7 pad bytes, the SIDs in SRH order (Segment
    List[0] = the last segment), zero-filled to PM_MAX_SEGS."""
    segs = [ipaddress.IPv6Address(s).packed for s in reversed(flow.sids)]
    pad = c_limits()["PM_MAX_SEGS"] - len(segs)
    return bytes([len(segs)]) + bytes(7) + b"".join(segs) + bytes(16 * pad)


def set_flows(runner: Runner, maps: PmMaps, flows: list[Flow]) -> None:
    """Write every flow's key -> index into pm_flows."""
    for flow in flows:
        runner(["bpftool", "map", "update", "id", str(maps.flows), "key", "hex",
                *_hex(flow_key(flow)), "value", "hex", *_hex(struct.pack("<I", flow.index))])


def set_state(runner: Runner, maps: PmMaps, colour: int, marking: bool) -> None:
    """pm_state[0] = {colour, marking}: the colour an ingress node marks from now on."""
    if maps.state is None:
        raise PmMapError(f"program {maps.prog_id} has no pm_state map: it does not mark")
    runner(["bpftool", "map", "update", "id", str(maps.state), "key", "hex", *_hex(bytes(4)),
            "value", "hex", *_hex(struct.pack("<II", colour & 1, int(marking)))])


def _int(value: Any) -> int:
    if isinstance(value, int):
        return value
    return int.from_bytes(bytes(int(b, 16) for b in value), "little")


def parse_counters(text: str) -> dict[int, Count]:
    """``{index: Count}`` from ``bpftool -j map dump`` of pm_counters, the CPUs summed;
    index = flow * 2 + colour.  Takes BTF-formatted and raw-hex dumps; zero entries
    are left out."""
    text = text.strip()
    out: dict[int, Count] = {}
    for entry in json.loads(text) if text else []:
        if "formatted" in entry:
            key = int(entry["formatted"]["key"])
            pkts = sum(int(v["value"]["packets"]) for v in entry["formatted"]["values"])
            octets = sum(int(v["value"]["bytes"]) for v in entry["formatted"]["values"])
        else:
            key = _int(entry["key"])
            pkts = octets = 0
            for v in entry["values"]:
                raw = bytes(int(b, 16) for b in v["value"])
                p, b = struct.unpack("<QQ", raw[:16])
                pkts, octets = pkts + p, octets + b
        if pkts or octets:
            out[key] = Count(pkts, octets)
    return out


def read_counters(runner: Runner, maps: PmMaps) -> dict[int, Count]:
    """Every non-zero counter of pm_counters (see :func:`parse_counters`)."""
    return parse_counters(runner(["bpftool", "-j", "map", "dump", "id", str(maps.counters)]))


__all__ = ["MAP_NAMES", "PmMapError", "PmMaps", "Runner", "find_maps", "find_prog",
           "flow_key", "parse_counters", "read_counters", "set_flows", "set_state"]
