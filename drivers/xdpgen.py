"""The live-frames send engine of the ``linux`` generator: build ``xdpgen`` and its XDP program.

``xdpgen`` (``linux_gen/xdpgen.c``) takes srgen's command line subset and prints
srgen's report, so :class:`srperf.drivers.linux.SrgenReport` parses it; it sends
by ``BPF_PROG_RUN`` of ``linux_gen/xdpgen.bpf.c`` with live frames (see the C
file for pacing and counting).  :class:`LinuxGenerator` runs it when
``tester.options.engine`` chooses it (drivers/linux_engine.py, docs/generator-engines.md).
"""

from __future__ import annotations

from pathlib import Path

from srperf.build import ensure_built
from srperf.drivers.linux import SRGEN_CFLAGS
from srperf.drivers.linux_sink import _BPF_CFLAGS
from srperf.resources import generator_dir


def build_xdpgen() -> Path:
    """Compile xdpgen (warning-free, ``gcc -O2 -Wall -Wextra``, with libbpf); return its path."""
    src = generator_dir() / "xdpgen.c"
    return ensure_built("xdpgen", [src, generator_dir() / "probe_rx.h", generator_dir() / "mix.h"],
                        ["gcc", *SRGEN_CFLAGS, "-o", "{out}", str(src), "-lbpf"])


def xdpgen_object() -> Path:
    """Build (if needed) and return the XDP program xdpgen runs (``-o`` of xdpgen)."""
    src = generator_dir() / "xdpgen.bpf.c"
    return ensure_built("xdpgen.bpf.o", [src],
                        ["clang", *_BPF_CFLAGS, "-c", str(src), "-o", "{out}"])


__all__ = ["build_xdpgen", "xdpgen_object"]
