"""Shared by the PF-PLM netns tests (test_pm_accuracy.py, test_pm_kernel_nodes.py):
a runner in a namespace, and the planted drop on the link between the two nodes."""

from __future__ import annotations

import json
import struct

from srperf.pm.maps import Runner, find_prog
from srperf.util.netns import run


def runner_in(ns: str) -> Runner:
    """argv -> stdout, run in namespace ``ns`` (raises on failure)."""
    def runner(argv: list[str]) -> str:
        return run(argv, ns=ns).stdout
    return runner


def plant_drop(link_ns: str, ppm: int, dev: str = "l0") -> None:
    """The project's vnf_drop on ``dev``'s tc ingress in ``link_ns``, dropping ``ppm``
    parts per million."""
    from srperf.forwarders.ebpf.build import build_all

    obj = next(p for p in build_all() if p.name == "vnf_drop.o")
    lk = runner_in(link_ns)
    lk(["tc", "qdisc", "replace", "dev", dev, "clsact"])
    lk(["tc", "filter", "replace", "dev", dev, "ingress", "pref", "46", "handle", "1",
        "bpf", "da", "obj", str(obj), "sec", "tc"])
    prog = find_prog(lk, "vnf_drop")
    assert prog is not None
    for map_id in json.loads(lk(["bpftool", "-j", "prog", "show", "id", str(prog)]))["map_ids"]:
        if json.loads(lk(["bpftool", "-j", "map", "show", "id", str(map_id)]))["name"] \
                == "vnf_drop_cfg":
            lk(["bpftool", "map", "update", "id", str(map_id), "key", "hex", "00", "00", "00",
                "00", "value", "hex", *[f"{b:02x}" for b in struct.pack("<I", ppm)]])
            return
    raise AssertionError("vnf_drop has no vnf_drop_cfg map")
