"""A run's life outside its measurements: taking a dead run back, its temporary files.

The orchestrator plans and measures; this module holds what lets a run survive
its process: :func:`reclaim` checks that a stored run may be resumed with the
plan the files give now and makes it this process's again (the trials of the
search that had not ended are dropped), :func:`run_tmpdir` keeps a run's
temporary files under the run's own directory, and
:func:`remove_stale_workdir` removes the work directory a dead run left on a node.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import posixpath
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from srperf.errors import ConfigError
from srperf.results.liveness import ProcessId, is_alive
from srperf.results.store import ResultStore
from srperf.safety.safe_paths import open_subdirs, remove_empty, remove_subtree
from srperf.util.terminate import run_end
from srperf.transports.base import WORKDIR_TEMPLATE, Transport

log = logging.getLogger(__name__)

_STEM = WORKDIR_TEMPLATE.rstrip("X")
WORKDIR_RE = re.compile(re.escape(_STEM) + "[A-Za-z0-9]{%d}" % (len(WORKDIR_TEMPLATE)
                                                                - len(_STEM)))
"""The name ``mktemp -d`` gives a transport's work directory."""


@dataclass
class Reclaimed:
    """A stored run made this process's again."""

    environment: dict[str, Any]
    """Its environment (with this resume appended to ``resumes``)."""
    ended: dict[int, tuple[str, int, str, str]]
    """Searches that ended: search_seq -> (behavior, packet size, status, reason)."""
    previous_status: str
    dropped_trials: int
    """Trials of the search that had not ended, deleted."""


def reclaim(store: ResultStore, run_id: str, plan: dict[str, Any]) -> Reclaimed:
    """Check that ``run_id`` may be resumed with ``plan`` (the plan the files give now)
    and claim it: refused (ConfigError, exit 2) when there is no such run, it
    finished, its process may still run, or the plan changed."""
    row = store.run_row(run_id)
    if row is None:
        raise ConfigError(store.where, "--resume", run_id, "no such run in this store")
    where = f"{store.where} run {run_id}"
    if row["status"] == "finished":
        raise ConfigError(where, "status", "finished", "the run has finished; nothing to resume")
    proc = ProcessId(int(row["pid"] or 0), str(row["host"] or ""), row["pid_start"])
    alive = is_alive(proc)
    if row["status"] == "running" and alive is not False:
        raise ConfigError(where, "status", "running",
                          f"it {'runs' if alive else 'may still run'} (pid {proc.pid} on "
                          f"{proc.host or '?'}); resume only a run whose process is gone")
    env = row["environment"]
    stored = env.get("plan")
    if stored is None:
        raise ConfigError(where, "environment.plan", None, "the run was stored by an srperf "
                          "without resume; it cannot be resumed")
    diff = sorted(k for k in set(stored) | set(plan) if stored.get(k) != plan.get(k))
    if diff:
        raise ConfigError(where, "plan", {k: stored.get(k) for k in diff},
                          f"the files now give {({k: plan.get(k) for k in diff})}: "
                          "the experiment or testbed changed since the run started")
    # 'srperf runs' shows a running run whose process is gone as dead: say it alike
    previous = "dead" if row["status"] == "running" and alive is False else str(row["status"])
    store.claim_run(run_id)
    dropped = store.drop_unended(run_id)
    ended = store.ended_searches(run_id)
    env.setdefault("resumes", []).append(
        {"time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
         "previous_status": previous, "searches_kept": len(ended),
         "dropped_trials": dropped.get("trials", 0),
         "dropped_search_goals": dropped.get("searches", 0)})
    store.update_environment(run_id, env)
    log.info("run %s reclaimed: %d searches kept, %s dropped", run_id, len(ended), dropped)
    return Reclaimed(env, ended, previous, dropped.get("trials", 0))


def describe_error(exc: BaseException) -> str:
    """Why a run failed, in one line, never empty."""
    return run_end(exc)[1] or type(exc).__name__


def _split_tmp(path: Path) -> tuple[Path, list[str]]:
    """``RESULTS/runs/RUN_ID/tmp`` as (RESULTS, ["runs", RUN_ID, "tmp"])."""
    return path.parents[2], [path.parent.parent.name, path.parent.name, path.name]


def _set_tmp(tempdir: str | None, env: str | None) -> None:
    """Python's and the started commands' temporary directory (None: the default)."""
    tempfile.tempdir = tempdir
    if env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = env


@dataclass(frozen=True)
class RunTmpdir:
    """A run's temporary directory while it is the process's, and the one from before."""

    path: Path
    outside: tuple[str | None, str | None]
    """``tempfile.tempdir`` and ``TMPDIR`` before the run set its own."""

    def __fspath__(self) -> str:
        return str(self.path)

    @contextlib.contextmanager
    def set_aside(self) -> Iterator[None]:
        """While the run waits between two steps (runs interleaved over several testbeds,
        :mod:`srperf.kernel.interleave`), the process's temporary directory is the one
        from before the run, so that another run can set its own; the run's comes back
        when it goes on.  Without this, runs ended in another order than they began
        left the process pointing at a directory a finished run had removed."""
        _set_tmp(*self.outside)
        try:
            yield
        finally:
            _set_tmp(str(self.path), str(self.path))


@contextlib.contextmanager
def run_tmpdir(path: Path) -> Iterator[RunTmpdir]:
    """Temporary files of a run go under ``path`` (``RESULTS/runs/RUN_ID/tmp``, the run's
    own directory), which is removed at the end: Python's :mod:`tempfile` (the
    generator's files, local transports' work directories) and the commands srperf
    starts (``TMPDIR``).  Each level below RESULTS is made 0700 and opened without
    following a symlink (:mod:`srperf.safety.safe_paths`): a symlink planted there is
    refused, and the removal at the end never follows one."""
    base, names = _split_tmp(Path(os.path.abspath(path)))
    remove_subtree(base, names)   # a dead run's leftovers (resume)
    with open_subdirs(base, names):
        pass
    outside = (tempfile.tempdir, os.environ.get("TMPDIR"))
    where = str(base.joinpath(*names))
    _set_tmp(where, where)
    try:
        yield RunTmpdir(Path(where), outside)
    finally:
        _set_tmp(*outside)
        remove_tmpdir(Path(where))


def remove_tmpdir(path: Path) -> None:
    """Remove a run's ``RESULTS/runs/RUN_ID/tmp`` (no symlink followed), then
    ``runs/RUN_ID`` and ``runs`` when nothing else is in them."""
    base, names = _split_tmp(Path(os.path.abspath(path)))
    remove_subtree(base, names)
    remove_empty(base, names[:-1])


def remove_stale_workdir(node: Transport, path: str) -> bool:
    """Remove the work directory a dead run left on ``node`` (its CFG scripts), only if
    ``path`` has the shape :meth:`Transport.workdir` makes (``TMP_BASE/srperf.XXXXXXXXXX``
    under this node's ``tmp_base``).  Returns True when a directory was removed."""
    base = node.tmp_base.rstrip("/") or "/"
    if posixpath.dirname(path) != base or not WORKDIR_RE.fullmatch(posixpath.basename(path)):
        log.warning("%s: not removing %r: not a work directory srperf makes", node.where, path)
        return False
    if not node.run(["test", "-d", path], timeout=30.0).ok:
        return False
    removed = node.run(["rm", "-rf", "--", path], timeout=60.0)
    if not removed.ok:
        log.warning("%s: could not remove %s: %s", node.where, path, removed.stderr.strip())
    return removed.ok


__all__ = ["Reclaimed", "RunTmpdir", "WORKDIR_RE", "describe_error", "reclaim",
           "remove_stale_workdir", "remove_tmpdir", "run_tmpdir"]
