"""The XDP drop sink on the tester's receive port (``linux_gen/sink.c``).

The sink drops every frame at XDP so the tester's stack never answers test
traffic, and counts the frames in a per-CPU map.  On this kernel a veth's
``rx_packets`` counts the frames its XDP program dropped (checked by
tests/test_generator.py against the map), so the generator reads
``rx_packets``; :func:`read_sink_count` is the cross-check.

Attaching native XDP to a veth also switches it to NAPI mode (a 256-slot ring).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from srperf.build import ensure_built
from srperf.errors import GeneratorError
from srperf.util.netns import run
from srperf.resources import generator_dir

log = logging.getLogger(__name__)

SINK_MAP_NAME = "sink_count"
_BPF_CFLAGS = ["-O2", "-g", "-Wall", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"]


def sink_object(slow: bool = False, probes: bool = False) -> Path:
    """Build (if needed) and return the sink's BPF object file.

    ``slow`` builds the variant that burns CPU on every frame (about 0.1-0.3 ms
    per frame): a deliberately slow consumer that tests use to overflow a veth.
    """
    src = generator_dir() / "sink.c"
    name = "sink_slow.o" if slow else "sink_probe.o" if probes else "sink.o"
    defines = ["-DSRPERF_SLOW_SINK"] if slow else ["-DSRPERF_PROBE_PASS"] if probes else []
    return ensure_built(name, [src],
                        ["clang", *_BPF_CFLAGS, *defines, "-c", str(src), "-o", "{out}"])


def sink_prog_id(ns: str, dev: str) -> int | None:
    """Id of the XDP program attached to ``dev`` in ``ns``, None if there is none."""
    out = run(["ip", "-j", "link", "show", "dev", dev], ns=ns).stdout
    data = json.loads(out)[0]
    prog = data.get("xdp", {}).get("prog")
    return int(prog["id"]) if prog else None


def attach_sink(ns: str, dev: str, slow: bool = False, probes: bool = False) -> int:
    """Attach the drop sink to ``dev`` in ``ns`` (native XDP); return the program id.

    A program already attached there is replaced.
    """
    obj = sink_object(slow, probes)
    run(["ip", "-force", "-n", ns, "link", "set", "dev", dev, "xdpdrv", "obj", str(obj),
         "sec", "xdp"])
    prog_id = sink_prog_id(ns, dev)
    if prog_id is None:
        raise GeneratorError(f"XDP sink did not attach to {ns}/{dev}")
    log.debug("XDP sink %d attached to %s/%s", prog_id, ns, dev)
    return prog_id


def detach_sink(ns: str, dev: str) -> None:
    """Remove any native XDP program from ``dev`` in ``ns`` (no error if none)."""
    run(["ip", "-n", ns, "link", "set", "dev", dev, "xdpdrv", "off"])
    log.debug("XDP detached from %s/%s", ns, dev)


def read_sink_count(ns: str, dev: str) -> int:
    """Frames the sink on ``dev`` has counted since it was attached (all CPUs)."""
    prog_id = sink_prog_id(ns, dev)
    if prog_id is None:
        raise GeneratorError(f"no XDP program on {ns}/{dev}")
    prog = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog_id)]).stdout)
    for map_id in prog.get("map_ids", []):
        info = json.loads(run(["bpftool", "-j", "map", "show", "id", str(map_id)]).stdout)
        if info.get("name") != SINK_MAP_NAME:
            continue
        entry = json.loads(run(["bpftool", "-j", "map", "lookup", "id", str(map_id),
                                "key", "0", "0", "0", "0"]).stdout)
        return sum(int(v["value"]) for v in entry["formatted"]["values"])
    raise GeneratorError(f"XDP program {prog_id} on {ns}/{dev} has no {SINK_MAP_NAME} map: "
                         "not the srperf sink")


PROBE_DROP_PREF = 37
"""Preference of the probe drop filter on the rx port's tc ingress (ours to delete)."""


def probe_drop_object() -> Path:
    """Build (if needed) and return the tc probe drop's BPF object (probe_drop.c)."""
    src = generator_dir() / "probe_drop.c"
    return ensure_built("probe_drop.o", [src],
                        ["clang", *_BPF_CFLAGS, "-c", str(src), "-o", "{out}"])


def attach_probe_drop(ns: str | None, dev: str) -> bool:
    """Drop at tc ingress of ``dev`` what the XDP sink passed up (latency probes, after
    the packet sockets saw them).  Returns True when it added the clsact qdisc (the
    caller removes it again with :func:`detach_probe_drop`)."""
    obj = probe_drop_object()
    qdiscs = json.loads(run(["tc", "-j", "qdisc", "show", "dev", dev], ns=ns).stdout or "[]")
    added = not any(q.get("kind") == "clsact" for q in qdiscs)
    if added:
        run(["tc", "qdisc", "add", "dev", dev, "clsact"], ns=ns)
    run(["tc", "filter", "replace", "dev", dev, "ingress", "pref", str(PROBE_DROP_PREF),
         "bpf", "direct-action", "obj", str(obj), "sec", "tc"], ns=ns)
    log.debug("probe drop attached to %s/%s", ns, dev)
    return added


def detach_probe_drop(ns: str | None, dev: str, remove_qdisc: bool) -> None:
    """Remove the probe drop filter from ``dev`` (and the clsact qdisc when we added it);
    no error when the device or namespace is gone."""
    run(["tc", "filter", "del", "dev", dev, "ingress", "pref", str(PROBE_DROP_PREF)],
        ns=ns, check=False)
    if remove_qdisc:
        run(["tc", "qdisc", "del", "dev", dev, "clsact"], ns=ns, check=False)
