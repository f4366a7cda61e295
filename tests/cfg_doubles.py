"""Test doubles of CFG scripts (not part of srperf)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from srperf import resources


def hang_linux_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        function: str = "end", timeout_s: float = 2.0) -> Path:
    """Make srperf push a linux CFG script whose ``function`` hangs, as a wedged SUT
    command would (every other function is the real one), and stop CFG calls after
    ``timeout_s`` seconds instead of srperf's 120.  Returns the double's path (under
    ``tmp_path``: an SSH SUT of the suite shares this host's files)."""
    real = resources.cfg_script("linux")
    double = tmp_path / "linux.sh"
    double.write_text(
        "#!/usr/bin/env bash\n"
        "# TEST DOUBLE (not part of srperf): the linux CFG script whose "
        f"{shlex.quote(function)} function\n"
        "# hangs, as a wedged SUT command would; every other function is the real one.\n"
        "set -euo pipefail\n"
        f'if [[ "${{1:-}}" == {shlex.quote(function)} ]]; then exec sleep 100000; fi\n'
        f'exec bash {shlex.quote(str(real))} "$@"\n')
    monkeypatch.setattr(resources, "cfg_script", lambda name: double)
    monkeypatch.setattr("srperf.testbeds.sut.CFG_TIMEOUT_S", timeout_s)
    return double
