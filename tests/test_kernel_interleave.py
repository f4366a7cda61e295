"""One experiment on several testbeds, repetitions interleaved (srperf/kernel/interleave.py,
srperf/cli/run_several.py, Orchestrator.steps), and the emulated label on trial lines.

No namespaces: the runs here use the simulated SUT (two testbed files of their own);
the guests are booted in tests/test_kernel_against_kernel.py.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from srperf.cli.entry import main
from srperf.kernel.interleave import Participant, run_interleaved
from srperf.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]


def _steps(log: list[str], name: str, reps: int, fail_at: int | None = None,
           raise_: type[BaseException] = RuntimeError) -> Iterator[int]:
    try:
        for rep in range(1, reps + 1):
            if rep == fail_at:
                raise raise_(f"{name} broke at repetition {rep}")
            log.append(f"{name}{rep}")
            yield rep
        return f"report {name}"
    finally:
        log.append(f"{name} cleaned")


def test_repetition_one_on_every_testbed_before_repetition_two() -> None:
    log: list[str] = []
    turns = run_interleaved([Participant("a", lambda: _steps(log, "a", 3)),
                             Participant("b", lambda: _steps(log, "b", 3))])
    assert [x for x in log if "cleaned" not in x] == ["a1", "b1", "a2", "b2", "a3", "b3"]
    assert [t.report for t in turns] == ["report a", "report b"]
    assert all(t.error is None for t in turns)


def test_a_failed_testbed_ends_alone_and_the_others_go_on() -> None:
    log: list[str] = []
    said: list[str] = []
    turns = run_interleaved([Participant("a", lambda: _steps(log, "a", 3, fail_at=2),
                                         report=lambda: "a's partial report"),
                             Participant("b", lambda: _steps(log, "b", 3))], said.append)
    assert log == ["a1", "b1", "a cleaned", "b2", "b3", "b cleaned"]
    assert isinstance(turns[0].error, RuntimeError) and turns[0].report == "a's partial report"
    assert turns[0].repetitions_done == 1
    assert turns[1].error is None and turns[1].report == "report b"
    assert "a: failed" in said[0] and "going on with b" in said[0]


def test_an_interrupt_ends_every_open_run_and_goes_on_up() -> None:
    log: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        run_interleaved([Participant("a", lambda: _steps(log, "a", 3)),
                         Participant("b", lambda: _steps(log, "b", 3, fail_at=2,
                                                         raise_=KeyboardInterrupt)),
                         Participant("c", lambda: _steps(log, "c", 3))])
    # b was interrupted during its repetition 2; a and c, waiting at their turn, were
    # ended by the same interrupt (their clean-up ran); nothing ran after it.
    assert log == ["a1", "b1", "c1", "a2", "b cleaned", "a cleaned", "c cleaned"]


def _simulated(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text((ROOT / "testbed" / "simulated.yaml").read_text()
                    .replace("name: simulated", f"name: {name}\nprefix: {name}"))
    return path


def test_srperf_run_on_two_testbeds_interleaves_one_run_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _simulated(tmp_path, "k4asima"), _simulated(tmp_path, "k4asimb")
    results = tmp_path / "results"
    outside = (tempfile.tempdir, os.environ.get("TMPDIR"))
    code = main(["run", "quick", "--testbed", str(a), "--testbed", str(b),
                 "--repetitions", "2", "--results", str(results),
                 "--set", "behaviors=[ipv6, end]"])
    out = capsys.readouterr().out
    assert code == 0, out
    # the runs ended in another order than they began: the process's temporary
    # directory is still the one from before, not a finished run's removed one
    assert (tempfile.tempdir, os.environ.get("TMPDIR")) == outside
    with ResultStore(results / "srperf.sqlite") as store:
        runs = store.frame("runs").sort_values("started")
        assert list(runs["testbed"]) == ["k4asima", "k4asimb"]
        assert set(runs["status"]) == {"finished"}
        ids = dict(zip(runs["testbed"], runs["run_id"]))
        searches = store.frame("searches").sort_values("id")
        order = [(r.run_id, r.repetition) for r in searches.itertuples()]
        envs = [store.run_row(i)["environment"]["recipe"]["interleaved"] for i in ids.values()]
    # repetition 1 of both runs, then repetition 2 of both (two behaviors each)
    want = [(ids["k4asima"], 1)] * 2 + [(ids["k4asimb"], 1)] * 2 + \
        [(ids["k4asima"], 2)] * 2 + [(ids["k4asimb"], 2)] * 2
    assert order == want
    assert envs[0] == envs[1] and envs[0]["testbeds"] == [str(a), str(b)]
    assert f"srperf compare {ids['k4asima']} {ids['k4asimb']}" in out
    # each run's end is said under its own id, with its own count of searches
    for run_id in ids.values():
        assert sum(x.startswith(f"run {run_id} finished: 4 searches") for x in
                   out.splitlines()) == 1, out


def test_two_testbeds_of_one_prefix_are_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    a = _simulated(tmp_path, "k4asimc")
    code = main(["run", "quick", "--testbed", str(a), "--testbed", str(a),
                 "--results", str(tmp_path / "r")])
    assert code == 2
    assert "prefix" in capsys.readouterr().err
    assert not (tmp_path / "r" / "srperf.sqlite").exists()


def test_a_testbed_that_fails_keeps_the_others_runs(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The second testbed's kernel cannot be fetched (no such package): its run fails
    at once, the simulated run goes on and keeps every trial."""
    good = _simulated(tmp_path, "k4asimd")
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "testbed" / "kernel-6.1.yaml").read_text()
                   .replace("name: kernel-6.1", "name: k4abad")
                   .replace("prefix: k61", "prefix: k4abad")
                   .replace("linux-image-6.1.0-56-cloud-amd64-unsigned",
                            "linux-image-0.0.0-k4a-no-such-kernel")
                   .replace("cpus: 1", f"cpus: 1\n  cache_dir: {tmp_path / 'cache'}"))
    results = tmp_path / "results"
    code = main(["run", "quick", "--testbed", str(good), "--testbed", str(bad),
                 "--repetitions", "2", "--results", str(results),
                 "--set", "behaviors=[ipv6]"])
    out = capsys.readouterr().out
    assert code == 1, out
    with ResultStore(results / "srperf.sqlite") as store:
        runs = {r["testbed"]: r for r in store.runs_rows()}
        assert runs["k4asimd"]["status"] == "finished" and runs["k4asimd"]["searches"] == 2
        assert runs["k4abad"]["status"] == "failed"
    assert "k4abad: failed" in out and "going on with k4asimd" in out


def test_every_trial_line_carries_the_testbed_label(tmp_path: Path) -> None:
    """A PDR search on an emulated SUT says so on every trial line it prints (the
    simulated testbed stands in for a TCG guest by its label: the guest test boots one)."""
    from srperf.config.loader import load_experiment, load_testbed
    from srperf.measure.orchestrator import Orchestrator
    from srperf.measure.progress import PlainProgress

    out = io.StringIO()
    exp = load_experiment(ROOT / "experiments" / "quick.yaml", ["behaviors=[ipv6]"])
    orch = Orchestrator(exp, load_testbed(_simulated(tmp_path, "k4asime")),
                        tmp_path / "results", progress=PlainProgress(out))
    orch.testbed.label_line = lambda line: f"[EMULATED tcg] {line}"  # type: ignore[method-assign]
    report = orch.run()
    trial_lines = [x for x in out.getvalue().splitlines() if " trial]" in x or "trial " in x]
    assert report.searches and len(trial_lines) >= report.searches[0][1].n_trials
    assert all("[EMULATED tcg]" in x for x in trial_lines), trial_lines
