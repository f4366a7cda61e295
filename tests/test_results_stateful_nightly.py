"""srperf nightly and export with stateful runs: a goodput drop fails the night."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from srperf.cli.entry import main
from srperf.nightly import load_suite, run_nightly
from srperf.results.store import ResultStore

sys.path.insert(0, str(Path(__file__).parent))
from stateful_samples import goodput_run  # noqa: E402


def test_nightly_judges_stateful_runs(tmp_path: Path) -> None:
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(f"""name: stateful-nightly
testbed: simulated
experiments: [quick]
compare: {{threshold_pct: 5}}
results: {tmp_path / 'results'}
reports: {tmp_path / 'reports'}
""")
    nights = iter([(1000.0, 1), (1000.0, 2), (900.0, 3)])   # the third night lost 10 %

    def runner(exp: Any, tb: Any, results_dir: Path) -> Any:
        # stands in for the orchestrator of a goodput experiment: synthetic samples
        mbps, seed = next(nights)
        with ResultStore(results_dir / "srperf.sqlite") as store:
            return SimpleNamespace(run_id=goodput_run(store, mbps, seed=seed,
                                                      experiment=exp.name, testbed=tb.name))

    suite = load_suite(suite_file)
    first = run_nightly(suite, runner=runner)
    assert not first.regression and first.results[0].comparison is None
    assert "goodput end 2 streams goodput_mbps" in first.results[0].cases
    second = run_nightly(suite, runner=runner)
    cmp2 = second.results[0].comparison
    assert cmp2 is not None and not second.regression
    assert {c.verdict for c in cmp2.stateful if c.metric == "goodput_mbps"} == {"no_change"}
    third = run_nightly(suite, runner=runner)
    assert third.regression
    cmp3 = third.results[0].comparison
    assert {(c.behavior, c.metric) for c in cmp3.stateful_regressions} == {
        ("end", "goodput_mbps"), ("end_dx6", "goodput_mbps")}
    assert cmp3.baseline_run == cmp2.current_run
    root = ET.parse(third.junit_path).getroot()
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert sorted(failed) == ["goodput end 2 streams goodput_mbps",
                              "goodput end_dx6 2 streams goodput_mbps"]
    html = third.results[0].report.read_text()
    assert "Stateful metrics" in html and 'id="stateful"' in html
    with ResultStore(tmp_path / "results" / "srperf.sqlite") as store:
        assert list(store.frame("comparisons")["verdict"])[-1] == "regression"


def test_export_includes_stateful_samples(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        run = goodput_run(store, 950.0, reps=3)
    assert main(["export", run, "--format", "json", "--results", str(tmp_path),
                 "-o", str(tmp_path / "out.json")]) == 0
    doc = json.loads((tmp_path / "out.json").read_text())
    rows = doc["stateful_samples"]
    assert len(rows) == 6 and json.loads(rows[0]["metrics"])["goodput_mbps"] > 0
    summ = [r for r in doc["stateful_summary"] if r["metric"] == "goodput_mbps"]
    assert len(summ) == 2 and all(r["n"] == 3 for r in summ)
    assert main(["export", run, "--format", "parquet", "--results", str(tmp_path),
                 "-o", str(tmp_path / "pq")]) == 0
    assert (tmp_path / "pq" / "stateful_samples.parquet").exists()
    assert (tmp_path / "pq" / "stateful_summary.parquet").exists()
