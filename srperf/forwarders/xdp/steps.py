"""Per-step statistics of the fast path: ``fp_steps`` (xdp_fp.c), read by ``xdp.sh steps``.

The kernel's BPF statistics (``kernel.bpf_stats_enabled``) count only the dispatcher:
a tail-called program runs inside its caller's accounting.  So the programs count
themselves, when the chain asks for it (``options.step_stats``, written into the
chain's ``fp_chain.flags``): ``count`` adds one to the step's slot of the per-CPU
``fp_steps`` at its end, ``time`` also adds the nanoseconds since the previous step
ended (``bpf_ktime_get_ns``, which itself costs some 20-40 ns per step, so the
chain timed is slower than the chain untimed).  Off (the default), a step pays one
load and a branch.  Slots are program ids (``FP_PROGS``); slot ``FP_MAX_PROGS`` is the
dispatcher (runs only: its own time is the kernel statistics' minus the steps').
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from srperf.forwarders.stats_map import CountersError, _int
from srperf.profile.model import Profile, ProgramCost
from srperf.profile.sources import ProfileSource
from srperf.results.costs import StepCost
from srperf.transports.base import Transport

MODES = {"off": 0, "count": 1, "time": 3}
"""options.step_stats -> fp_chain.flags (FP_F_COUNT = 1, FP_F_TIME = 2 in xdp_fp.h)."""
DISPATCHER = "fp_dispatch"
SLOT_DISPATCH = 8
"""FP_SLOT_DISPATCH = FP_MAX_PROGS of xdp_fp.h."""

Stats = dict[str, tuple[int, int]]
"""program name -> (runs, ns), CPUs summed."""


def slot_names() -> dict[int, str]:
    """fp_steps slot -> program name (``fp_<step>``, the dispatcher's slot last)."""
    from srperf.forwarders.xdp.programs import program_ids

    return {**{slot: f"fp_{name}" for name, slot in program_ids().items()},
            SLOT_DISPATCH: DISPATCHER}


def _value(v: Any) -> tuple[int, int]:
    if isinstance(v, dict):
        return int(v.get("runs", 0)), int(v.get("ns", 0))
    raw = bytes(int(b, 16) for b in v)   # no BTF: 16 bytes, runs then ns
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")


def parse_steps(text: str) -> Stats:
    """``bpftool -j map dump`` of fp_steps as ``{program: (runs, ns)}`` (CPUs summed,
    slots never run left out); ``{}`` for empty text (no fast path attached)."""
    text = text.strip()
    if not text:
        return {}
    names = slot_names()
    out: Stats = {}
    for entry in json.loads(text):
        if "formatted" in entry:
            key = int(entry["formatted"]["key"])
            values = [v["value"] for v in entry["formatted"]["values"]]
        else:
            key = _int(entry["key"])
            values = [v["value"] for v in entry["values"]]
        runs = ns = 0
        for v in values:
            r, n = _value(v)
            runs, ns = runs + r, ns + n
        if not runs:
            continue   # a slot no program has (FP_MAX_PROGS > programs), or never run
        if key not in names:
            raise CountersError(f"fp_steps key {key}: runs in a slot no program has")
        out[names[key]] = (runs, ns)
    return out


def delta(before: Stats, after: Stats) -> Stats:
    """What ran between two readings (programs with runs only)."""
    out: Stats = {}
    for name, (runs, ns) in after.items():
        r0, n0 = before.get(name, (0, 0))
        if runs - r0:
            out[name] = (runs - r0, ns - n0)
    return out


def step_costs(stats: Stats, mode: str) -> tuple[StepCost, ...]:
    """``stats`` as StepCosts of the step programs (ns None unless ``mode`` is time);
    the dispatcher's slot is left out: its runs are the kernel statistics' own."""
    return tuple(StepCost(name, runs, ns if mode == "time" else None)
                 for name, (runs, ns) in stats.items() if name != DISPATCHER)


def read_steps(sut: Transport, script: str, env: Mapping[str, str]) -> Stats:
    res = sut.run(["bash", script, "steps"], env=dict(env), timeout=30.0)
    if not res.ok:
        raise CountersError(f"xdp.sh steps on {sut.where} failed: "
                            f"{(res.stderr or res.stdout).strip()}")
    return parse_steps(res.stdout)


class FastPathSteps(ProfileSource):
    """The steps' own runs (and ns) during the profile trial, beside the dispatcher's
    ``BpfPrograms`` figure: ``ProgramCost`` entries named ``step fp_<program>``
    (``prog_id`` 0; no ns when only counted)."""

    name = "xdp-steps"

    def __init__(self, node: Transport, script: str, env: Mapping[str, str],
                 mode: str) -> None:
        self.node, self.script, self.env, self.mode = node, script, dict(env), mode
        self._before: Stats = {}
        self._why = ""

    def start(self) -> None:
        self._why = ""
        if self.mode == "off":
            self._why = ("per-step runs not counted (the fast path's options.step_stats "
                         "is off; the kernel's BPF statistics count only the dispatcher)")
            return
        try:
            self._before = read_steps(self.node, self.script, self.env)
        except (CountersError, ValueError) as exc:
            self._why = f"per-step statistics not read: {exc}"

    def stop(self, profile: Profile) -> None:
        if self._why:
            profile.notes.append(self._why)
            return
        try:
            ran = delta(self._before, read_steps(self.node, self.script, self.env))
        except (CountersError, ValueError) as exc:
            profile.notes.append(f"per-step statistics not read: {exc}")
            return
        for step in step_costs(ran, self.mode):
            profile.programs.append(ProgramCost(f"step {step.program}", 0, step.runs,
                                                step.ns or 0, timed=step.ns is not None))


__all__ = ["MODES", "parse_steps", "delta", "step_costs", "read_steps", "FastPathSteps",
           "slot_names"]
