"""Build the eBPF dataplane (testbed/dataplanes/ebpf) with its Makefile.

Objects go to ``<build dir>/ebpf`` (see :func:`srperf.build.build_dir`), on
the controlling host; :meth:`srperf.forwarders.ebpf.forwarder.EbpfForwarder.prepare`
pushes the ones a run needs to the SUT.  ``srperf build`` calls
:func:`build_all`.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Iterable

from srperf.safety import safe_paths
from srperf.build import BuildError, build_dir
from srperf.resources import ebpf_dir

log = logging.getLogger(__name__)

DEFAULT_CACHE_ENTRIES = 65536


def ebpf_build_dir() -> Path:
    """Where the eBPF objects go (created if missing)."""
    return safe_paths.make_dirs(build_dir() / "ebpf")


def build_all(cache_entries: Iterable[int] = (DEFAULT_CACHE_ENTRIES,)) -> list[Path]:
    """Build srproxy (one object per caching-proxy size, entries) and vnf_drop.

    Raises BuildError with the compiler's output (warnings are errors).
    """
    out = ebpf_build_dir()
    built = []
    for entries in cache_entries:
        proc = subprocess.run(["make", "-s", "-C", str(ebpf_dir()), f"BUILD_DIR={out}",
                               f"CACHE_ENTRIES={int(entries)}", "all"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"building the eBPF dataplane failed:\n{proc.stderr}")
        built.append(out / f"srproxy-c{int(entries)}.o")
    built.append(out / "vnf_drop.o")
    return built


__all__ = ["build_all", "ebpf_build_dir", "DEFAULT_CACHE_ENTRIES"]
