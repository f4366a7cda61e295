"""Build the XDP fast path (testbed/dataplanes/xdp) with its Makefile.

The object goes to ``<build dir>/xdp`` (see :func:`srperf.build.build_dir`);
:meth:`srperf.forwarders.xdp.forwarder.XdpForwarder.prepare` pushes it to the SUT.
``srperf build`` calls :func:`build_xdp`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from srperf.build import BuildError, build_dir
from srperf.resources import xdp_dir
from srperf.safety import safe_paths

OBJECT = "xdp_fp.o"


def xdp_build_dir() -> Path:
    """Where the XDP object goes (created if missing)."""
    return safe_paths.make_dirs(build_dir() / "xdp")


def build_xdp() -> Path:
    """Build xdp_fp.o (make rebuilds it when a source is newer); BuildError with the
    compiler's output on failure or on any warning."""
    out = xdp_build_dir()
    proc = subprocess.run(["make", "-s", "-C", str(xdp_dir()), f"BUILD_DIR={out}", "all"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building the XDP fast path failed:\n{proc.stderr}")
    if proc.stderr.strip():
        raise BuildError(f"building the XDP fast path printed warnings:\n{proc.stderr}")
    return out / OBJECT


__all__ = ["build_xdp", "xdp_build_dir", "OBJECT"]
