"""A run stopped by SIGTERM (a CI timeout, ``kill PID``) or SIGINT (Ctrl-C) cleans up.

`srperf run` runs in a child process on a real virtual testbed; once one search
has finished, the test sends the signal and checks what the guide asks of a
failed run: a non-zero exit naming the cause, the SUT cleaned and the testbed
it brought up removed, every finished search and trial kept in the store, and
the run stored as ``interrupted`` with the signal's name.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from srperf.config.model import TestbedConfig
from srperf.util.netns import netns_exists, netns_names
from srperf.testbeds.virtual import VirtualTestbed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

PREFIX = "srpsig"
CHILD = "import sys; from srperf.cli.entry import main; sys.exit(main(sys.argv[1:]))"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    exp = {"name": "sig", "forwarder": "linux", "behaviors": ["ipv6", "end"], "repetitions": 20,
           "search": {"algorithm": "bisect", "thresholds_pct": [0.5], "trial_duration_s": 0.2,
                      "accuracy": "10%", "min_rate": "5%", "max_rate": "100%"}}
    tb = {"name": "sig", "kind": "virtual", "prefix": PREFIX,
          "tester": {"line_rate_pps": 300000}}
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(exp))
    (tmp_path / "tb.yaml").write_text(yaml.safe_dump(tb))
    return tmp_path / "exp.yaml", tmp_path / "tb.yaml"


@pytest.mark.parametrize(("signum", "code", "word"), [(signal.SIGTERM, 143, "terminated"),
                                                      (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_run_cleans_the_sut_and_keeps_finished_trials(
        tmp_path: Path, signum: int, code: int, word: str) -> None:
    exp, tb = _files(tmp_path)
    results = tmp_path / "res"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "run", str(exp), "--testbed", str(tb),
         "--results", str(results)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        for line in proc.stdout:  # the first finished search
            seen.append(line)
            if line.startswith("ipv6 size") or time.monotonic() > deadline:
                break
        assert seen and seen[-1].startswith("ipv6 size"), "".join(seen)
        assert netns_exists(f"{PREFIX}-sut")
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert word in err, err
        assert not [n for n in netns_names() if f"{PREFIX}-" in n]
        db = sqlite3.connect(results / "srperf.sqlite")
        try:
            status, sig, reason = db.execute("SELECT status, signal, reason FROM runs").fetchone()
            name = signal.Signals(signum).name
            assert (status, sig, reason) == ("interrupted", name, f"interrupted by {name}")
            kept = db.execute("SELECT COUNT(*) FROM searches WHERE behavior = 'ipv6'").fetchone()
            assert kept[0] >= 1
            trials = db.execute("SELECT COUNT(*) FROM trials WHERE behavior = 'ipv6'").fetchone()
            assert trials[0] >= 3
        finally:
            db.close()
        assert list(results.glob("summary-*.csv"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        VirtualTestbed(TestbedConfig(name="sig", prefix=PREFIX)).down()
