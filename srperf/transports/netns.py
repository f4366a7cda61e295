"""Transport into a network namespace on this host (the virtual testbed's SUT)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from srperf.netns import CommandResult
from srperf.transports.base import Transport, env_argv


class NetnsTransport(Transport):
    """Runs commands with ``ip netns exec NS``; files are copied to a host directory."""

    name = "netns"

    def __init__(self, ns: str | None, workdir: Path | None = None) -> None:
        self.ns = ns
        self.workdir = workdir or Path("/run/srperf") / (ns or "host")

    @property
    def where(self) -> str:
        return f"netns {self.ns}" if self.ns else "this host"

    def machine(self) -> Transport:
        return NetnsTransport(None) if self.ns else self

    def push(self, local: Path) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        dest = self.workdir / local.name
        shutil.copyfile(local, dest)
        return str(dest)

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        full = (["ip", "netns", "exec", self.ns] if self.ns else []) + env_argv(argv, env)
        try:
            proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout,
                                  input=input_text)
        except subprocess.TimeoutExpired as exc:
            partial = exc.stdout if isinstance(exc.stdout, str) else ""
            return CommandResult(tuple(full), 124, partial, f"timed out after {timeout} s")
        return CommandResult(tuple(full), proc.returncode, proc.stdout, proc.stderr)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
