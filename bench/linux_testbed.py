"""Plumbing shared by the benchmarks of the Linux forwarder on the virtual testbed
(bench/search_b2.py, bench/queue_modes.py, bench/capacity_noise.py), and the
spread figure they print."""

from __future__ import annotations

import contextlib
import statistics
import sys
from pathlib import Path
from typing import Iterable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from srperf import behaviors as catalogue  # noqa: E402
from srperf.cfg_manager import CfgManager  # noqa: E402
from srperf.config.model import TestbedConfig  # noqa: E402
from srperf.terminate import sigterm_as_interrupt  # noqa: E402
from srperf.testbeds.virtual import VirtualTestbed  # noqa: E402
from srperf.transports import for_testbed  # noqa: E402


@contextlib.contextmanager
def linux_testbed(tb: TestbedConfig) -> Iterator[CfgManager]:
    """Bring up ``tb``'s namespaces; yield the Linux forwarder's CFG manager.

    Afterwards, even on an error, Ctrl-C or SIGTERM, the pushed CFG scripts'
    work directory and the namespaces are removed.  Callers close their
    generators inside the ``with`` block.
    """
    vt = VirtualTestbed(tb)
    with sigterm_as_interrupt():
        transport = for_testbed(tb)
        try:
            vt.up()
            yield CfgManager(transport, "linux", catalogue.cfg_env(tb))
        finally:
            transport.close()
            vt.down()


def cv_pct(values: Iterable[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean), %; nan below
    two values."""
    x = [float(v) for v in values]
    return 100.0 * statistics.stdev(x) / statistics.mean(x) if len(x) > 1 else float("nan")
