"""Per-packet cost of a fast-path chain without a traffic generator: ``BPF_PROG_RUN``.

``xdp.sh prog_run`` runs the attached dispatcher (and so the whole chain, its tail
calls included) over one prebuilt frame ``repeat`` times in the kernel, each run on a
fresh copy of the frame (one ``bpftool batch``), and prints each run's verdict and
nanoseconds and the frame out; the cost per packet is the median run.  Chains can so be ranked on any
host, also where the fast path outruns the generator (whose end-to-end figure is then
generator-limited).  :func:`chain_cost` is what ``srperf run`` stores after each
chain's verification (``options.cost``; the ``costs`` table, srperf.results.costs).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from srperf.errors import SrperfError

log = logging.getLogger(__name__)

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
    ns_min: float = 0.0
    """The fastest run (the least disturbed by the rest of the host)."""
    ns_p90: float = 0.0

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
    durations = [int(r["duration"]) for r in runs]
    from srperf.results.costs import percentile

    return ProgRun(retval=retvals.pop(), ns_min=float(min(durations)),
                   ns_p90=float(percentile([float(d) for d in durations], 0.9)),
                   ns_per_packet=float(statistics.median(durations)),
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


def chain_cost(sut: Any, script: str, env: Mapping[str, str], behavior: str,
               frame: bytes, repeat: int, step_stats: str = "off") -> Any:
    """The attached chain's :class:`srperf.results.costs.PacketCost` over ``frame``
    (``repeat`` single runs; the per-step statistics' share of them when
    ``step_stats`` is on).  A failure is a PacketCost of status failed saying why."""
    from srperf.behaviors import fastpath
    from srperf.forwarders.stats_map import CountersError
    from srperf.forwarders.xdp import steps as fp_steps
    from srperf.results.costs import METHOD_PROG_RUN, PacketCost

    def runner(argv: list[str], extra: Mapping[str, str]) -> str:
        res = sut.run(argv, env={**env, **extra}, timeout=300.0)
        if not res.ok:
            raise ProgRunError(f"{' '.join(argv)}: {(res.stderr or res.stdout).strip()}")
        return str(res.stdout)

    calls = len(fastpath.parse_chain(behavior))
    try:
        before = fp_steps.read_steps(sut, script, env) if step_stats != "off" else {}
        run = prog_run(runner, script, frame, repeat, calls)
        ran = fp_steps.delta(before, fp_steps.read_steps(sut, script, env)) \
            if step_stats != "off" else {}
    except (ProgRunError, CountersError, ValueError, KeyError) as exc:
        log.warning("%s: per-packet cost not measured: %s", behavior, exc)
        return PacketCost(METHOD_PROG_RUN, "failed", note=str(exc), frame_bytes=len(frame),
                          step_stats=step_stats)
    return PacketCost(METHOD_PROG_RUN, "ok", runs=run.repeat, verdict=run.verdict,
                      ns_per_packet=run.ns_per_packet, ns_min=run.ns_min,
                      ns_p90=run.ns_p90, programs=calls + 1, tail_calls=calls,
                      frame_bytes=len(frame), step_stats=step_stats,
                      steps=fp_steps.step_costs(ran, step_stats))


def measure_chains(control: "object", behaviors: list[str], size: int = 64,
                   repeat: int = 2000) -> dict[str, ProgRun]:
    """Each chain of ``behaviors`` configured through ``control`` (a
    :class:`srperf.testbeds.sut.SutControl` of the xdp forwarder) and run ``repeat``
    times over its own 64-byte test frame; the SUT is cleaned afterwards."""
    from srperf.behaviors import catalogue, fastpath

    out: dict[str, ProgRun] = {}

    def runner(argv: list[str], extra: Mapping[str, str]) -> str:
        res = control.transport.run(argv, env={**control.env, **extra}, timeout=300.0)
        if not res.ok:
            raise ProgRunError(f"{' '.join(argv)}: {(res.stderr or res.stdout).strip()}")
        return res.stdout

    try:
        for name in behaviors:
            behavior = catalogue.get(name)
            control.apply(behavior.cfg_function, name)
            frame = bytes(behavior.frame_builder(control.tb, size))
            out[name] = prog_run(runner, control.script, frame, repeat,
                                 len(fastpath.parse_chain(name)))
    finally:
        control.clean()
    return out


__all__ = ["ProgRun", "ProgRunError", "prog_run", "parse", "measure_chains", "chain_cost",
           "VERDICTS"]
