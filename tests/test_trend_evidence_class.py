"""``srperf trend``'s table never calls a step from a history without spread a
regression (issue 48): its class is "not enough evidence"."""

from __future__ import annotations

from pathlib import Path

from srperf.results.store import ResultStore
from srperf.results.trend import (NOT_ENOUGH_EVIDENCE, REGRESSION, RunFilter, format_table,
                                  trends)
from srperf.results.trend_synth import night_date, write_run


def _trend(tmp_path: Path, nights: list[list[float]]):
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        for i, v in enumerate(nights):
            write_run(store, "ab48", night_date("2026-03-01", i + 1), {("ipv6", 64): v},
                      run_id=f"ab48-n{i + 1}")
        (t,) = [t for t in trends(store, RunFilter(testbed="ab48"))
                if t.key.test.startswith("ipv6 64B PDR")]
    return t


def test_a_step_from_identical_nights_is_not_enough_evidence(tmp_path: Path) -> None:
    t = _trend(tmp_path, [[30.5, 30.5]] * 2 + [[25.8, 25.8]])
    # jumpavg does see a step down (before issue 48 the table said regression) ...
    assert t.last_change is not None and t.last_change.cls == REGRESSION
    # ... but the history before it never showed its noise
    assert t.cls == NOT_ENOUGH_EVIDENCE
    assert format_table([t]).splitlines()[1].startswith(NOT_ENOUGH_EVIDENCE)
    assert REGRESSION not in format_table([t])


def test_a_step_from_a_noisy_history_is_still_a_regression(tmp_path: Path) -> None:
    t = _trend(tmp_path, [[30.5, 30.1, 30.8], [30.2, 30.9, 30.4], [30.6, 30.0, 30.3],
                          [25.8, 25.5, 26.0], [25.6, 25.9, 25.7]])
    assert t.cls == REGRESSION
