"""How srperf reaches a node of a testbed: run a command, push files, clean up.

Every node (SUT, tester, VNF host) is reached through one :class:`Transport`.
Subclasses implement :meth:`Transport.run`, :meth:`Transport._put_file` and
:meth:`Transport._disconnect`; the private working directory, ``check``,
``push``, ``push_tree`` and ``close`` are shared.
"""

from __future__ import annotations

import abc
import logging
import posixpath
import re
import shlex
import stat
from pathlib import Path
from typing import Callable, Mapping, Sequence

from srperf.errors import TransportError
from srperf.util.netns import CommandFailed, CommandResult

log = logging.getLogger(__name__)

TIMED_OUT = 124
"""Exit status of a command that ran out of time (as coreutils ``timeout``)."""

WORKDIR_TEMPLATE = "srperf.XXXXXXXXXX"
"""``mktemp -d`` template of the private working directory on a node."""

_NAME = re.compile(r"^[A-Za-z0-9._+-]+\Z")


class NodeCommandFailed(CommandFailed):
    """A command exited non-zero on a node; the message says which node."""

    def __init__(self, where: str, result: CommandResult) -> None:
        super().__init__(result)
        self.where = where
        self.args = (f"{where}: {self.args[0]}",)


class Held(abc.ABC):
    """A process on a node that lives as long as srperf holds it: its stdin comes
    from srperf, so when srperf ends (even by ``kill -9``) or the connection drops,
    the process reads end-of-file and can clean up after itself."""

    @abc.abstractmethod
    def readline(self, timeout: float) -> str:
        """The next line the process printed (without its newline); ``""`` when it
        ended; raises TransportError when nothing came within ``timeout`` seconds."""

    @abc.abstractmethod
    def send(self, line: str) -> None:
        """Write ``line`` and a newline to the process's stdin."""

    @abc.abstractmethod
    def alive(self) -> bool:
        """True while the process runs and srperf can still talk to it."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close its stdin (it reads end-of-file) and forget it.  Idempotent."""


class Transport(abc.ABC):
    """A way to run commands on one node (a local namespace, this host, SSH).

    ``run`` never raises on a non-zero exit; it raises
    :class:`~srperf.errors.TransportError` (message starting with :attr:`where`)
    when the node cannot be reached.  A command that runs longer than its
    ``timeout`` is stopped and reported with exit status 124.
    """

    name: str = "abstract"

    def __init__(self, tmp_base: str = "/tmp") -> None:
        if not tmp_base.startswith("/"):
            raise ValueError(f"tmp_base must be an absolute path, not {tmp_base!r}")
        self.tmp_base = tmp_base
        self._workdir: str | None = None
        self.on_workdir: Callable[[str], None] | None = None
        """Called with the work directory's path once it is made (the testbed names it
        in its lock, so that a run killed with -9 leaves nothing behind)."""

    # -- to implement --------------------------------------------------------------
    @property
    @abc.abstractmethod
    def where(self) -> str:
        """How the node is reached, for messages: ``ssh root@203.0.113.2:22``."""

    @abc.abstractmethod
    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """Run ``argv`` on the node with extra environment ``env`` and ``input_text``
        on its stdin; never raises on a non-zero exit."""

    @abc.abstractmethod
    def _put_file(self, local: Path, remote: str) -> None:
        """Copy the regular file ``local`` to ``remote`` on the node, keeping its mode."""

    def _disconnect(self) -> None:
        """Release connections (nothing to release by default)."""

    def hold(self, argv: Sequence[str]) -> Held:
        """Start ``argv`` on the node as a :class:`Held` process (no timeout)."""
        raise TransportError(f"{self.where}: this transport cannot hold a process")

    # -- shared ----------------------------------------------------------------------
    def check(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """Like :meth:`run`, but a non-zero exit raises
        :class:`srperf.util.netns.CommandFailed` (whose message names the node)."""
        result = self.run(argv, env=env, timeout=timeout, input_text=input_text)
        if not result.ok:
            raise NodeCommandFailed(self.where, result)
        return result

    def reconnect(self) -> None:
        """Open a fresh connection after a lost one (no-op where there is none)."""

    def machine(self) -> "Transport":
        """The transport of the machine this node lives on (where network namespaces
        are made and entered); the node itself unless it is a namespace of this host."""
        return self

    def workdir(self) -> str:
        """This transport's private directory on the node (``mktemp -d``: mode 0700,
        unpredictable name under ``tmp_base``), created on first use."""
        if self._workdir is None:
            template = posixpath.join(self.tmp_base, WORKDIR_TEMPLATE)
            result = self.run(["mktemp", "-d", template], timeout=30.0)
            path = result.stdout.strip()
            if not result.ok or not path.startswith(self.tmp_base.rstrip("/") + "/"):
                raise TransportError(f"{self.where}: cannot create a private directory "
                                     f"with mktemp -d {template}: "
                                     f"{(result.stderr or result.stdout).strip()}")
            self._workdir = path
            log.debug("%s: working directory %s", self.where, path)
            if self.on_workdir is not None:
                self.on_workdir(path)
        return self._workdir

    def forget_workdir(self) -> None:
        """The work directory is gone from the node (removed behind srperf's back): make
        a new one on next use."""
        self._workdir = None

    def push(self, local: Path) -> str:
        """Copy the file ``local`` into :meth:`workdir` keeping its mode; return its
        path on the node."""
        local = Path(local)
        if not local.is_file():
            raise FileNotFoundError(f"cannot push {local}: not a regular file")
        remote = posixpath.join(self.workdir(), local.name)
        self._put_file(local, remote)
        log.debug("%s: pushed %s to %s", self.where, local, remote)
        return remote

    def push_tree(self, local_dir: Path, name: str) -> str:
        """Copy the regular files directly in ``local_dir`` (not subdirectories)
        into ``workdir()/name``; return that directory's path on the node."""
        local_dir = Path(local_dir)
        if not _NAME.match(name) or name in (".", ".."):
            raise ValueError(f"push_tree: {name!r} is not a plain directory name")
        if not local_dir.is_dir():
            raise FileNotFoundError(f"cannot push {local_dir}: not a directory")
        remote_dir = posixpath.join(self.workdir(), name)
        self.check(["mkdir", "-p", "-m", "0700", "--", remote_dir], timeout=30.0)
        for path in sorted(local_dir.iterdir()):
            if stat.S_ISREG(path.lstat().st_mode):
                self._put_file(path, posixpath.join(remote_dir, path.name))
        log.debug("%s: pushed %s/ to %s", self.where, local_dir, remote_dir)
        return remote_dir

    def close(self) -> None:
        """Remove the working directory from the node (best effort, logged), then
        release connections.  Idempotent."""
        workdir, self._workdir = self._workdir, None
        if workdir is not None:
            try:
                result = self.run(["rm", "-rf", "--", workdir], timeout=30.0)
                if not result.ok:
                    log.warning("%s: could not remove %s: %s", self.where, workdir,
                                result.stderr.strip())
            except TransportError as exc:
                log.warning("could not remove %s: %s", workdir, exc)
        self._disconnect()

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.where}>"


def env_argv(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """``env K=V ... argv``: passes variables without relying on the remote shell."""
    if not env:
        return list(argv)
    for key in env:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*\Z", key):
            raise ValueError(f"not an environment variable name: {key!r}")
    return ["env"] + [f"{k}={v}" for k, v in sorted(env.items())] + list(argv)


def shell_line(argv: Sequence[str]) -> str:
    """A command line with every word quoted for a POSIX shell."""
    return " ".join(shlex.quote(a) for a in argv)
