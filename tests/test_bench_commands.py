"""Every benchmark command imports and parses its arguments (they are not run here:
they print figures on a quiet machine, see README)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_bench_command_starts(script: str) -> None:
    proc = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout


def test_every_benchmark_has_its_running_time_entry() -> None:
    """Issue 49 item 11: benchmarks gave no running time; each now says it at start
    (srperf.measure.bench_times), so each file of bench/ needs its entry."""
    from srperf.measure.bench_times import EXPECTED

    assert sorted(EXPECTED) == sorted(p.stem for p in BENCH.glob("*.py"))
    for script in BENCH.glob("*.py"):
        assert "announce(__file__" in script.read_text(), script.name


def test_a_benchmark_says_its_time_first_and_its_wall_time_last() -> None:
    proc = subprocess.run([sys.executable, str(BENCH / "search_b1.py"), "--seeds", "1",
                           "--noise", "0", "--thresholds", "0.5", "--algorithms",
                           "bisect-1s"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("bench search_b1: expected running time about ")
    assert "shorter: --seeds 30" in lines[0]
    assert lines[-1].startswith("bench search_b1: ran ") and lines[-1].endswith(" s")
