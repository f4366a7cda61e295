"""The orchestrator reports its events to a progress view (simulated SUT, no namespaces)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from srperf import resources
from srperf.config.loader import load_experiment, load_testbed
from srperf.measure.orchestrator import Orchestrator
from srperf.measure.progress import PlainProgress


def test_a_simulated_run_reports_every_trial(tmp_path: Path) -> None:
    exp = load_experiment(resources.find_config("quick", "experiment"))
    exp = dataclasses.replace(exp, behaviors=("ipv6", "end"), repetitions=2)
    tb = load_testbed(resources.find_config("simulated", "testbed"))
    out = io.StringIO()
    report = Orchestrator(exp, tb, tmp_path, progress=PlainProgress(out)).run()
    lines = out.getvalue().splitlines()
    assert f"run {report.run_id}: 4 searches planned" in lines[:2]
    trial_lines = [x for x in lines if x.startswith("  search ")]
    n_trials = sum(r.n_trials for _, r in report.searches)
    assert len(trial_lines) == n_trials > 4
    assert trial_lines[0].startswith("  search 1/4 ipv6 64B rep 1: trial 1 at ")
    assert any(x.startswith("  search 4/4 end 64B rep 2") for x in trial_lines)
    assert "time left not known yet" in trial_lines[0]
    assert "time left about " in trial_lines[-1]
    assert lines[-1].startswith(f"run {report.run_id} finished: 4 searches in ")
    # The plain messages of the orchestrator still arrive (the view is a callable).
    assert any("ipv6 size 64 rep 1: PDR@0.5%" in x for x in lines)
    # a model checks no frames, and its line says so without calling it verified
    assert "ipv6: not verified: simulated model" in lines, lines
    assert not any("verified (not verified" in x for x in lines), lines
    assert not any("(1 trials" in x or "(0 trials" in x for x in lines), lines


def test_a_plain_callable_still_works(tmp_path: Path) -> None:
    exp = dataclasses.replace(load_experiment(resources.find_config("quick", "experiment")),
                              behaviors=("ipv6",))
    tb = load_testbed(resources.find_config("simulated", "testbed"))
    seen: list[str] = []
    Orchestrator(exp, tb, tmp_path, progress=seen.append).run()
    assert any("ipv6 size 64 rep 1" in x for x in seen)
