"""What a stateful run changes on an SSH node, written down there before it is changed.

The steering of a stateful run (:mod:`srperf.stateful.steering`: SRv6 routes on the
client, the server and the SUT, End.DT6 tables, the client's ``srh_carry`` program,
the caching proxy's reverse program on the SUT) is undone by the run itself.  A run
killed with SIGKILL cannot: so each undo command is appended to a journal on the node
it belongs to *before* the change is made, and the journal is emptied when the change
is undone.  ``srperf testbed unprepare`` and the next stateful run's start replay what
a journal still holds (last first, failures ignored: an undo whose change never
happened fails harmlessly) and remove it.

One journal per testbed and role, under the lock directory of the node
(``/run/srperf/steering-<testbed>-<role>.undo``, a tmpfs emptied at boot), one JSON
argv per line.  Only SSH nodes keep one: a virtual testbed's namespaces are rebuilt
by its next ``up``.
"""

from __future__ import annotations

import json
import logging
import posixpath
from typing import Sequence

from srperf.config.model import TestbedConfig
from srperf.testbeds.lock import LOCK_DIR
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

ROLES = ("sut", "client", "server")

_APPEND = 'mkdir -p "$(dirname "$1")" && printf "%s\\n" "$2" >> "$1"'


def journal_path(tb: TestbedConfig, role: str) -> str:
    """The journal of node ``role`` of testbed ``tb`` (on that node)."""
    from srperf.drivers.trex_server import file_key

    return posixpath.join(LOCK_DIR, f"steering-{file_key(tb.name)}-{role}.undo")


def note(node: Transport, tb: TestbedConfig, role: str, undo: Sequence[str]) -> None:
    """Append ``undo`` to the node's journal (raises when it cannot be written: the
    change must not be made without it)."""
    node.check(["sh", "-c", _APPEND, "note", journal_path(tb, role), json.dumps(list(undo))],
               timeout=30.0)


def clear(node: Transport, tb: TestbedConfig, role: str) -> None:
    """Remove the node's journal (its changes are undone)."""
    node.run(["rm", "-f", journal_path(tb, role)], timeout=30.0)


def replay(node: Transport, tb: TestbedConfig, role: str) -> list[str]:
    """Run what the node's journal holds, last first, and remove it; the commands run
    (empty: no journal)."""
    from srperf.testbeds.lock import STATE_REFUSED, read_state_argv

    path = journal_path(tb, role)
    res = node.run(read_state_argv(path), timeout=30.0)
    if res.returncode == STATE_REFUSED:
        log.warning("%s: %s: journal not replayed", node.where, res.stderr.strip())
    if not res.ok:
        return []
    done = []
    for line in reversed(res.stdout.splitlines()):
        try:
            argv = json.loads(line)
        except ValueError:
            log.warning("%s: %s: not a command: %r", node.where, path, line[:200])
            continue
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            log.warning("%s: %s: not a command: %r", node.where, path, line[:200])
            continue
        out = node.run(argv, timeout=30.0)
        log.debug("%s: undo %s: exit %s", node.where, " ".join(argv), out.returncode)
        done.append(" ".join(argv))
    clear(node, tb, role)
    return done


__all__ = ["journal_path", "note", "clear", "replay", "ROLES"]
