"""Load processes a killed run can leave on an endpoint host, made findable by srperf.

A stateful run's clients (iperf3 -c, wrk) run in the foreground of a command over the
transport; when srperf is killed (SIGKILL) they go on running on the host.  So each is
started through :func:`argv`: it writes its pid into the transport's work directory
and carries ``SRPERF_WORKDIR=<that directory>`` in its environment.  The reaper of a
killed run's work directories (:mod:`srperf.stateful.ssh_endpoints`) stops a process
only when its pid file is there *and* the process names the directory (command line
or that marker), never by a program's name.
"""

from __future__ import annotations

import posixpath
from typing import Sequence

MARKER = "SRPERF_WORKDIR"
"""Environment variable naming the work directory a load process belongs to."""

_WRAP = 'echo "$$" > "$1" && export SRPERF_WORKDIR="$2" && shift 2 && exec "$@"'


def pid_file(workdir: str, name: str) -> str:
    """The pid file of load process ``name`` in ``workdir``."""
    return posixpath.join(workdir, f"{name}.pid")


def argv(workdir: str, name: str, command: Sequence[str]) -> list[str]:
    """``command`` run so that its pid is in :func:`pid_file` and its environment names
    ``workdir`` (``sh -c ... exec``: the same process)."""
    return ["sh", "-c", _WRAP, "marked", pid_file(workdir, name), workdir, *command]


def shell_lines(workdir: str) -> list[str]:
    """Lines that begin a bash script whose background jobs are marked: the marker
    exported (a job started with ``&`` inherits it); each job's pid is then written with
    :func:`note_job`."""
    return [f"export {MARKER}={_quote(workdir)}"]


def note_job(workdir: str, name: str) -> str:
    """The bash line after ``cmd &`` that writes the job's pid file."""
    return f"echo $! > {_quote(pid_file(workdir, name))}"


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


__all__ = ["MARKER", "argv", "pid_file", "shell_lines", "note_job"]
