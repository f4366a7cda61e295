"""Run-to-run comparison: verdicts, statuses, and the ``srperf compare`` exit code."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
import pytest

from srperf.cli.entry import main
from srperf.results.compare import (IMPROVEMENT, INCONCLUSIVE, NO_CHANGE, NOT_COMPARABLE,
                                    REGRESSION, compare_frames, judge)
from srperf.results.stats import Difference
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import GoalResult, SearchResult


def _searches(values: dict[str, list[float]], status: str = "ok") -> pd.DataFrame:
    rows = []
    for beh, vals in values.items():
        for rep, v in enumerate(vals, start=1):
            rows.append({"run_id": "r", "behavior": beh, "forwarder": "linux",
                         "packet_size": 64, "repetition": rep, "threshold_pct": 0.5,
                         "status": status, "lower_pps": v * 1000, "upper_pps": v * 1010,
                         "note": ""})
    return pd.DataFrame(rows)


def _noisy(mean: float, cv_pct: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(mean, mean * cv_pct / 100) for _ in range(n)]


NO_OUTCOMES = pd.DataFrame(columns=["run_id", "behavior", "packet_size", "status", "reason"])


@pytest.mark.parametrize("method", ["welch", "bootstrap"])
def test_planted_regression_and_wobble(method: str) -> None:
    # Ten repetitions with 1 % CV (this VM's searches: 1-18 %); "end" loses 10 %,
    # "ipv6" moves by 0.5 %, "h_insert" gains 10 %.
    base = {"end": _noisy(800, 1, 10, 1), "ipv6": _noisy(1000, 1, 10, 2),
            "h_insert": _noisy(900, 1, 10, 3)}
    cur = {"end": [0.9 * v for v in _noisy(800, 1, 10, 4)],
           "ipv6": [1.005 * v for v in _noisy(1000, 1, 10, 5)],
           "h_insert": [1.1 * v for v in _noisy(900, 1, 10, 6)]}
    c = compare_frames(_searches(base), _searches(cur), NO_OUTCOMES, NO_OUTCOMES,
                       threshold_pct=5.0, method=method)
    by = {x.behavior: x for x in c.changes}
    assert by["end"].verdict == REGRESSION
    assert by["end"].diff.delta_pct == pytest.approx(-10, abs=2)
    assert by["ipv6"].verdict in (INCONCLUSIVE, NO_CHANGE)
    assert by["h_insert"].verdict == IMPROVEMENT
    assert c.verdict == REGRESSION and [x.behavior for x in c.regressions] == ["end"]
    frame = c.to_frame()
    assert set(frame["verdict"]) == {REGRESSION, IMPROVEMENT, by["ipv6"].verdict}


def test_noise_wider_than_threshold_is_inconclusive() -> None:
    # 15 % CV with 3 repetitions: a 6 % drop cannot be told from noise.
    base = {"end": [800.0, 920.0, 700.0]}
    cur = {"end": [750.0, 860.0, 660.0]}
    c = compare_frames(_searches(base), _searches(cur), NO_OUTCOMES, NO_OUTCOMES, 5.0)
    assert c.changes[0].verdict == INCONCLUSIVE
    assert c.changes[0].diff.low_pct < -5 < c.changes[0].diff.high_pct


def test_judge_boundaries() -> None:
    def d(lo: float, hi: float) -> Difference:
        return Difference(0, lo, hi, (lo + hi) / 2, lo, hi, "welch")

    assert judge(d(-12, -6), 5)[0] == REGRESSION
    assert judge(d(-6, -4), 5)[0] == INCONCLUSIVE
    assert judge(d(-4, 4), 5)[0] == NO_CHANGE
    assert judge(d(6, 9), 5)[0] == IMPROVEMENT
    assert judge(d(math.nan, math.nan), 5)[0] == INCONCLUSIVE


def test_statuses_are_shown_never_numbers() -> None:
    base = _searches({"end": [800.0, 810.0]})
    limited = _searches({"end": [math.nan, math.nan]}, status="generator_limited")
    c = compare_frames(base, limited, NO_OUTCOMES, NO_OUTCOMES)
    x = c.changes[0]
    assert x.verdict == NOT_COMPARABLE and x.current is None and x.diff is None
    assert "generator_limited" in x.current_status and "generator_limited" in x.reason
    # Unsupported on both sides: only an outcome, no search at all.
    unsup = pd.DataFrame([{"run_id": "r", "behavior": "end_dt4", "packet_size": 64,
                           "status": "unsupported", "reason": "Error: no VRF"}])
    c = compare_frames(base, base, unsup, unsup)
    dt4 = [x for x in c.changes if x.behavior == "end_dt4"][0]
    assert dt4.verdict == NOT_COMPARABLE and "no VRF" in dt4.reason
    # Measured before, now failing to verify: a regression.
    failed = pd.DataFrame([{"run_id": "r", "behavior": "end", "packet_size": 64,
                            "status": "verify_failed", "reason": "DA not rewritten"}])
    c = compare_frames(base, base.iloc[0:0], NO_OUTCOMES, failed)
    assert c.changes[0].verdict == REGRESSION and "verify_failed" in c.changes[0].reason


def _store_run(store: ResultStore, values: dict[str, list[float]]) -> str:
    run = store.begin_run("exp", "tb", "linux", {})
    seq = 0
    for beh, vals in values.items():
        for rep, v in enumerate(vals, start=1):
            seq += 1
            store.add_search(run, TrialKey(beh, "linux", 64, rep, seq), SearchResult(
                "bisect", [GoalResult(0.5, v * 1000, v * 1005, "ok")], []))
    store.end_run(run, "finished")
    return run


def test_cli_compare_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        base = _store_run(store, {"end": _noisy(800, 1, 8, 1)})
        same = _store_run(store, {"end": [1.005 * v for v in _noisy(800, 1, 8, 2)]})
        worse = _store_run(store, {"end": [0.9 * v for v in _noisy(800, 1, 8, 3)]})
    assert main(["compare", base, same, "--results", str(tmp_path)]) == 0
    assert main(["compare", base, worse, "--results", str(tmp_path),
                 "--threshold", "5"]) == 1
    out = capsys.readouterr().out
    assert "**regression**" in out and "| end | 64 |" in out
    # A looser threshold turns the same 10 % drop into no regression.
    # ("last" is the newest run: worse.)
    assert main(["compare", base, "last", "--results", str(tmp_path),
                 "--threshold", "20", "--method", "bootstrap"]) == 0
    assert main(["compare", base, "nosuchrun", "--results", str(tmp_path)]) == 2
    assert main(["compare", base, worse[:9], "--results", str(tmp_path)]) == 2  # ambiguous
