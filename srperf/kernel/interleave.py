"""One experiment on several testbeds (kernel targets), repetitions interleaved.

Repetition 1 runs on every testbed in the order given, then repetition 2, and so on
(of each packet size), so that a slow drift of the host (another job, thermal, the
VM's neighbours) hits every kernel alike, as the orchestrator already interleaves
behaviors within a run.  Each testbed gets its own run (its own run id, environment
with the kernel's name, SHA-256 and ``uname -r``, and summary): the runs are
compared with ``srperf compare`` (:mod:`srperf.results.kernel_compare`).  Every run
of the group records the group in its recipe (``interleaved``: the group's id, its
testbed files in order).

Guests stay booted between their turns (idle).  Measured here (2 vCPUs, TCG, a
loaded host): the idle 6.1 guest used 0.5 % of a CPU over 47 s and the idle 6.12
guest 0.4 % over 10 s while the other measured (:attr:`Turn.idle_cpu_share`, printed
with each run's summary), where booting them took 11.0 and 16.2 s, plus the base
setup and each behavior's configuration again: booting per repetition would cost
more time and load the host more than an idle guest does.

A run that fails (its guest does not boot, its console dies) ends alone: the
orchestrator records it failed, keeps its finished trials and removes what it made;
the other kernels go on.  On Ctrl-C (or SIGTERM) the interrupt is passed to every run
still open, each of which cleans its SUT, stops its guest and removes its taps and
namespace before the interrupt goes on up.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Sequence

log = logging.getLogger(__name__)

Steps = Generator[int, None, Any]
"""What :meth:`srperf.measure.orchestrator.Orchestrator.steps` returns."""


@dataclass
class Turn:
    """One testbed's run in an interleaved group, as it ended."""

    testbed: str
    """The testbed's name."""
    report: Any = None
    """The orchestrator's RunReport (also for a failed run that had begun), else None."""
    error: BaseException | None = None
    """Why the run ended early (None: it finished)."""
    repetitions_done: int = 0
    idle_cpu_s: float = 0.0
    """CPU time (s) the testbed's SUT process used while other testbeds measured."""
    idle_wall_s: float = 0.0
    """Wall time (s) it waited while other testbeds measured."""

    @property
    def run_id(self) -> str | None:
        return getattr(self.report, "run_id", None)

    @property
    def idle_cpu_share(self) -> float | None:
        """Fraction of one CPU its SUT used while idle (None: not measured)."""
        return self.idle_cpu_s / self.idle_wall_s if self.idle_wall_s > 0 else None


@dataclass
class Participant:
    """A run taking part: its name, its steps and how to read its SUT's CPU time."""

    name: str
    steps: Callable[[], Steps]
    report: Callable[[], Any] = lambda: None
    """The run's report once it has begun (the orchestrator's ``report``)."""
    sut_cpu_s: Callable[[], float | None] = lambda: None
    """CPU seconds the SUT's process has used so far (None: no such process)."""
    turn: Turn = field(init=False)

    def __post_init__(self) -> None:
        self.turn = Turn(self.name)


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` (None: gone or not given)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields_ = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")


def run_interleaved(participants: Sequence[Participant],
                    say: Callable[[str], None] = lambda s: None) -> list[Turn]:
    """Advance every participant's run one repetition at a time, in turn, until all
    have ended; one that fails is recorded and left out, the others go on.  An
    interrupt (KeyboardInterrupt) is thrown into every run still open, then re-raised."""
    gens: dict[int, Steps] = {}
    live = list(range(len(participants)))
    try:
        while live:
            for i in list(live):
                p = participants[i]
                before = _idle_marks(participants, live, i)
                if i not in gens:
                    gens[i] = p.steps()
                gen = gens[i]
                try:
                    p.turn.repetitions_done = next(gen)
                except StopIteration as done:
                    p.turn.report = done.value
                    live.remove(i)
                except Exception as exc:  # noqa: BLE001 - this kernel ends, not the others
                    p.turn.error, p.turn.report = exc, p.report()
                    live.remove(i)
                    others = [participants[j].name for j in live]
                    say(f"{p.name}: failed ({exc}); its finished trials are kept"
                        + (f"; going on with {', '.join(others)}" if others else ""))
                finally:
                    _add_idle(participants, before)
    except BaseException as exc:
        _throw_into(participants, gens, live, exc)
        raise
    for p in participants:
        share = p.turn.idle_cpu_share
        if share is not None:
            log.info("%s: idle while the others measured: %.1f %% of a CPU over %.0f s",
                     p.name, 100 * share, p.turn.idle_wall_s)
    return [p.turn for p in participants]


def _idle_marks(participants: Sequence[Participant], live: list[int],
                busy: int) -> dict[int, tuple[float, float]]:
    """(monotonic s, SUT CPU s) now of every live participant but ``busy``."""
    marks = {}
    for j in live:
        if j != busy:
            cpu = participants[j].sut_cpu_s()
            if cpu is not None:
                marks[j] = (time.monotonic(), cpu)
    return marks


def _add_idle(participants: Sequence[Participant],
              marks: dict[int, tuple[float, float]]) -> None:
    for j, (t0, c0) in marks.items():
        cpu = participants[j].sut_cpu_s()
        if cpu is not None and cpu >= c0:
            participants[j].turn.idle_cpu_s += cpu - c0
            participants[j].turn.idle_wall_s += time.monotonic() - t0


def _throw_into(participants: Sequence[Participant], gens: dict[int, Steps],
                live: list[int], exc: BaseException) -> None:
    """End every run still open as ``exc`` would have ended it (each cleans up)."""
    for i in live:
        gen = gens.get(i)
        if gen is None:
            continue      # never started: nothing made
        try:
            gen.throw(exc)
        except StopIteration as done:
            participants[i].turn.report = done.value
        except BaseException as other:   # noqa: BLE001 - the first interrupt goes on up
            participants[i].turn.error = other
            participants[i].turn.report = participants[i].report()
            if other is not exc:
                log.error("%s: ending it after %s: %s", participants[i].name,
                          type(exc).__name__, other)


__all__ = ["Participant", "Turn", "run_interleaved", "process_cpu_s"]
