"""The nightly job on the simulated SUT: store, compare with the last good run, JUnit."""

from __future__ import annotations

import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.errors import ConfigError
from srperf.nightly import load_suite, run_nightly
from srperf.results.store import ResultStore


def _suite(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"""name: sim-nightly
testbed: simulated
experiments: [quick]
repetitions: 3
compare: {{threshold_pct: 5, method: welch}}
results: {tmp_path / 'results'}
reports: {tmp_path / 'reports'}
{extra}""")
    return path


def _junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def test_nightly_twice_then_a_planted_regression(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # the one-baseline comparison (the option kept beside the trend verdict): its
    # planted 12 % better baseline is one night, not a history a trend could group
    suite = _suite(tmp_path, "verdict: baseline\n")
    # First night: no baseline yet; every behavior is a passing test case.
    assert main(["nightly", str(suite)]) == 0
    junit = tmp_path / "reports" / "junit-sim-nightly.xml"
    root = _junit(junit)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert int(root.get("tests")) == 7  # quick.yaml: 7 behaviors
    first_out = capsys.readouterr().out
    assert "no baseline" in first_out
    db = tmp_path / "results" / "srperf.sqlite"
    with ResultStore(db) as store:
        runs = store.frame("runs")
        first = runs.loc[0, "run_id"]
        assert (runs.loc[0, "purpose"], runs.loc[0, "suite"]) == ("nightly", "sim-nightly")

    # Second night: the seeded model repeats itself, so no regression.
    assert main(["nightly", str(suite)]) == 0
    out = capsys.readouterr().out
    assert f"baseline {first}" in out
    assert "**MODEL: a run compared here comes from the simulated SUT" in out
    html = sorted((tmp_path / "reports").glob("nightly-sim-nightly-quick-*.html"))
    assert len(html) == 2
    # run ids share their second when the model runs fast: pick the second night's by name
    second_html = [h for h in html if first not in h.name]
    assert len(second_html) == 1 and "Comparison with baseline" in second_html[0].read_text()

    # Plant a 12 % better baseline: the next night is a 10.7 % drop, a regression.
    con = sqlite3.connect(db)
    second = con.execute("SELECT run_id FROM runs ORDER BY started DESC").fetchone()[0]
    con.execute("UPDATE searches SET lower_pps = lower_pps * 1.12 WHERE run_id = ?", (second,))
    con.commit()
    con.close()
    assert main(["nightly", str(suite)]) == 1
    root = _junit(junit)
    failures = root.findall(".//testcase/failure")
    assert int(root.get("failures")) == len(failures) >= 6
    assert all(f.get("type") == "regression" for f in failures)
    assert "regression" in failures[0].get("message")
    # end_dt4 is unsupported nowhere in the model; the suite name is in the XML.
    assert root.find("testsuite").get("name") == "sim-nightly.quick"
    with ResultStore(db) as store:
        verdicts = list(store.frame("comparisons")["verdict"])
        # night 2 repeats the seeded model: no change, or (for a behavior whose model
        # repetitions are identical, zero variance) not enough evidence; never a verdict
        assert verdicts[0] == "no_baseline" and verdicts[2] == "regression"
        assert verdicts[1] in ("no_change", "not_enough_evidence")
        regressed = store.frame("comparisons")["run_id"].iloc[-1]
        # A regressed night is never a baseline: the next one compares with `second`.
        assert store.last_good_run("quick", "simulated", "sim-nightly") == second
        assert regressed != second
    capsys.readouterr()


def test_nightly_into_a_shared_database(tmp_path: Path) -> None:
    shared = tmp_path / "shared.sqlite"
    suite = load_suite(_suite(tmp_path, f"database: {shared}\nalgorithm: bisect\n"))
    lines: list[str] = []
    out = run_nightly(suite, progress=lines.append)
    assert not out.regression and out.junit_path and out.junit_path.exists()
    run_id = out.results[0].run_id
    with ResultStore(shared) as store:
        assert store.frame("runs")["run_id"].tolist() == [run_id]
        assert len(store.frame("trials", run_id)) > 20
    assert any("no_baseline" in line for line in lines)


def test_suite_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nexperiments: [quick]\ncompare: {threshold_pct: -1}\n")
    with pytest.raises(ConfigError, match="threshold_pct"):
        load_suite(bad)
    bad.write_text("name: x\nexperiments: [quick]\nnights: 3\n")
    with pytest.raises(ConfigError, match="nights"):
        load_suite(bad)
    assert main(["nightly", str(bad)]) == 2


def test_a_run_that_cannot_start_is_a_junit_error(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))

    def broken(exp: object, tb: object, results_dir: Path) -> object:
        raise ConfigError("quick.yaml", "forwarder", "vpp", "the virtual testbed runs Linux")

    out = run_nightly(suite, progress=lambda msg: None, runner=broken)
    assert out.errors and not out.regression and out.results[0].run_id is None
    root = ET.parse(out.junit_path).getroot()
    assert root.get("errors") == "1" and "runs Linux" in root.find(".//error").get("message")
