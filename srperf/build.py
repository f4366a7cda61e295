"""Compile the C programs srperf ships (traffic generator, eBPF dataplane).

Outputs go to a build directory outside the source tree
(``$SRPERF_BUILD_DIR`` or ``~/.cache/srperf/build``) so an installed package
works from any directory; a program is rebuilt whenever a source is newer.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Sequence

from srperf.safety import safe_paths
from srperf.errors import SrperfError

log = logging.getLogger(__name__)


class BuildError(SrperfError):
    """A compiler failed; the message carries its output."""


def build_dir() -> Path:
    """Directory that holds built binaries and objects, private to srperf's user (made
    0700 if missing; another owner or a mode that lets others write it is refused,
    exit 2: root runs what it holds).  Root's default is root's own ``~/.cache``, even
    under ``sudo`` with the user's ``HOME`` kept (:mod:`srperf.safety.private_dirs`)."""
    from srperf.safety import private_dirs

    named = os.environ.get("SRPERF_BUILD_DIR")
    path = Path(named) if named else private_dirs.cache_home() / "srperf" / "build"
    return private_dirs.ensure_private_dir(path, "SRPERF_BUILD_DIR", "<environment>")


def ensure_built(output_name: str, sources: Sequence[Path], command: Sequence[str]) -> Path:
    """Build ``output_name`` in :func:`build_dir` unless it is newer than every source.

    ``command`` is the compiler argv; the token ``{out}`` is replaced by the
    output path.  Raises :class:`BuildError` with the compiler's output.
    """
    out = build_dir() / output_name
    if out.exists():
        newest = max(p.stat().st_mtime for p in sources)
        if out.stat().st_mtime >= newest:
            return out
    log.info("building %s", out)
    # Renamed over ``out`` only when the build is clean; named per process so that two
    # builds at once (two installs, parallel test workers) never write one file.
    tmp_out = f"{out}.{os.getpid()}.tmp"
    argv = [arg.replace("{out}", tmp_out) for arg in command]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building {output_name} failed: {' '.join(argv)}\n{proc.stderr}")
    if proc.stderr.strip():
        raise BuildError(f"building {output_name} printed warnings (-Wall must be clean):\n"
                         f"{proc.stderr}")
    safe_paths.replace(tmp_out, out)
    return out
