"""How long each benchmark (``bench/*.py``) runs, said when it starts and when it ends.

A newcomer running the README's benchmark commands could not tell which end in seconds
and which run for minutes without a line of progress (issue 49).  Each benchmark prints
:func:`start_line` once its arguments are parsed and :func:`end_line` as it exits.
:data:`EXPECTED` holds the running time with the default arguments as timed here (a
shared 2-vCPU VM), with what shortens it; a benchmark not timed yet says so rather than
guess.  The lines are returned, not printed: the benchmarks print them.
"""

from __future__ import annotations

import atexit
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Expected:
    """A benchmark's running time with its default arguments, and how to shorten it."""

    time: str
    """e.g. ``about 2.5 min``; empty: not timed here yet."""
    shorter: str = ""
    """The option that shortens it and by how much (``--seeds 30: about 15 s``)."""


EXPECTED: dict[str, Expected] = {
    "capacity_noise": Expected("", "--rounds N: about N x --duration s per behavior"),
    "delay_line": Expected(""),
    "ebpf_cache": Expected("", "--repetitions 1 halves it"),
    "ebpf_end_ad": Expected("", "--repetitions 1: a third"),
    "ebpf_scaling": Expected("", "--counts 1,10: fewer VNF counts"),
    "generator": Expected("", "--rates R: one rate; --trials 1: a third"),
    "engine_agreement": Expected("about 8-13 min (6 runs of srperf run quick, 65-220 s each "
                                 "at load 15-30)", "--runs 1: one pair (2-5 min)"),
    "generator_engines": Expected("about 2.5 min (2 frames x 2 rounds x 11 rates x 2 engines,"
                                  " then 3 refining steps)",
                                  "--rounds 1: half; --frames ipv6: half; --refine 0"),
    "latency": Expected("", "--reps N: fewer repetitions"),
    "make_run": Expected("about 2-3 min (one 'make run' per mode, 50-80 s each)",
                         "--modes new: one of them"),
    "profile_nft": Expected("", "--repetitions 1: a third"),
    "queue_modes": Expected("", "--repeats 1: a third"),
    "report_speed": Expected("about 6 s (no traffic)", "--repeat 1"),
    "rest_after_overload": Expected("", "--rounds N: fewer rounds"),
    "search_b1": Expected("about 2.5 min (--seeds 300: 0.5 s per seed; the model, no "
                          "traffic)", "--seeds 30: about 15 s"),
    "search_b2": Expected("", "--repeats N: fewer repetitions"),
    "srv6pipes": Expected("", "--repeats 1: a third"),
    "startup": Expected("about 15 s (no traffic)", "--runs 1"),
    "trend_detect": Expected("about 50 s (synthetic nights, no traffic)",
                             "--seeds 2: about a fifth"),
    "trend_nights": Expected("under 4 min per chunk of nights (--nights A:B)",
                             "--nights 1:4: four nights"),
    "trend_report_speed": Expected("about 5 s (no traffic)", "--repeat 1"),
    "trial_gap": Expected("", "--rounds 1 (the default) is the shortest"),
    "vpp_vs_linux": Expected("", "--repetitions 1 halves it"),
    "xdpgen_slip": Expected("about 40-60 s (4 rounds x 2 rates x 4 sleep shares, 1 s trials)",
                            "--rounds N, --yields default: fewer trials"),
    "xdp_cost": Expected("", "--chains C: one chain; --repeat 200: a tenth of the runs"),
}
"""Benchmark (file stem) -> its running time with the defaults here; every file of
``bench/`` has an entry (a test keeps them equal)."""


def start_line(script: str) -> str:
    """``bench search_b1: expected running time about 2.5 min (...); shorter: --seeds 30:
    about 15 s``; a benchmark not timed yet says that it prints its time at the end."""
    name = Path(script).stem
    exp = EXPECTED.get(name, Expected(""))
    when = (f"expected running time {exp.time}" if exp.time else
            "running time not measured here yet: minutes if it sends traffic; it prints "
            "its wall time at the end")
    return f"bench {name}: {when}" + (f"; shorter: {exp.shorter}" if exp.shorter else "")


def end_line(script: str, started: float) -> str:
    """``bench search_b1: ran 143.2 s`` (``started``: :func:`time.monotonic` at start)."""
    return f"bench {Path(script).stem}: ran {time.monotonic() - started:.1f} s"


def announce(script: str, say: Callable[[str], None]) -> None:
    """Have ``say`` (the benchmark's ``print``) tell :func:`start_line` now and
    :func:`end_line` when the benchmark exits."""
    started = time.monotonic()
    say(start_line(script))
    atexit.register(lambda: say(end_line(script, started)))


__all__ = ["EXPECTED", "Expected", "announce", "end_line", "start_line"]
