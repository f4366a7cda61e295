"""One provisioning step: a check that says whether it is done, and the commands that do it.

A step is idempotent by construction: :attr:`Step.check` runs first on the node
and exit status 0 means "already there"; only otherwise are :attr:`Step.apply`
commands run, in order, and the check is run again to confirm.  Steps are plain
data so that ``--dry-run`` can print every command without touching a node.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Role(str, enum.Enum):
    """Which node of a testbed a step runs on."""

    TESTER = "tester"
    SUT = "sut"


@dataclass(frozen=True)
class Step:
    """An idempotent provisioning step for one node.

    Commands are shell command lines (run with ``bash -c`` on the node, as root).
    """

    name: str
    """Short label shown in the report, e.g. ``"sut: SRNK kernel"``."""
    role: Role
    check: str
    """Exits 0 when the step is already done; must change nothing."""
    apply: tuple[str, ...]
    """Run in order when :attr:`check` fails; each must exit 0."""
    timeout_s: float = 600.0
    """Limit for each command of the step, in seconds."""
    why: str = ""
    """One line saying what the step is for (shown by ``--dry-run``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for the step's commands (no secrets: it is printed)."""
    applies: str = ""
    """Exits 0 when the step applies to this node (e.g. it has cpufreq); empty: always.
    A step that does not apply is reported as such, never as done."""
    reboot: bool = False
    """The step takes effect only after a reboot (the kernel command line): once its
    commands ran, a still-failing check is reported ``reboot needed``, not failed."""


class Outcome(str, enum.Enum):
    """What running a step did."""

    DONE = "done"
    ALREADY = "already there"
    FAILED = "failed"
    NOT_APPLICABLE = "not applicable"
    PLANNED = "planned"  # dry run
    REBOOT = "done, takes effect after a reboot"
