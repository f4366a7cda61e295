"""srperf compare on stateful samples: a planted 10 % goodput drop is a regression."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.results import compare
from srperf.results.store import ResultStore
from srperf.stateful.base import StatefulSample, Variant

sys.path.insert(0, str(Path(__file__).parent))
from stateful_samples import goodput_run  # noqa: E402


def _two_runs(tmp_path: Path, current_mbps: float) -> tuple[str, str]:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        base = goodput_run(store, 1000.0, seed=1)
        cur = goodput_run(store, current_mbps, seed=2, behaviors=("end", "end_dx6"))
    return base, cur


def test_planted_goodput_regression_exits_1(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        base = goodput_run(store, 1000.0, seed=1)
        cur = goodput_run(store, 1000.0, seed=2, behaviors=("end",))
        # end_dx6 lost 10 % of its goodput
        rng = random.Random(3)
        run = cur
        for rep in range(1, 11):
            store.add_stateful_sample(
                run, "goodput", "end_dx6", "linux", Variant("2 streams", {"streams": 2}), rep,
                StatefulSample({"goodput_mbps": rng.gauss(900.0, 18.0),
                                "retransmits": float(round(rng.gauss(20, 2)))}),
                duration_s=5.0, primary_metric="goodput_mbps")
    rc = main(["compare", base, cur, "--threshold", "5", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    line = next(x for x in out.splitlines() if "| end_dx6 |" in x and "goodput_mbps" in x)
    assert "regression" in line
    end = next(x for x in out.splitlines() if "| end |" in x and "goodput_mbps" in x)
    assert "no_change" in end
    assert "**regression**" in out


def test_no_change_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = _two_runs(tmp_path, 1000.0)
    rc = main(["compare", base, cur, "--threshold", "5", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "| regression |" not in out
    goodput = [x for x in out.splitlines() if "goodput_mbps" in x]
    assert len(goodput) == 2 and all("| no_change |" in x for x in goodput)


def test_lower_is_better_and_failures(tmp_path: Path) -> None:
    v = Variant("1KB")
    with ResultStore(tmp_path / "r.sqlite") as store:
        runs = []
        for lat, fail in ((2.0, False), (2.5, True)):
            run = store.begin_run("http", "virtual", "linux", {})
            for rep in range(1, 6):
                store.add_stateful_sample(run, "http", "end", "linux", v, rep, StatefulSample(
                    {"requests_per_s": 1000.0 + rep, "latency_p50_ms": lat + rep / 100}),
                    primary_metric="requests_per_s")
                store.add_stateful_sample(
                    run, "http", "end_b6", "linux", v, rep,
                    StatefulSample({}, status="failed", reason="wrk: no connection")
                    if fail else StatefulSample({"requests_per_s": 500.0 + rep}),
                    primary_metric="requests_per_s")
            runs.append(run)
        result = compare.compare_runs(store, runs[0], runs[1], 5.0)
    by = {(c.behavior, c.metric): c for c in result.stateful}
    lat = by[("end", "latency_p50_ms")]
    assert lat.verdict == "regression" and not lat.higher_is_better   # +25 % latency
    assert by[("end", "requests_per_s")].verdict == "no_change"
    b6 = by[("end_b6", "requests_per_s")]
    assert b6.verdict == "regression" and "wrk: no connection" in b6.reason
    assert result.verdict == "regression"
    assert set(result.stateful_frame()["verdict"]) == {"regression", "no_change"}


def test_metric_direction() -> None:
    assert compare.metric_direction("goodput_mbps") == 1
    assert compare.metric_direction("requests_per_s") == 1
    assert compare.metric_direction("latency_p99_ms") == -1
    assert compare.metric_direction("retransmits") == -1
    assert compare.metric_direction("sut_cpu_busy_pct") == 0


def test_zero_baseline_and_bootstrap(tmp_path: Path) -> None:
    v = Variant("1 stream")
    with ResultStore(tmp_path / "r.sqlite") as store:
        runs = []
        for retrans in ((0.0,) * 4, (0.0, 3.0, 0.0, 1.0)):
            run = store.begin_run("goodput", "virtual", "linux", {})
            for rep, r in enumerate(retrans, 1):
                store.add_stateful_sample(run, "goodput", "end", "linux", v, rep,
                                          StatefulSample({"goodput_mbps": 900.0 + rep,
                                                          "retransmits": r}),
                                          primary_metric="goodput_mbps")
            runs.append(run)
        for method in ("welch", "bootstrap"):
            result = compare.compare_runs(store, runs[0], runs[1], 5.0, method)
            by = {c.metric: c for c in result.stateful}
            assert by["retransmits"].verdict == "inconclusive"
            assert "baseline mean 0" in by["retransmits"].reason
            assert by["goodput_mbps"].verdict == "no_change"
        same = compare.compare_runs(store, runs[0], runs[0], 5.0, "bootstrap")
        assert {c.metric: c.verdict for c in same.stateful}["retransmits"] == "no_change"
