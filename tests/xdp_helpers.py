"""Test helpers of the fast path: load a chain in a virtual testbed's SUT, run
``xdp.sh`` helpers there, and list the fast path's programs left anywhere on the host."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Iterator, Mapping

from srperf.config.model import TestbedConfig
from srperf.forwarders.base import Prepared
from srperf.forwarders.xdp.build import build_xdp
from srperf.forwarders.xdp.cost import ProgRun, parse
from srperf.forwarders.xdp.forwarder import FORWARDER, XdpOptions
from srperf.resources import cfg_script

STEP_NAMES = ("fp_dispatch", "fp_nop", "fp_end", "fp_enc", "fp_mon", "fp_fw", "fp_pass")
MAP_NAMES = ("fp_routes", "fp_progs", "fp_ctx", "fp_sids", "fp_conf", "fp_tx", "fp_stats",
             "fp_steps")
"""The object's own maps (its pm_* maps share names with other monitors' objects)."""


def env(tb: TestbedConfig, options: XdpOptions, behavior: str | None = None
        ) -> dict[str, str]:
    obj = build_xdp()
    prepared = Prepared(env={"SRPERF_XDP_OBJ": str(obj), "SRPERF_XDP_DIR": str(obj.parent)})
    out = FORWARDER.env(tb, options, prepared)
    if behavior is not None:
        out.update(FORWARDER.behavior_env(tb, options, behavior))
    return out


def script(tb: TestbedConfig, fn: str, variables: Mapping[str, str]
           ) -> subprocess.CompletedProcess:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("SRPERF_")}
    return subprocess.run(["ip", "netns", "exec", tb.sut_ns, "bash", str(cfg_script("xdp")),
                           fn], env={**base, **variables}, capture_output=True, text=True,
                          timeout=120)


def load(tb: TestbedConfig, behavior: str, **options: object) -> XdpOptions:
    opts = XdpOptions(**options)  # type: ignore[arg-type]
    res = script(tb, "xdp_chain", env(tb, opts, behavior))
    assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), res.stderr
    return opts


def clean(tb: TestbedConfig) -> None:
    res = script(tb, "clean", {})
    assert res.returncode == 0, res.stderr


def testbed_up(tb: TestbedConfig) -> Iterator[object]:
    """A module fixture's body: ``tb``'s virtual testbed up for the tests, then the xdp
    script's clean and the testbed down, whatever the tests did."""
    from srperf.testbeds.virtual import VirtualTestbed

    vt = VirtualTestbed(tb)
    try:
        vt.up()
        yield vt
    finally:
        try:
            script(tb, "clean", {})
        finally:
            vt.down()


def clean_sut(tb: TestbedConfig) -> Iterator[TestbedConfig]:
    """A test fixture's body: ``tb`` for the test, then clean, and nothing of the fast
    path left under its prefix."""
    yield tb
    clean(tb)
    assert not wait_no_leftovers(tb.prefix), leftovers(tb.prefix)


def prog_run(tb: TestbedConfig, frame: bytes, repeat: int = 1, tail_calls: int = 0) -> ProgRun:
    res = script(tb, "prog_run", {"SRPERF_XDP_FRAME": frame.hex(),
                                  "SRPERF_XDP_REPEAT": str(repeat)})
    assert res.returncode == 0, res.stderr
    return parse(res.stdout, repeat, tail_calls)


def counters(tb: TestbedConfig) -> dict[str, int]:
    from srperf.forwarders.xdp.counters import parse_dump

    res = script(tb, "counters", {})
    assert res.returncode == 0, res.stderr
    return parse_dump(res.stdout)


def flow_counts(tb: TestbedConfig) -> dict[int, int]:
    """pm_counters index -> packets (CPUs summed), the non-zero ones."""
    res = script(tb, "flows", {})
    assert res.returncode == 0, res.stderr
    out: dict[int, int] = {}
    for entry in json.loads(res.stdout or "[]"):
        key = int(entry["formatted"]["key"]) if "formatted" in entry else \
            int.from_bytes(bytes(int(b, 16) for b in entry["key"]), "little")
        values = entry["formatted"]["values"] if "formatted" in entry else entry["values"]
        packets = sum(int(v["value"]["packets"]) for v in values)
        if packets:
            out[key] = packets
    return out


def _loaded() -> tuple[list[dict], list[dict]]:
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                                      text=True, check=True).stdout or "[]")
    maps = json.loads(subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                                     text=True, check=True).stdout or "[]")
    return ([p for p in progs if p.get("name") in STEP_NAMES],
            [m for m in maps if m.get("name") in MAP_NAMES])


_BEFORE = {(kind, o["id"]) for kind, objs in zip(("prog", "map"), _loaded()) for o in objs}
"""The fast path's objects already loaded when the tests started (not theirs to clean)."""


def leftovers(prefix: str = "x45") -> list[str]:
    """The fast path's programs and maps loaded on this host since the tests started,
    and the holders and PID files of namespaces ``prefix*``."""
    progs, maps = _loaded()
    found = [f"prog {p.get('name')} id {p['id']}" for p in progs
             if ("prog", p["id"]) not in _BEFORE]
    found += [f"map {m.get('name')} id {m['id']}" for m in maps
              if ("map", m["id"]) not in _BEFORE]
    ps = subprocess.run(["pgrep", "-f", f"^srperf-xdp-hold .*/run/netns/{prefix}"],
                        capture_output=True, text=True)
    found += [f"holder {pid}" for pid in ps.stdout.split()]
    found += [f"pid file {p}" for p in sorted(Path("/run").glob(f"srperf-xdp-{prefix}*.pid"))]
    return found


def wait_no_leftovers(prefix: str = "x45", timeout_s: float = 10.0) -> list[str]:
    """:func:`leftovers`, polled: the kernel frees programs and maps shortly after their
    last reference goes."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = leftovers(prefix)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)
