"""Build the PF-PLM eBPF counters (testbed/dataplanes/pm) with their Makefile.

Objects go to ``<build dir>/pm`` (see :func:`srperf.build.build_dir`); ``srperf build``
calls :func:`build_pm`.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from srperf.build import BuildError, build_dir
from srperf.resources import pm_dir
from srperf.safety import safe_paths

log = logging.getLogger(__name__)

OBJECTS = ("pm_tc_ingress.o", "pm_xdp_egress.o")
"""The ingress node's TC program (count + colour) and the egress node's XDP program (count)."""


def pm_build_dir() -> Path:
    """Where the PF-PLM objects go (created if missing)."""
    return safe_paths.make_dirs(build_dir() / "pm")


def build_pm() -> list[Path]:
    """Build both PF-PLM objects; their paths in :data:`OBJECTS` order.

    Raises BuildError with the compiler's output (warnings are errors).
    """
    out = pm_build_dir()
    proc = subprocess.run(["make", "-s", "-C", str(pm_dir()), f"BUILD_DIR={out}", "all"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building the PF-PLM eBPF counters failed:\n{proc.stderr}")
    return [out / name for name in OBJECTS]


__all__ = ["OBJECTS", "build_pm", "pm_build_dir"]
