"""No verdict from too little evidence (issue 48): fewer than 3 repetitions a side, or a
side with zero variance, is "not enough evidence", never a regression; a PDR's interval
carries its search bracket."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from srperf.cli.entry import main
from srperf.results.compare import REGRESSION, compare_frames
from srperf.results.stats import NOT_ENOUGH_EVIDENCE, evidence_problem, welch_diff
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import GoalResult, SearchResult

NO_OUTCOMES = pd.DataFrame(columns=["run_id", "behavior", "packet_size", "status", "reason"])


def _searches(vals: list[float], halfwidth: float) -> pd.DataFrame:
    """Searches of ``ipv6`` 64 B with PDRs ``vals`` (kpps), brackets [v, v + 2 h]."""
    return pd.DataFrame([{"run_id": "r", "behavior": "ipv6", "forwarder": "linux",
                          "packet_size": 64, "repetition": i, "threshold_pct": 0.5,
                          "status": "ok", "lower_pps": v * 1000,
                          "upper_pps": (v + 2 * halfwidth) * 1000, "note": ""}
                         for i, v in enumerate(vals, 1)])


def test_the_issues_example_is_not_enough_evidence() -> None:
    # 2 repetitions a side, identical PDRs: 30.5, 30.5 against 25.8, 25.8 kpps.
    c = compare_frames(_searches([30.5, 30.5], 4.0), _searches([25.8, 25.8], 4.0),
                       NO_OUTCOMES, NO_OUTCOMES, 5.0)
    x = c.changes[0]
    assert x.verdict == NOT_ENOUGH_EVIDENCE and x.verdict != REGRESSION
    assert "fewer than 3" in x.reason
    assert c.verdict == NOT_ENOUGH_EVIDENCE and not c.regressions
    # the interval is no longer a point: the brackets widen it
    assert x.diff.low_pct < x.diff.delta_pct < x.diff.high_pct
    assert x.diff.delta_pct == pytest.approx(100 * (25.8 / 30.5 - 1))


def test_zero_variance_with_enough_repetitions_is_not_enough_evidence() -> None:
    c = compare_frames(_searches([30.5] * 4, 0.0), _searches([25.8, 25.0, 26.1, 25.5], 0.0),
                       NO_OUTCOMES, NO_OUTCOMES, 5.0)
    assert c.changes[0].verdict == NOT_ENOUGH_EVIDENCE
    assert "zero variance in the baseline" in c.changes[0].reason


def test_enough_evidence_still_gives_a_verdict() -> None:
    c = compare_frames(_searches([30.5, 30.1, 30.9], 0.2), _searches([25.8, 25.5, 26.0], 0.2),
                       NO_OUTCOMES, NO_OUTCOMES, 5.0)
    assert c.changes[0].verdict == REGRESSION


def test_evidence_problem_rules() -> None:
    assert evidence_problem([1.0, 2.0], [1.0, 2.0, 3.0]) is not None
    assert evidence_problem([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is not None
    assert evidence_problem([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) is None


def test_bracket_halfwidth_is_carried_into_the_interval() -> None:
    # identical values: without brackets a zero-width interval, with them h^2/3 per value
    bare = welch_diff([30.5, 30.5], [25.8, 25.8])
    assert bare.low == bare.high == pytest.approx(-4.7)
    h = 3.0
    wide = welch_diff([30.5, 30.5], [25.8, 25.8], baseline_halfwidths=[h, h],
                      current_halfwidths=[h, h])
    se = math.sqrt(2 * (h * h / 3) / 2)
    assert wide.high - wide.delta == pytest.approx(wide.delta - wide.low)
    assert wide.high - wide.delta > 1.96 * se   # a t quantile, wider than normal
    # the brackets only ever widen an interval
    noisy = welch_diff([30.0, 31.0, 30.2], [25.0, 26.1, 25.4])
    noisier = welch_diff([30.0, 31.0, 30.2], [25.0, 26.1, 25.4], baseline_halfwidths=[1.0] * 3,
                         current_halfwidths=[1.0] * 3)
    assert noisier.high - noisier.low > noisy.high - noisy.low


def _store_run(store: ResultStore, values: list[float], bracket_kpps: float) -> str:
    run = store.begin_run("exp", "tb", "linux", {})
    for rep, v in enumerate(values, start=1):
        store.add_search(run, TrialKey("ipv6", "linux", 64, rep, rep), SearchResult(
            "bisect", [GoalResult(0.5, v * 1000, (v + bracket_kpps) * 1000, "ok")], []))
    store.end_run(run, "finished")
    return run


def test_cli_compare_of_the_issues_example(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        a = _store_run(store, [30.5, 30.5], 8.0)
        b = _store_run(store, [25.8, 25.8], 8.0)
    assert main(["compare", a, b, "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "**not_enough_evidence**" in out and "**regression**" not in out
    assert "[-15.57, -15.57]" not in out


def test_trend_step_from_a_history_without_spread_is_not_red(tmp_path: Path) -> None:
    """A night whose figure falls 15 % below a history of identical values (a search grid
    point, its noise never seen) is not red: not enough evidence."""
    from srperf.results.trend import RunFilter, trends
    from srperf.results.trend_synth import night_date, write_run
    from srperf.results.trend_verdict import judge

    with ResultStore(tmp_path / "srperf.sqlite") as store:
        figs = [[30.5, 30.5]] * 2 + [[25.8, 25.8]]
        runs = [write_run(store, "ab48", night_date("2026-03-01", i + 1),
                          {("ipv6", 64): v}, run_id=f"ab48-n{i + 1}")
                for i, v in enumerate(figs)]
        (t,) = [t for t in trends(store, RunFilter(testbed="ab48"))
                if t.key.test.startswith("ipv6 64B PDR")]
        assert t.red_on(runs[-1]) is None
        verdict = judge(store, runs[-1], RunFilter(testbed="ab48"))
        assert not verdict.red
        text = verdict.texts[t.key.test]
        assert text.startswith("trend: not enough evidence") or "regression" not in text
