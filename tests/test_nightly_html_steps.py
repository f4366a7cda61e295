"""The nightly's own HTML report states, per test, the smallest step its trend would see
(issue 48): the figure and its label for a test with history, and why there is none for
a test with too little.  Planted nights (no SUT): each night's run is written straight
into the store, as the nightly would store it."""

from __future__ import annotations

import html
import random
from pathlib import Path
from typing import Any

import pytest

from srperf.nightly import load_suite, run_nightly
from srperf.results.store import ResultStore
from srperf.results.trend_power import StepVisibility
from srperf.results.trend_synth import nightly_runner

TEST = "end 64B PDR@0.5%"


def _suite(tmp_path: Path, verdict: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"""name: k5t-html
testbed: simulated
experiments: [quick]
verdict: {verdict}
results: {tmp_path / 'results'}
reports: {tmp_path / 'reports'}
""")
    return path


def _nights(tmp_path: Path, verdict: str, n: int) -> list[Any]:
    rnd = random.Random(3)
    figures = [[500.0 * (1 + rnd.gauss(0, 0.02)) for _ in range(3)] for _ in range(n)]
    runner = nightly_runner(figures, "2026-05-01", "k5t-night")
    suite = load_suite(_suite(tmp_path, verdict))
    return [run_nightly(suite, runner=runner) for _ in range(n)]


def _section(path: Path) -> str:
    text = html.unescape(path.read_text())
    assert text.count('id="trend-steps"') == 1, "no 'What the trend can see' section"
    start = text.index('id="trend-steps"')
    return text[start:text.index("</table>", start)]


@pytest.mark.parametrize("verdict", ["trend", "baseline"])
def test_nightly_html_shows_the_smallest_visible_step(tmp_path: Path, verdict: str) -> None:
    results = _nights(tmp_path, verdict, 8)
    first, last = results[0].results[0], results[-1].results[0]
    assert first.report is not None and last.report is not None
    # the first night: one night of history, no figure, and the HTML says why
    early = _section(first.report)
    assert TEST in early and "smallest visible step: not known (not enough evidence" in early
    # the eighth night: the figure, as the trend's cell shows it, beside its label
    with ResultStore(tmp_path / "results" / "srperf.sqlite") as store:
        from srperf.results.trend import RunFilter
        from srperf.results.trend_verdict import judge

        verdict_8 = judge(store, last.run_id, RunFilter(testbed="simulated",
                                                        suite="k5t-html", purpose="nightly"))
    step = StepVisibility(**verdict_8.steps[TEST])   # type: ignore[arg-type]
    assert step.known and step.own_night_pct is not None
    late = _section(last.report)
    assert "smallest visible step (own night / within k nights)" in late
    row = late[late.index(f'<td class="l">{TEST}</td>'):]
    assert row.split("</tr>")[0].count(step.short()) == 1
    assert "smallest step red on its own night" in row.split("</tr>")[0]
