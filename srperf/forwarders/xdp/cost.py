"""Per-packet cost of a fast-path chain without a traffic generator: ``BPF_PROG_RUN``.

``xdp.sh prog_run`` runs the attached dispatcher (and so the whole chain, its tail
calls included) over one prebuilt frame ``repeat`` times in the kernel, each run on a
fresh copy of the frame (one ``bpftool batch``), and prints each run's verdict and
nanoseconds and the frame out; the cost per packet is the median run.  Chains can so be ranked on any host, also where the fast path outruns the
generator (whose end-to-end figure is then generator-limited).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping

from srperf.errors import SrperfError

VERDICTS = {0: "XDP_ABORTED", 1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}


class ProgRunError(SrperfError):
    """BPF_PROG_RUN of the chain failed, or no fast path is attached."""


@dataclass(frozen=True)
class ProgRun:
    """BPF_PROG_RUN of the chain: verdict, median ns per packet, frame out."""

    retval: int
    ns_per_packet: float
    repeat: int
    frame_out: bytes
    tail_calls: int

    @property
    def verdict(self) -> str:
        return VERDICTS.get(self.retval, f"verdict {self.retval}")

    @property
    def ns_per_tail_call(self) -> float | None:
        return self.ns_per_packet / self.tail_calls if self.tail_calls else None


def parse(text: str, repeat: int, tail_calls: int) -> ProgRun:
    """What ``xdp.sh prog_run`` printed (ProgRunError when it printed nothing)."""
    text = text.strip()
    if not text:
        raise ProgRunError("prog_run printed nothing: no fast path is attached")
    import statistics

    data = json.loads(text)
    runs = [r["output"] for r in data["runs"]]
    retvals = {int(r["retval"]) for r in runs}
    if len(retvals) != 1:
        raise ProgRunError(f"the runs over one frame gave different verdicts: {sorted(retvals)}")
    return ProgRun(retval=retvals.pop(),
                   ns_per_packet=float(statistics.median(int(r["duration"]) for r in runs)),
                   repeat=len(runs), frame_out=bytes.fromhex(data.get("data_out", "")),
                   tail_calls=tail_calls)


Runner = Callable[[list[str], Mapping[str, str]], str]
"""Runs argv with extra environment on the SUT, returns stdout (raises on failure)."""


def prog_run(runner: Runner, script: str, frame: bytes, repeat: int,
             tail_calls: int) -> ProgRun:
    """BPF_PROG_RUN of the attached chain over ``frame``, ``repeat`` times."""
    if not 1 <= repeat <= 20_000:
        raise ValueError(f"repeat {repeat}: 1 to 20000")
    out = runner(["bash", script, "prog_run"],
                 {"SRPERF_XDP_FRAME": frame.hex(), "SRPERF_XDP_REPEAT": str(repeat)})
    return parse(out, repeat, tail_calls)


__all__ = ["ProgRun", "ProgRunError", "prog_run", "parse", "VERDICTS"]
