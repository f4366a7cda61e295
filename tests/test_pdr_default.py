"""``srperf pdr --threshold 0.5``, typed as the README and the papers show it (no --behavior).

It measures every behavior of the default experiment (quick) that the forwarder
offers, says which on stdout before the first search, and prints each one's PDR
interval (or the status that replaces it).  The virtual test runs the real path
with short trials; the simulated ones check which behaviors are chosen.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from busy_host import BUSY_HOST_OPTIONS
from srperf.forwarders import registry as forwarders
from srperf import resources
from srperf.cli.run import PDR_EXPERIMENT
from srperf.cli.entry import main
from srperf.config.loader import load_experiment

TESTBED = {"name": "s27pdr", "kind": "virtual", "prefix": "s27p",
           # well within what the generator paces, and paced beside busy loops too
           "tester": {"line_rate_pps": 200000, "options": BUSY_HOST_OPTIONS}}
QUICK = load_experiment(resources.find_config(PDR_EXPERIMENT, "experiment")).behaviors


@pytest.mark.netns
@pytest.mark.slow
def test_pdr_as_typed_measures_every_behavior_of_quick_on_the_virtual_testbed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump(TESTBED))
    rc = main(["pdr", "--threshold", "0.5", "--testbed", str(tb), "--results",
               str(tmp_path / "res"),   # short trials: the path, not the figures
               "--algorithm", "bisect", "--trial-duration", "0.2", "--accuracy", "10%"])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = out.splitlines()
    said = next(i for i, x in enumerate(lines) if x.startswith("pdr: no --behavior given"))
    planned = next(i for i, x in enumerate(lines) if x.endswith("searches planned"))
    assert said < planned, "the behaviors are named before the run starts"
    assert f"measuring {', '.join(QUICK)} on linux" in lines[said]
    assert f"{len(QUICK)} behaviors of experiment quick" in lines[said]
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    outcomes = dict(db.execute("SELECT behavior, status FROM outcomes").fetchall())
    assert set(outcomes) == set(QUICK), outcomes
    measured = [b for b, s in outcomes.items() if s == "measured"]
    assert len(measured) >= len(QUICK) - 1, outcomes  # end_dt4 needs VRF, absent here
    statuses = dict(db.execute("SELECT behavior, status FROM searches").fetchall())
    for behavior in measured:
        # its PDR interval, or the status a busy machine honestly gives instead
        line = next(x for x in lines if x.startswith(f"{behavior} size 64 rep 1: "))
        assert re.search(r"PDR@0\.5% \[[\d.]+, [\d.?]+\] kpps", line) or \
            statuses[behavior] == "generator_limited", line
    summary = out.split("summary of run", 1)[1]
    for behavior in QUICK:
        assert re.search(rf"^{behavior}\s+64\s", summary, re.M), summary
    assert "s27p-" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                         text=True).stdout


def test_behavior_narrows_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["pdr", "-b", "end", "-b", "ipv6", "--testbed", "simulated",
               "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "no --behavior given" not in out and ": 2 searches planned" in out
    db = sqlite3.connect(tmp_path / "srperf.sqlite")
    assert sorted(b for (b,) in db.execute("SELECT behavior FROM searches")) == ["end", "ipv6"]


def test_a_forwarder_offering_none_of_quick_gets_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offered = [b for b in QUICK if forwarders.get("ebpf").offers(b)]
    assert not offered, "the case below needs a forwarder that offers none of quick"
    rc = main(["pdr", "--forwarder", "ebpf", "--testbed", "simulated", "--results",
               str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    first = out.splitlines()[0]
    assert first.startswith("pdr: no --behavior given: measuring end_ad") and \
        "every behavior ebpf offers" in first, first


def test_as_typed_it_searches_as_quick_does_and_flags_override(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --behavior, quick's search block is the base (bisection), so the command as
    typed ends in minutes; --algorithm still overrides it."""
    rc = main(["pdr", "--threshold", "0.5", "--testbed", "simulated",
               "--results", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "searching as experiment quick does: algorithm bisect" in out
    assert "algorithm bisect;" in out
    rc = main(["pdr", "--threshold", "0.5", "--algorithm", "mlr", "--testbed", "simulated",
               "--results", str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "algorithm mlr;" in out
    # issue 49 item 5: one default for both forms: a behavior of quick named with
    # --behavior is searched as quick does (it ran mlr: 140 s, 122 trials, no word)
    rc = main(["pdr", "-b", "end", "--testbed", "simulated", "--results", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 0 and "searching as experiment quick does: algorithm bisect" in out, out
    assert "algorithm bisect;" in out
    # a behavior quick does not list gets the search's defaults, their time said first
    rc = main(["pdr", "-b", "end_t", "--testbed", "simulated", "--results",
               str(tmp_path / "d")])
    out = capsys.readouterr().out
    assert rc == 0, out
    said = next(i for i, x in enumerate(out.splitlines())
                if x.startswith("pdr: end_t: not all in experiment quick"))
    assert "algorithm mlr" in out.splitlines()[said] and " min and " in \
        out.splitlines()[said]
    assert said < next(i for i, x in enumerate(out.splitlines()) if "planned" in x)
    assert "algorithm mlr;" in out
