"""Run provisioning steps on a node, or only check them, and report each one.

For every step: ``applies`` (if any) decides whether the node can have it;
``check`` says whether it is there; only then are the ``apply`` commands run,
and ``check`` must pass afterwards.  Nothing is retried or hidden: a failed
command stops that step (the others still run) and its output is reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from srperf.provision.steps import Outcome, Step
from srperf.transports.base import Transport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepReport:
    """What happened to one step."""

    step: Step
    outcome: Outcome
    command: str = ""
    """The command that failed (or, for a check, the check)."""
    output: str = ""
    """Its output (stdout and stderr), for a failure or a difference."""


def _bash(node: Transport, command: str, step: Step) -> tuple[bool, str]:
    r = node.run(["bash", "-c", command], env=step.env or None, timeout=step.timeout_s)
    return r.ok, (r.stdout + r.stderr).strip()


def provision(node: Transport, steps: Sequence[Step], dry_run: bool = False
              ) -> list[StepReport]:
    """Bring each step about on ``node`` (``dry_run``: touch nothing, plan only)."""
    reports = []
    for step in steps:
        if dry_run:
            reports.append(StepReport(step, Outcome.PLANNED))
            continue
        reports.append(_one(node, step))
        log.info("%s: %s", step.name, reports[-1].outcome.value)
    return reports


def _one(node: Transport, step: Step) -> StepReport:
    if step.applies:
        ok, out = _bash(node, step.applies, step)
        if not ok:
            return StepReport(step, Outcome.NOT_APPLICABLE, step.applies, out)
    ok, _ = _bash(node, step.check, step)
    if ok:
        return StepReport(step, Outcome.ALREADY)
    for command in step.apply:
        ok, out = _bash(node, command, step)
        if not ok:
            return StepReport(step, Outcome.FAILED, command, out)
    ok, out = _bash(node, step.check, step)
    if not ok and step.reboot:
        return StepReport(step, Outcome.REBOOT, step.check, out)
    if not ok:
        return StepReport(step, Outcome.FAILED, step.check,
                          out or "the check still fails after the step's commands")
    return StepReport(step, Outcome.DONE)


def check(node: Transport, steps: Sequence[Step]) -> list[StepReport]:
    """Only run the checks: ALREADY where the node is as described, FAILED (a
    difference, with the check's output) where it is not."""
    reports = []
    for step in steps:
        if step.applies and not _bash(node, step.applies, step)[0]:
            reports.append(StepReport(step, Outcome.NOT_APPLICABLE, step.applies))
            continue
        ok, out = _bash(node, step.check, step)
        reports.append(StepReport(step, Outcome.ALREADY if ok else Outcome.FAILED,
                                  step.check, out))
    return reports


__all__ = ["StepReport", "check", "provision"]
