"""Push a forwarder's CFG script to the SUT and run its functions.

Contract with ``cfg_scripts/<forwarder>.sh``: invoked as ``bash SCRIPT FUNCTION``
with parameters in ``SRPERF_*`` environment variables; exit 0 = configured,
exit 3 = the SUT refuses the behavior (stderr starts with ``unsupported:`` and
carries the SUT's own reason), any other non-zero exit = failure (stderr says why).
"""

from __future__ import annotations

import logging
from typing import Mapping

from srperf import resources
from srperf.errors import CfgError, UnsupportedBehavior
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

EXIT_UNSUPPORTED = 3


class CfgManager:
    """Configures one forwarder on one SUT through a transport."""

    def __init__(self, transport: Transport, forwarder: str, env: Mapping[str, str],
                 timeout_s: float = 120.0) -> None:
        self.transport = transport
        self.forwarder = forwarder
        self.env = dict(env)
        self.timeout_s = timeout_s
        self._remote: str | None = None

    def install(self) -> str:
        """Push the script (once); return its path on the SUT."""
        if self._remote is None:
            local = resources.cfg_script(self.forwarder)
            if not local.exists():
                raise CfgError(f"no CFG script for forwarder {self.forwarder!r} ({local})")
            self._remote = self.transport.push(local)
        return self._remote

    def call(self, function: str, behavior: str | None = None) -> None:
        """Run one function of the script; raise on failure."""
        script = self.install()
        result = self.transport.run(["bash", script, function], env=self.env,
                                    timeout=self.timeout_s)
        if result.ok:
            return
        message = (result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}")
        if result.returncode == EXIT_UNSUPPORTED:
            reason = message.split("unsupported:", 1)[-1].strip()
            raise UnsupportedBehavior(behavior or function, reason)
        raise CfgError(f"{self.forwarder}.sh {function} failed (exit {result.returncode}): "
                       f"{message}")

    def apply(self, cfg_function: str, behavior: str) -> None:
        """Configure one behavior (the script cleans first)."""
        log.info("configuring %s on the SUT (%s.sh %s)", behavior, self.forwarder, cfg_function)
        self.call(cfg_function, behavior)

    def clean(self) -> None:
        """Remove every behavior's configuration from the SUT."""
        self.call("clean")
