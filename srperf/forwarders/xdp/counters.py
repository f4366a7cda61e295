"""Counters of the fast path (fp_stats in xdp_fp.c), as ``{name: packets}``.

Names and order come from the ``FP_COUNTERS`` X-macro of
``testbed/dataplanes/xdp/xdp_fp.h``.  ``xdp.sh counters`` prints the per-CPU map as
bpftool JSON (nothing when no fast path is attached); this module sums the CPUs.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from srperf.errors import SrperfError
from srperf.resources import xdp_dir

HEADER = "xdp_fp.h"
_MACRO = re.compile(r"#define\s+FP_COUNTERS\(X\)((?:.*\\\n)*.*)")


class CountersError(SrperfError):
    """The fast path's counters could not be read."""


@functools.lru_cache(maxsize=1)
def counter_names() -> tuple[str, ...]:
    """Counter names in fp_stats index order, read from xdp_fp.h."""
    text = (xdp_dir() / HEADER).read_text()
    match = _MACRO.search(text)
    if match is None:
        raise CountersError(f"no FP_COUNTERS macro in {xdp_dir() / HEADER}")
    body = re.sub(r"/\*.*?\*/", " ", match.group(1), flags=re.S)
    names = tuple(re.findall(r"X\((\w+)\)", body))
    if not names:
        raise CountersError(f"FP_COUNTERS in {HEADER} lists no counter")
    return names


def _int(value: Any) -> int:
    if isinstance(value, int):
        return value
    return int.from_bytes(bytes(int(b, 16) for b in value), "little")


def parse_dump(text: str) -> dict[str, int]:
    """``{name: packets}`` from ``bpftool -j map dump`` of fp_stats (CPUs summed)."""
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
            raise CountersError(f"fp_stats key {key} beyond the {len(names)} known counters")
        counts[names[key]] = sum(_int(v) for v in values)
    return counts


__all__ = ["counter_names", "parse_dump", "CountersError"]
