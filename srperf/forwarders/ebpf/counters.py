"""Counters of the eBPF proxy dataplane (srp_stats), as ``{name: packets}``.

The counter names and their order come from the ``SRP_COUNTERS`` X-macro of
``testbed/dataplanes/ebpf/srproxy.h``, so C and Python cannot drift apart.
``ebpf.sh counters`` (run on the SUT) finds the proxy through its tc
attachments and prints the per-CPU map as bpftool JSON; this module sums the
CPUs and names the entries.  Every value is a number of packets since the
proxy was loaded; a SUT without a proxy attached yields ``{}``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any, Callable

from srperf.errors import SrperfError
from srperf.util.netns import run
from srperf.resources import cfg_script, ebpf_dir

log = logging.getLogger(__name__)

HEADER = "srproxy.h"
_MACRO = re.compile(r"#define\s+SRP_COUNTERS\(X\)((?:.*\\\n)*.*)")


class CountersError(SrperfError):
    """The proxy's counters could not be read."""


@functools.lru_cache(maxsize=1)
def counter_names() -> tuple[str, ...]:
    """Counter names in map-index order, read from srproxy.h."""
    text = (ebpf_dir() / HEADER).read_text()
    match = _MACRO.search(text)
    if match is None:
        raise CountersError(f"no SRP_COUNTERS macro in {ebpf_dir() / HEADER}")
    body = re.sub(r"/\*.*?\*/", " ", match.group(1), flags=re.S)
    names = tuple(re.findall(r"X\((\w+)\)", body))
    if not names:
        raise CountersError(f"SRP_COUNTERS in {HEADER} lists no counter")
    return names


def _int(value: Any) -> int:
    """A bpftool value: an int, or a list of little-endian hex bytes."""
    if isinstance(value, int):
        return value
    return int.from_bytes(bytes(int(b, 16) for b in value), "little")


def parse_dump(text: str) -> dict[str, int]:
    """``{name: packets}`` from ``bpftool -j map dump`` of srp_stats (CPUs summed)."""
    text = text.strip()
    if not text:
        return {}
    names = counter_names()
    counts = dict.fromkeys(names, 0)
    for entry in json.loads(text):
        if "formatted" in entry:
            key = int(entry["formatted"]["key"])
            values = [v["value"] for v in entry["formatted"]["values"]]
        else:
            key = _int(entry["key"])
            values = [v["value"] for v in entry["values"]]
        if key >= len(names):
            raise CountersError(f"srp_stats key {key} beyond the {len(names)} known counters")
        counts[names[key]] = sum(_int(v) for v in values)
    return counts


Runner = Callable[[list[str]], str]
"""Runs argv on the SUT and returns its stdout (raises on failure)."""


def read_with(runner: Runner, script: str | None = None) -> dict[str, int]:
    """Counters through ``runner`` (any transport); ``script`` = path of ebpf.sh there."""
    return parse_dump(runner(["bash", script or str(cfg_script("ebpf")), "counters"]))


def read_counters(ns: str) -> dict[str, int]:
    """Counters of the proxy attached in network namespace ``ns`` ({} if none)."""
    def runner(argv: list[str]) -> str:
        res = run(argv, ns=ns, check=False)
        if not res.ok:
            raise CountersError(f"ebpf.sh counters in {ns} failed: {res.stderr.strip()}")
        return res.stdout

    return read_with(runner)


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before`` per counter (packets counted in between)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


__all__ = ["counter_names", "parse_dump", "read_counters", "read_with", "delta",
           "CountersError"]
