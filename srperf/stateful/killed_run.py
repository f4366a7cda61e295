"""What ``srperf testbed unprepare`` undoes of a run killed on an SSH testbed's SUT.

A run killed with SIGKILL cannot clean up.  Its lock is left stale on the SUT (the
next claim removes the work directories it names); on the endpoint hosts its base
setup, work directories and load processes are left (:func:`srperf.stateful.
ssh_endpoints.undo_left_setup`); on the SUT its steering (in the SUT's undo journal,
:mod:`srperf.stateful.undo_journal`) and the behavior it configured.  The behavior is
removed by the testbed's forwarder's ``clean`` (``sut.forwarder``: the CFG script's
``clean`` removes every behavior it can configure), which the next run's start runs
too.
"""

from __future__ import annotations

import logging

from srperf.stateful import undo_journal
from srperf.testbeds.base import Testbed
from srperf.transports.base import Transport

log = logging.getLogger(__name__)


def killed(testbed: Testbed) -> bool:
    """Whether the testbed's lock is a stale one (its holder ended without releasing
    it: a killed run; its lock process may still run while a proxy keeps the
    connection open); ask before claiming it."""
    state = testbed.lock_state()
    return state is not None and state.holder is not None and \
        (not state.held or state.holder.dead())


def undo(testbed: Testbed, sut: Transport, was_killed: bool) -> list[str]:
    """Undo what a killed run left on the SUT and the endpoint hosts; lines saying what
    was undone where (empty: nothing was left)."""
    from srperf.stateful.ssh_endpoints import undo_left_setup

    tb = testbed.config
    lines = []
    steering = undo_journal.replay(sut, tb, "sut")
    if steering:
        lines.append(f"{sut.where}: {len(steering)} steering commands of a killed run "
                     "undone")
    if was_killed:
        from srperf.forwarders import registry as forwarders
        from srperf.testbeds.sut import SutControl

        control = SutControl(forwarders.get(tb.sut.forwarder), sut, tb)
        control.clean()
        lines.append(f"{sut.where}: behaviors of a killed run removed "
                     f"({tb.sut.forwarder} clean)")
    lines += [f"endpoint setup a killed run left undone on {where}"
              for where in undo_left_setup(tb)]
    return lines


__all__ = ["killed", "undo"]
