"""One run per testbed: a lock on the node that owns the testbed.

The lock is ``flock`` on ``/run/srperf/NAME.lock`` held by a small shell process
on that node (this host for the virtual testbed, the SUT for an SSH testbed,
reached through the node's own :class:`~srperf.transports.base.Transport`).
That process reads its stdin from srperf: when srperf ends, however it ends
(``kill -9`` included), or its SSH connection drops, the process reads
end-of-file, exits, and the kernel releases the ``flock``.  Nothing to clean up
by hand, and a new boot of the node starts with an empty ``/run``.

Beside the lock, ``NAME.json`` names the holder: its PID, host, run id, command
and start time.  A clean release removes both files; a holder that died leaves
the JSON behind, so the next taker says whose lock it took over (a warning).
A holder on this host whose PID is dead (or reused) while its lock process still
runs (a proxy that kept the connection open) is stale too: its lock process is
ended and the lock taken over.

A second run, or ``srperf testbed up|down``, on a locked testbed is refused
with :class:`TestbedBusy` (exit 2) naming the holder.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from srperf.errors import ConfigError, TransportError
from srperf.transports.base import Held, Transport

log = logging.getLogger(__name__)

LOCK_DIR = "/run/srperf"
"""Where locks (and the virtual testbed's settings record) live on a node: root's,
on a tmpfs, emptied at boot."""

EXIT_BUSY = 75
_WORKDIR = re.compile(r"^/[A-Za-z0-9._/-]*/srperf\.[A-Za-z0-9]{10}\Z")
"""A transport's ``mktemp -d`` work directory (nothing else is ever removed)."""
_ANSWER_S = 30.0
PING_EVERY_S = 5.0
"""Between two pings (a round trip) of the lock process, :meth:`TestbedLock.ensure`
only checks that its channel is open (no round trip): once per trial would add a
round trip to every trial of an SSH testbed."""
"""Longest wait for the lock process to answer (seconds)."""

# $1 lock directory, $2 lock name.  Prints "busy" + the holder's JSON (exit 75),
# "error <why>" (exit 70), or "held <its pid>" + "prev <JSON left by a holder that
# did not release>"; then "info <json>" lines rewrite the holder file ("ok"),
# "ping" answers "pong", "release" removes both files ("released"); end of stdin
# leaves them (stale).
_HOLD = r'''set -u
dir=$1 lock="$1/$2.lock" info="$1/$2.json"
umask 022
if ! { [ -d "$dir" ] || mkdir -m 0755 -- "$dir" 2>/dev/null; } || [ -L "$dir" ] \
    || [ ! -O "$dir" ]; then
  echo "error cannot use $dir as user $(id -un) (srperf needs root on this node)"; exit 70
fi
command -v flock >/dev/null 2>&1 || { echo "error flock (util-linux) is not installed"; exit 70; }
for f in "$lock" "$info"; do   # never open a FIFO (it would block) or follow a link
  if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then
    echo "error $f is not a regular file srperf made (remove it)"; exit 70
  fi
done
held=
for _ in 1 2 3 4 5; do
  exec 9>>"$lock" || { echo "error cannot open $lock"; exit 70; }
  if ! flock -n 9; then
    echo busy; head -c 4096 -- "$info" 2>/dev/null | tr -d '\n'; echo; exit 75
  fi
  if [ /dev/fd/9 -ef "$lock" ]; then held=1; break; fi
  exec 9>&-   # the file was removed by a releasing holder meanwhile: open it again
done
[ -n "$held" ] || { echo "error $lock keeps changing"; exit 70; }
echo "held $$"
echo "prev $(head -c 4096 -- "$info" 2>/dev/null | tr -d '\n')"
while IFS= read -r line; do
  case $line in
    "info "*) printf '%s\n' "${line#info }" >"$info.tmp" && mv -f -- "$info.tmp" "$info" \
                && echo ok ;;
    ping) echo pong ;;
    release) rm -f -- "$info" "$lock"; echo released; exit 0 ;;
  esac
done
'''

# $1 directory, $2 name: "free" or "busy", then the holder's JSON (may be empty);
# "refused <why>" when the lock or holder file is not a regular file (a FIFO would block).
_PROBE = r'''lock="$1/$2.lock" info="$1/$2.json"
for f in "$lock" "$info"; do
  if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then
    echo "refused $f is not a regular file srperf made (remove it)"; exit 0
  fi
done
state=free
if [ -e "$lock" ]; then
  exec 9<"$lock" && { flock -n 9 || state=busy; }
  exec 9<&-
fi
echo "$state"; head -c 4096 -- "$info" 2>/dev/null | tr -d '\n'; echo
'''

# $1 a state file srperf keeps in LOCK_DIR on a node: its text (at most 1 MiB), exit 1 when
# it is not there, exit 3 naming it when it is not a regular file (a FIFO would block).
_READ_STATE = r'''f=$1
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then
  echo "$f is not a regular file srperf made (remove it)" >&2; exit 3
fi
[ -f "$f" ] || exit 1
head -c 1048576 -- "$f"
'''
STATE_REFUSED = 3
"""Exit status of :func:`read_state_argv` when the file is there but not a regular file."""


def read_state_argv(path: str) -> list[str]:
    """The command that prints a state file srperf keeps on a node (``/run/srperf/...``)
    without following a symlink or opening a FIFO: exit 1 when it is missing,
    :data:`STATE_REFUSED` (its stderr naming it) when it is not a regular file."""
    return ["sh", "-c", _READ_STATE, "srperf-state", path]


# $1 directory, $2 name, $3 PID: end PID if it is the process holding that lock.
_END_HOLDER = r'''lock="$1/$2.lock"
[ -e "/proc/$3/fd/9" ] && [ "/proc/$3/fd/9" -ef "$lock" ] && kill "$3"
'''


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a testbed's lock."""

    pid: int
    host: str
    started: str
    command: str
    run_id: str | None = None
    boot_id: str = ""
    start_ticks: int | None = None
    lock_pid: int | None = None
    """PID of the lock process on the node."""
    workdirs: tuple[str, ...] = ()
    """Private work directories the holder made on the node (removed by whoever
    takes its lock over, should it die without removing them)."""

    @classmethod
    def me(cls, command: str, run_id: str | None = None) -> "Holder":
        pid = os.getpid()
        return cls(pid=pid, host=socket.gethostname(), command=command, run_id=run_id,
                   started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   boot_id=_boot_id(), start_ticks=_start_ticks(pid))

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        """The holder in a lock's JSON; None when empty or not srperf's."""
        try:
            data = json.loads(text)
            names = {f.name for f in dataclasses.fields(cls)}
            fields = {k: v for k, v in data.items() if k in names}
            fields["workdirs"] = tuple(str(w) for w in fields.get("workdirs", ()))
            return cls(**fields)
        except (ValueError, TypeError, AttributeError):
            return None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    def describe(self) -> str:
        run = f", run {self.run_id}" if self.run_id else ""
        return (f"srperf pid {self.pid} on {self.host} ({self.command}{run}), "
                f"since {self.started}")

    def on_this_host(self) -> bool:
        return self.host == socket.gethostname() and self.boot_id == _boot_id()

    def is_me(self) -> bool:
        return self.on_this_host() and self.pid == os.getpid() \
            and self.start_ticks == _start_ticks(os.getpid())

    def dead(self) -> bool:
        """True when it is known to have ended: on this host, its process is gone (or
        its PID belongs to another process now).  A holder elsewhere is never known
        dead here: its lock process ends with its connection."""
        return self.on_this_host() and (self.start_ticks is None
                                        or _start_ticks(self.pid) != self.start_ticks)


class TestbedBusy(ConfigError):
    """Another srperf holds the testbed (exit 2, like bad input: nothing was started)."""

    __test__ = False
    label = "testbed busy"

    def __init__(self, file: str, name: str, reason: str) -> None:
        super().__init__(file, "testbed", name, reason)


@dataclass
class LockState:
    """What :meth:`TestbedLock.state` found."""

    held: bool
    holder: Holder | None
    refused: str | None = None
    """Why the lock's files could not be read (a FIFO, a symlink in their place)."""

    def describe(self) -> str:
        if self.refused:
            return f"lock unreadable: {self.refused}"
        if self.held:
            return "locked by " + (self.holder.describe() if self.holder else "an unknown "
                                   "process (no holder file)")
        if self.holder is not None:
            return f"free (stale lock of {self.holder.describe()}, which ended)"
        return "free"


class TestbedLock:
    """The lock ``name`` in :data:`LOCK_DIR` on the node ``open_node()`` reaches.

    ``source``/``testbed`` (the testbed file and name) are for messages.
    """

    __test__ = False

    def __init__(self, open_node: Callable[[], Transport], name: str, source: str,
                 testbed: str) -> None:
        self._open_node = open_node
        self.name, self.source, self.testbed = name, source, testbed
        self._node: Transport | None = None
        self._held: Held | None = None
        self._pinged = 0.0  # monotonic time of the lock process's last answer
        self.holder: Holder | None = None

    @property
    def where(self) -> str:
        return f"{LOCK_DIR}/{self.name}.lock on {self.node.where}"

    @property
    def node(self) -> Transport:
        if self._node is None:
            self._node = self._open_node()
        return self._node

    @property
    def held(self) -> bool:
        """True while this process holds the lock."""
        return self._held is not None

    # -- taking and giving back ------------------------------------------------------
    def acquire(self, command: str, run_id: str | None = None,
                workdirs: tuple[str, ...] = ()) -> None:
        """Take the lock or raise :class:`TestbedBusy` naming the holder."""
        if self._held is not None:
            return
        me = dataclasses.replace(Holder.me(command, run_id), workdirs=workdirs)
        for attempt in range(6):
            held = self.node.hold(["bash", "-c", _HOLD, "srperf-lock", LOCK_DIR, self.name])
            first = held.readline(_ANSWER_S)
            if first.startswith("held "):
                self._took(held, me, int(first.split()[1]))
                return
            rest = held.readline(_ANSWER_S) if first == "busy" else ""
            held.close()
            if first != "busy":
                raise TransportError(f"{self.node.where}: cannot take the testbed lock "
                                     f"{LOCK_DIR}/{self.name}.lock: "
                                     f"{first.removeprefix('error ') or 'no answer'}")
            other = Holder.parse(rest)
            if other is not None and other.dead() and other.lock_pid:
                log.warning("testbed %s: the lock holder %s is dead; ending its lock "
                            "process %d on %s", self.testbed, other.describe(),
                            other.lock_pid, self.node.where)
                self.node.run(["bash", "-c", _END_HOLDER, "srperf-lock", LOCK_DIR, self.name,
                               str(other.lock_pid)], timeout=15.0)
            elif other is not None or attempt >= 3:
                raise TestbedBusy(self.source, self.testbed, self._busy_reason(other))
            time.sleep(0.2)  # a holder between taking the lock and naming itself
        raise TestbedBusy(self.source, self.testbed, self._busy_reason(None))

    def _busy_reason(self, other: Holder | None) -> str:
        who = other.describe() if other else "a process that did not name itself"
        return (f"in use by {who} ({self.where}); srperf runs one run per testbed: wait "
                "for it to end, or stop it (its SUT is cleaned when it ends)")

    def _took(self, held: Held, me: Holder, lock_pid: int) -> None:
        prev = Holder.parse(held.readline(_ANSWER_S).removeprefix("prev").strip())
        if prev is not None and prev.is_me():
            log.info("testbed %s: lock taken again after a lost connection", self.testbed)
        elif prev is not None:
            log.warning("testbed %s: took over the stale lock of %s, which ended without "
                        "releasing it", self.testbed, prev.describe())
            self._remove_workdirs(prev)
        self._held = held
        self.holder = dataclasses.replace(me, lock_pid=lock_pid)
        self._write_info()
        log.info("testbed %s locked (%s)", self.testbed, self.where)

    def _remove_workdirs(self, prev: Holder) -> None:
        dirs = [d for d in prev.workdirs if _WORKDIR.match(d) and ".." not in d]
        if not dirs:
            return
        result = self.node.run(["rm", "-rf", "--", *dirs], timeout=30.0)
        log.warning("testbed %s: removed the work directories %s it left on %s%s",
                    self.testbed, ", ".join(dirs), self.node.where,
                    "" if result.ok else f" (failed: {result.stderr.strip()})")

    def add_workdir(self, path: str) -> None:
        """Name a work directory this process made on the node in the holder file."""
        if self._held is None or self.holder is None or path in self.holder.workdirs:
            return
        self.holder = dataclasses.replace(self.holder,
                                          workdirs=(*self.holder.workdirs, path))
        self._write_info()

    def _write_info(self) -> None:
        assert self._held is not None and self.holder is not None
        self._held.send("info " + self.holder.to_json())
        answer = self._held.readline(_ANSWER_S)
        if answer != "ok":
            raise TransportError(f"{self.node.where}: cannot write the lock holder file "
                                 f"{LOCK_DIR}/{self.name}.json ({answer or 'no answer'})")

    def set_run(self, run_id: str) -> None:
        """Name the run holding the lock (once the store has given it an id)."""
        if self._held is None or self.holder is None:
            return
        self.holder = dataclasses.replace(self.holder, run_id=run_id)
        self._write_info()

    def ensure(self) -> None:
        """Still held?  After a dropped connection, reconnect and take it again (raises
        TestbedBusy when another run took it meanwhile)."""
        if self._held is None:
            return
        if self._held.alive() and time.monotonic() - self._pinged < PING_EVERY_S:
            return
        if self._answers(self._held):
            self._pinged = time.monotonic()
            return
        holder = self.holder
        assert holder is not None
        log.warning("testbed %s: the lock process on %s ended (connection lost?); taking "
                    "the lock again", self.testbed, self.node.where)
        self._held.close()
        self._held = None
        self.node.reconnect()
        self.acquire(holder.command, holder.run_id, holder.workdirs)

    @staticmethod
    def _answers(held: Held) -> bool:
        """True when the lock process answers (a round trip: an idle connection whose
        peer died looks alive until something is sent)."""
        if not held.alive():
            return False
        try:
            held.send("ping")
            return held.readline(_ANSWER_S) == "pong"
        except TransportError:
            return False

    def release(self) -> None:
        """Give the lock back (both files go); then close the node's connection."""
        held, self._held = self._held, None
        if held is not None:
            try:
                released = self._give_back(held)
            finally:
                held.close()
            if not released:  # the connection went: take it again to remove the files
                self._release_again()
            log.info("testbed %s unlocked", self.testbed)
        self.close()

    def _give_back(self, held: Held) -> bool:
        try:
            if held.alive():
                held.send("release")
                return held.readline(10.0) == "released"
        except TransportError as exc:
            log.warning("testbed %s: releasing the lock: %s", self.testbed, exc)
        return False

    def _release_again(self) -> None:
        """After a lost connection: reconnect, take the lock (its file names this
        process) and release it, so that no stale file is left."""
        holder = self.holder
        if holder is None:
            return
        try:
            self.node.reconnect()
            self.acquire(holder.command, holder.run_id)
            held, self._held = self._held, None
            if held is not None:
                try:
                    self._give_back(held)
                finally:
                    held.close()
        except (TransportError, TestbedBusy) as exc:
            log.warning("testbed %s: could not remove the lock files: %s", self.testbed, exc)

    def close(self) -> None:
        """Close the connection to the lock's node (the lock is released with it)."""
        if self._held is not None:
            self._held.close()
            self._held = None
        if self._node is not None:
            self._node.close()
            self._node = None

    # -- looking -------------------------------------------------------------------------
    def state(self) -> LockState:
        """Whether another process holds the lock, and who holds (or held) it."""
        if self._held is not None:
            return LockState(True, self.holder)
        result = self.node.run(["bash", "-c", _PROBE, "srperf-lock", LOCK_DIR, self.name],
                               timeout=15.0)
        lines = result.stdout.splitlines()
        if not result.ok or not lines:
            raise TransportError(f"{self.node.where}: cannot read the testbed lock: "
                                 f"{result.stderr.strip() or result.returncode}")
        if lines[0].startswith("refused "):
            return LockState(False, None, refused=lines[0].removeprefix("refused "))
        holder = Holder.parse(lines[1]) if len(lines) > 1 else None
        return LockState(lines[0] == "busy", holder)

    def check_free(self, action: str) -> None:
        """Raise TestbedBusy when another process holds the lock (for ``action``)."""
        state = self.state()
        if state.held and not self.held:
            raise TestbedBusy(self.source, self.testbed,
                              f"cannot {action}: " + self._busy_reason(state.holder))

    def __repr__(self) -> str:
        return f"<TestbedLock {self.name} held={self.held}>"


__all__ = ["LOCK_DIR", "Holder", "LockState", "TestbedBusy", "TestbedLock"]
