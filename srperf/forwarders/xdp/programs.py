"""The fast path's step programs and their fp_progs slots, read from ``FP_PROGS`` in
``testbed/dataplanes/xdp/xdp_fp.h`` (so C and Python cannot drift apart)."""

from __future__ import annotations

import functools
import re

from srperf.behaviors import fastpath
from srperf.resources import xdp_dir

HEADER = "xdp_fp.h"


@functools.lru_cache(maxsize=1)
def program_ids() -> dict[str, int]:
    """Step program -> its fp_progs slot, read from FP_PROGS in xdp_fp.h."""
    text = (xdp_dir() / HEADER).read_text()
    match = re.search(r"#define\s+FP_PROGS\(X\)(.*)", text)
    if match is None:
        raise ValueError(f"no FP_PROGS macro in {xdp_dir() / HEADER}")
    ids = {name: int(num) for name, num in re.findall(r"X\((\w+),\s*(\d+)\)", match.group(1))}
    if set(ids) != set(fastpath.PROGRAMS):
        raise ValueError(f"FP_PROGS in {HEADER} lists {sorted(ids)}, the catalogue "
                         f"{sorted(fastpath.PROGRAMS)}")
    return ids


__all__ = ["program_ids", "HEADER"]
