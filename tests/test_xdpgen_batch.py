"""xdpgen's kernel batch (the size of each call's page pool and how often the peer's
NAPI is woken): 256 unpaced by default, QUANTUM worth of frames in chunk calls,
stretched up to twice that (128 at most) from 1.6 Mpps on; and the unpaced clock read
every 64th packet still gives a trial its elapsed time.  Structure and counting only:
every frame offered is sent or refused, and the sink's port saw every frame sent."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from srperf.drivers.xdpgen import build_xdpgen, xdpgen_object
from srperf.util.netns import run
from test_xdpgen import veth_to_sink

pytestmark = pytest.mark.netns

TX_NS, SINK_NS = "x5s-btx", "x5s-bsink"


def sink_rx() -> int:
    return int(run(["cat", "/sys/class/net/s0/statistics/rx_packets"], ns=SINK_NS).stdout)


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Path]:
    with veth_to_sink(tmp_path / "frame", TX_NS, SINK_NS, quiet=True) as path:
        yield path


def serve(frame_file: Path, trials: str) -> list[dict[str, object]]:
    proc = subprocess.run(["ip", "netns", "exec", TX_NS, str(build_xdpgen()), "-f",
                           str(frame_file), "-t", "t0", "-x", "t0", "-o", str(xdpgen_object()),
                           "-S"], input=trials + "quit\n", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()[1:]]


def test_batch_by_rate_and_counting(topology: Path) -> None:
    before = sink_rx()
    # unpaced; 100 kpps (5 frames a batch, as QUANTUM says); 2 Mpps (40, stretched to 80)
    reps = serve(topology, "trial 0 300000 50000 5000\ntrial 100000 10000 50000 5000\n"
                 "trial 2000000 100000 50000 5000\n")
    assert [r["batch"] for r in reps] == [256, 2, 80]
    assert [r["call_policy"] for r in reps] == ["chunk"] * 3
    for r, count in zip(reps, (300000, 10000, 100000)):
        assert r["offered"] == count
        assert r["sent"] + r["refused"] == r["offered"]
        assert 0 < r["elapsed_ns"] and math.isfinite(r["elapsed_ns"])
    # every frame sent reached the sink's port (+1: xdpgen's start-up frame)
    assert sink_rx() - before == sum(r["sent"] for r in reps) + 1


def test_unpaced_trial_has_an_elapsed_time(topology: Path) -> None:
    """Unpaced, the program reads the clock for every 64th frame and the trial's last
    one, which ends the trial's elapsed time: short trials get one too."""
    reps = serve(topology, "trial 0 70 50000 5000\ntrial 0 2 50000 5000\n")
    assert [r["offered"] for r in reps] == [70, 2]
    for r in reps:
        assert r["elapsed_ns"] > 0
        assert r["sent"] + r["refused"] == r["offered"]
