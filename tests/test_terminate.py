"""SIGTERM raises Terminated inside sigterm_as_interrupt(), and the benches'
testbed context removes its namespaces on SIGTERM like on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.util.netns import netns_exists, netns_names
from srperf.util.terminate import Terminated, sigterm_as_interrupt
from srperf.testbeds.virtual import VirtualTestbed

RESULTS = Path(tempfile.gettempdir()) / "srperf-test-terminate"
PREFIX = "srpterm"


def test_sigterm_raises_terminated_and_a_second_one_is_ignored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    cleaned = False
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # interrupted by the handler long before this ends
            finally:
                # cleanup runs, and a second SIGTERM must not end it
                os.kill(os.getpid(), signal.SIGTERM)
                cleaned = True
    assert cleaned
    assert issubclass(Terminated, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) == before


def test_previous_handler_is_back_after_a_normal_exit() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with sigterm_as_interrupt():
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


CHILD = f"""
import os, time
os.environ["SRPERF_RESULTS"] = {str(RESULTS)!r}
from srperf.measure.bench_support import bench_session
from srperf.config.model import TestbedConfig
with bench_session("term", TestbedConfig(name="term", prefix={PREFIX!r}), "linux"):
    print("up", flush=True)
    time.sleep(120)
"""


@pytest.mark.netns
def test_bench_testbed_is_removed_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "up\n", line + proc.stderr.read()
        assert netns_exists(f"{PREFIX}-sut")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert "Terminated" in err, err
        assert not [n for n in netns_names() if f"{PREFIX}-" in n]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        VirtualTestbed(TestbedConfig(name="term", prefix=PREFIX)).down()
