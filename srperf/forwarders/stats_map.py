"""A per-CPU array of packet counters named by a C X-macro, as ``{name: packets}``.

The eBPF proxy (``srp_stats``, ``SRP_COUNTERS`` in srproxy.h) and the XDP fast path
(``fp_stats``, ``FP_COUNTERS`` in xdp_fp.h) both keep their counters this way: the
X-macro gives the names in map-index order, so C and Python cannot drift apart, and
``bpftool -j map dump`` of the map gives one value per CPU, summed here.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from srperf.errors import SrperfError


class CountersError(SrperfError):
    """A dataplane's counters could not be read."""


def _int(value: Any) -> int:
    """A bpftool value: an int, or a list of little-endian hex bytes."""
    if isinstance(value, int):
        return value
    return int.from_bytes(bytes(int(b, 16) for b in value), "little")


@dataclass(frozen=True)
class StatsMap:
    """One counters map: where its names are declared and what the map is called."""

    header: Callable[[], Path]
    """The C header holding the X-macro (a function: the sources' place is looked up late)."""
    macro: str
    """The X-macro's name, e.g. ``SRP_COUNTERS``."""
    map_name: str
    """The BPF map's name, for messages."""

    def counter_names(self) -> tuple[str, ...]:
        """Counter names in map-index order, read from the header."""
        return _names(self.header(), self.macro)

    def parse_dump(self, text: str) -> dict[str, int]:
        """``{name: packets}`` from ``bpftool -j map dump`` of the map (CPUs summed);
        ``{}`` for empty text (no dataplane attached)."""
        text = text.strip()
        if not text:
            return {}
        names = self.counter_names()
        counts = dict.fromkeys(names, 0)
        for entry in json.loads(text):
            if "formatted" in entry:
                key = int(entry["formatted"]["key"])
                values = [v["value"] for v in entry["formatted"]["values"]]
            else:
                key = _int(entry["key"])
                values = [v["value"] for v in entry["values"]]
            if key >= len(names):
                raise CountersError(f"{self.map_name} key {key} beyond the {len(names)} "
                                    "known counters")
            counts[names[key]] = sum(_int(v) for v in values)
        return counts


@functools.lru_cache(maxsize=8)
def _names(header: Path, macro: str) -> tuple[str, ...]:
    text = header.read_text()
    match = re.search(rf"#define\s+{macro}\(X\)((?:.*\\\n)*.*)", text)
    if match is None:
        raise CountersError(f"no {macro} macro in {header}")
    body = re.sub(r"/\*.*?\*/", " ", match.group(1), flags=re.S)
    names = tuple(re.findall(r"X\((\w+)\)", body))
    if not names:
        raise CountersError(f"{macro} in {header.name} lists no counter")
    return names
