"""Results store (SQLite, a row per finished trial) and the repetition summary."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from srperf.drivers.base import TrialResult
from srperf.results.store import ResultStore, TrialKey
from srperf.results.summary import format_table, summarize, t95
from srperf.search.base import GoalResult, SearchResult


def trial(rate: float, received: int, intended: int = 1000, **kw: object) -> TrialResult:
    return TrialResult(rate_pps=rate, duration_s=1.0, intended=intended, sent=intended,
                       refused=0, received=received, elapsed_s=1.0, **kw)  # type: ignore[arg-type]


def test_trial_result_ratios() -> None:
    t = TrialResult(rate_pps=1000, duration_s=1, intended=1000, sent=990, refused=10,
                    received=985, elapsed_s=1.0)
    assert t.offered == 1000 and t.lost == 15
    assert t.loss_ratio == pytest.approx(0.015) and t.delivery_ratio == pytest.approx(0.985)
    assert t.usable
    assert not trial(1, 1, generator_limited=True).usable


def test_trials_are_durable_before_the_run_ends(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    run = store.begin_run("exp", "tb", "linux", {"kernel": "x"})
    key = TrialKey("end", "linux", 64, 1, 1)
    store.add_trial(run, key, trial(1e5, 1000))
    store.add_trial(run, key, trial(2e5, 900, extra={"dataplane": {"hits": 3}}))
    # Another connection sees both rows although the run never ended (crash-safe).
    rows = sqlite3.connect(tmp_path / "r.sqlite").execute(
        "SELECT rate_pps, received, extra FROM trials ORDER BY id").fetchall()
    assert rows == [(1e5, 1000, "{}"), (2e5, 900, '{"dataplane": {"hits": 3}}')]
    runs = store.frame("runs")
    assert runs.loc[0, "status"] == "running"
    store.end_run(run, "failed")
    assert store.frame("runs").loc[0, "status"] == "failed"
    assert store.last_run_id() == run
    store.close()


def test_the_trials_frame_marks_trials_stopped_early(tmp_path: Path) -> None:
    from srperf.results import frames

    store = ResultStore(tmp_path / "r.sqlite")
    run = store.begin_run("exp", "tb", "linux", {})
    key = TrialKey("end", "linux", 64, 1, 1)
    store.add_trial(run, key, trial(1e5, 1000))
    store.add_trial(run, key, trial(2e5, 700, extra={
        "stopped": {"planned_s": 1.0, "planned_frames": 200_000, "stop_lost": 4000}}))
    df = frames.trials(store, run)
    assert df["stopped_early"].tolist() == [False, True]
    store.close()


def _search(lower: float, upper: float, status: str = "ok") -> SearchResult:
    return SearchResult("bisect", [GoalResult(0.5, lower, upper, status)],
                        [trial(lower, 1000)])


def test_summary_statistics(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    run = store.begin_run("exp", "tb", "linux", {})
    for rep, lower in enumerate([900e3, 1000e3, 1100e3], start=1):
        store.add_search(run, TrialKey("ipv6", "linux", 64, rep, rep), _search(lower, lower + 5e3))
    store.add_search(run, TrialKey("end", "linux", 64, 1, 4), _search(700e3, 705e3))
    store.add_outcome(run, "end_dt4", "linux", 64, "unsupported", "Error: no VRF")
    s = summarize(store.frame("searches", run), store.frame("outcomes", run))
    ipv6 = s[s.behavior == "ipv6"].iloc[0]
    assert ipv6["n"] == 3 and ipv6["mean_kpps"] == pytest.approx(1000)
    assert ipv6["std_kpps"] == pytest.approx(100)
    assert ipv6["cv_pct"] == pytest.approx(10)
    assert ipv6["ci95_kpps"] == pytest.approx(4.3027 * 100 / math.sqrt(3), rel=1e-4)
    assert (ipv6["min_kpps"], ipv6["max_kpps"]) == (900, 1100)
    end = s[s.behavior == "end"].iloc[0]
    assert end["n"] == 1 and math.isnan(end["cv_pct"])
    dt4 = s[s.behavior == "end_dt4"].iloc[0]
    assert dt4["status"] == "unsupported" and "VRF" in dt4["reason"]
    text = format_table(s)
    assert "unsupported: Error: no VRF" in text and "1000.0" in text
    store.close()


def test_below_min_is_not_averaged() -> None:
    searches = pd.DataFrame([
        {"behavior": "x", "packet_size": 64, "threshold_pct": 0.5, "status": "ok",
         "lower_pps": 1e5, "upper_pps": 1.1e5},
        {"behavior": "x", "packet_size": 64, "threshold_pct": 0.5, "status": "below_min",
         "lower_pps": None, "upper_pps": 1e4},
    ])
    s = summarize(searches)
    assert s.iloc[0]["n"] == 1 and "below_min x1" in s.iloc[0]["status"]


def test_t95() -> None:
    # Student t for every n (the old table fell back to 1.96 beyond 30 degrees of freedom)
    assert t95(2) == pytest.approx(12.706, rel=1e-4) and t95(100) == pytest.approx(1.9842, rel=1e-4)
    assert math.isnan(t95(1))
