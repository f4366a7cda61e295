"""How srperf reaches a SUT: push a file, run a command, get its exit status."""

from __future__ import annotations

import abc
import shlex
from pathlib import Path
from typing import Mapping, Sequence

from srperf.netns import CommandResult


class Transport(abc.ABC):
    """A way to run commands on the SUT (local namespace or SSH)."""

    name: str = "abstract"

    @property
    def where(self) -> str:
        """How the node is reached, for messages (``netns srp-sut``, ``ssh root@host:22``)."""
        return self.name

    @abc.abstractmethod
    def push(self, local: Path) -> str:
        """Copy ``local`` to the SUT; return the path it has there."""

    @abc.abstractmethod
    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """Run ``argv`` on the SUT with extra environment ``env``; never raises on rc."""

    def check(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
              timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        """:meth:`run`, raising :class:`srperf.netns.CommandFailed` on a non-zero exit."""
        from srperf.netns import CommandFailed

        result = self.run(argv, env=env, timeout=timeout, input_text=input_text)
        if not result.ok:
            raise CommandFailed(result)
        return result

    def machine(self) -> "Transport":
        """The transport of the machine this node lives on (where network namespaces are
        made and entered: ``ip netns add|del|exec``); the node itself unless it is a
        namespace of this host."""
        return self

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def env_argv(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """``env K=V ... argv``: passes variables without relying on the remote shell."""
    if not env:
        return list(argv)
    return ["env"] + [f"{k}={v}" for k, v in sorted(env.items())] + list(argv)


def shell_line(argv: Sequence[str]) -> str:
    """A command line with every word quoted for a POSIX shell."""
    return " ".join(shlex.quote(a) for a in argv)
