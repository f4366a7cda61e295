"""Faults a run survives on the virtual testbed: the generator dying, a SUT command hanging.

- The real generator (srgen) is killed with SIGKILL by the test while it sends:
  once in one behavior's search (the trial is run again, the search finishes
  with every trial kept), twice in a row in another's (that search is marked
  ``error`` with the reason, and the run goes on to the next behavior).
- A CFG function that hangs: a TEST DOUBLE of the linux CFG script whose ``end``
  function sleeps far beyond the timeout (every other function is the real
  script's).  srperf stops it after ``CFG_TIMEOUT_S``, names the command, cleans
  the SUT and measures the next behavior.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from cfg_doubles import hang_linux_function
from srperf.config import model
from srperf.config.model import Experiment, TestbedConfig
from srperf.util.netns import netns_names, run
from srperf.measure.orchestrator import Orchestrator
from srperf.measure.progress import ProgressEvents
from srperf.testbeds.virtual import VirtualTestbed

pytestmark = pytest.mark.netns

PREFIX = "h16bf"


@pytest.fixture
def tb() -> Iterator[TestbedConfig]:
    cfg = TestbedConfig(name="faults", prefix=PREFIX,
                        tester=model.TesterConfig(line_rate_pps=300_000))
    yield cfg
    VirtualTestbed(cfg).down()
    assert not [n for n in netns_names() if n.startswith(f"{PREFIX}-")]


def _experiment(behaviors: list[str]) -> Experiment:
    from srperf.config.loader import experiment_from_mapping

    return experiment_from_mapping(
        {"name": "faults", "forwarder": "linux", "behaviors": behaviors,
         "search": {"algorithm": "bisect", "trial_duration_s": 0.3, "accuracy": "10%",
                    "min_rate": "5%", "max_rate": "20%"}}, "<test>")


def _children_named(name: str) -> list[int]:
    """PIDs of this process's children whose command is ``name``."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        ppid = int(text.rpartition(")")[2].split()[1])
        if comm == name and ppid == me:
            found.append(int(stat.parent.name))
    return found


class SrgenKiller(ProgressEvents):
    """Kills the real srgen (SIGKILL) while it sends, ``kills[behavior]`` times in
    that behavior's first search: a generator process dying mid-trial."""

    def __init__(self, kills: dict[str, int]) -> None:
        self.left = dict(kills)
        self.done: dict[str, int] = {b: 0 for b in kills}
        self.current = ""
        self.messages: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def search_started(self, behavior: str, *args: object, **kw: object) -> None:
        self.current = behavior

    def message(self, text: str) -> None:
        self.messages.append(text)

    def __call__(self, text: str) -> None:
        self.messages.append(text)

    def _watch(self) -> None:
        while not self._stop.is_set():
            behavior = self.current
            if self.left.get(behavior, 0) > 0:
                for pid in _children_named("srgen") + _children_named("xdpgen"):
                    os.kill(pid, signal.SIGKILL)
                    self.left[behavior] -= 1
                    self.done[behavior] += 1
                    time.sleep(0.05)  # one kill per srgen process
                    break
            time.sleep(0.002)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def test_generator_killed_mid_trial_is_retried_then_the_search_is_an_error(
        tb: TestbedConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    killer = SrgenKiller({"end": 2, "ipv6": 1})
    try:
        report = Orchestrator(_experiment(["end", "ipv6"]), tb, tmp_path / "r",
                              progress=killer).run()
    finally:
        killer.close()
    assert killer.done == {"end": 2, "ipv6": 1}
    assert report.status == "finished"
    status, reason = report.outcomes[("end", 64)]
    assert status == "error" and "the generator failed 2 times" in reason, reason
    # the generator's own words: killed (xdpgen under the default engine auto, else srgen)
    assert ("srgen -S" in reason or "xdpgen -S" in reason) and "(exit -9)" in reason
    assert report.outcomes[("ipv6", 64)] == ("measured", "")  # the run went on
    assert "running the trial again" in caplog.text
    db = sqlite3.connect(tmp_path / "r" / "srperf.sqlite")
    (n_trials,), = db.execute("SELECT DISTINCT n_trials FROM searches WHERE behavior = 'ipv6'")
    kept = db.execute("SELECT COUNT(*) FROM trials WHERE behavior = 'ipv6'").fetchone()[0]
    assert kept == n_trials >= 2  # the retried trial stored once, nothing else lost
    assert db.execute("SELECT status, reason FROM outcomes WHERE behavior = 'end'").fetchone() \
        == ("error", reason)
    assert db.execute("SELECT COUNT(*) FROM searches WHERE behavior = 'end'").fetchone() == (0,)


def test_hanging_sut_command_times_out_names_it_and_the_sut_is_cleaned(
        tb: TestbedConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hang_linux_function(tmp_path, monkeypatch, "end")
    seen: list[str] = []

    def progress(msg: str) -> None:
        seen.append(msg)
        if msg.startswith("end: error"):  # before the next behavior: the SUT is clean
            routes = run(["ip", "-6", "route", "show", "table", "all"],
                         ns=f"{PREFIX}-sut").stdout
            seen.append("ROUTES " + routes)

    started = time.monotonic()
    report = Orchestrator(_experiment(["end", "ipv6"]), tb, tmp_path / "r",
                          progress=progress).run()
    assert report.status == "finished"
    status, reason = report.outcomes[("end", 64)]
    assert status == "error" and "linux.sh end on netns h16bf-sut hung" in reason, reason
    assert "stopped after 2 s" in reason
    assert report.outcomes[("ipv6", 64)] == ("measured", "")
    routes = next(m for m in seen if m.startswith("ROUTES "))
    assert "seg6local" not in routes and "fc00:" not in routes, routes
    assert subprocess.run(["pgrep", "-f", "^sleep 100000$"]).returncode == 1  # stopped
    assert time.monotonic() - started < 120
