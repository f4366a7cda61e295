"""Emulated figures are never passed off as native ones.

A run on a kernel target under QEMU's software emulation (TCG) stores
``environment.execution = {"mode": "emulated", "how": "QEMU tcg"}``
(:mod:`srperf.testbeds.kernel_vm`); every other run is ``native`` (a run stored
before this key existed was native: srperf had no emulated SUT).  Such figures
rank behaviors but are not the kernel's cost per packet (the emulated vCPU is the
bottleneck), so:

* :func:`check_comparable`: ``srperf compare`` refuses to judge an emulated run
  against a native one (either way);
* :func:`accept_baseline`: ``nightly`` takes as a baseline only a run of the same
  mode as the run it judges;
* :func:`label`: reports show the mode beside the run.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from srperf.errors import SrperfError

EMULATED, NATIVE = "emulated", "native"


class NotComparable(SrperfError):
    """Two runs that must not be judged against each other (emulated against native)."""


def mode(environment: Mapping[str, Any] | None) -> str:
    """``emulated`` or ``native``, from a run's stored environment."""
    execution = (environment or {}).get("execution")
    if isinstance(execution, Mapping) and execution.get("mode") == EMULATED:
        return EMULATED
    return NATIVE


def how(environment: Mapping[str, Any] | None) -> str:
    """How the run executed, in words (``QEMU tcg``), empty for a native run."""
    execution = (environment or {}).get("execution")
    return str(execution.get("how", "")) if isinstance(execution, Mapping) else ""


def run_mode(store: Any, run_id: str) -> str:
    """The mode of stored run ``run_id`` (native when the store does not know it)."""
    row = store.run_row(run_id)
    return mode(row["environment"] if row else None)


def label(environment: Mapping[str, Any] | None) -> str:
    """``EMULATED (QEMU tcg)`` for an emulated run, else empty."""
    if mode(environment) != EMULATED:
        return ""
    return f"EMULATED ({how(environment) or 'software emulation'})"


def check_comparable(baseline_store: Any, baseline: str, store: Any, current: str) -> None:
    """Raise NotComparable when one run is emulated and the other native."""
    a, b = run_mode(baseline_store, baseline), run_mode(store, current)
    if a != b:
        raise NotComparable(
            f"run {baseline} is {a} and run {current} is {b}: srperf does not judge an "
            "emulated SUT's figures against a native one's (under TCG the emulated vCPU, "
            "not the kernel, sets the rate); compare runs of the same kind")


def accept_baseline(store: Any, wanted: str) -> Callable[[str], bool]:
    """A predicate over candidate baseline run ids in ``store``: only runs of mode
    ``wanted`` (the mode of the run to be judged)."""
    return lambda run_id: run_mode(store, run_id) == wanted


__all__ = ["EMULATED", "NATIVE", "NotComparable", "mode", "how", "run_mode", "label",
           "check_comparable", "accept_baseline"]
