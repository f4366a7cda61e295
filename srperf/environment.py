"""Environment metadata stored with every run (so results stay comparable)."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

import srperf


def _cmd(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def collect() -> dict[str, Any]:
    """Host, kernel, CPU, tool versions and the srperf commit (when in a git tree)."""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    src = os.path.dirname(os.path.dirname(os.path.abspath(srperf.__file__)))
    return {
        "srperf_version": srperf.__version__,
        "srperf_commit": _cmd(["git", "-C", src, "rev-parse", "--short", "HEAD"]),
        "hostname": platform.node(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "iproute2": _cmd(["ip", "-V"]),
    }
