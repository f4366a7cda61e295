"""Trending (srperf.results.trend): jumpavg grouping edge cases on SQLite and PostgreSQL,
the nightly verdict from the trend, and ``srperf trend``.

Histories are synthetic (srperf.results.trend_synth: a model, written straight into the
store as nightly runs); every test uses its own testbed name so that the PostgreSQL
database the module shares holds each test's history apart.
"""

from __future__ import annotations

import math
import random
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterator

import pytest

from srperf.cli.entry import main
from srperf.nightly import load_suite, run_nightly
from srperf.results.store import ResultStore
from srperf.results.trend import (NORMAL, PROGRESSION, REGRESSION, RunFilter, TrendSettings,
                                  group, new_regression, trends)
from srperf.results.trend_synth import night_date, nightly_runner, write_run

sys.path.insert(0, str(Path(__file__).parent))
import pg_server  # noqa: E402


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    why = pg_server.unavailable()
    if why:
        pytest.skip(f"PostgreSQL: {why}")
    server = pg_server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultStore]:
    if request.param == "sqlite":
        location: str | Path = tmp_path / "srperf.sqlite"
    else:
        location = request.getfixturevalue("pg_url")
    with ResultStore(location) as s:
        yield s


def _testbed() -> str:
    return f"t36-{uuid.uuid4().hex[:8]}"


def _noisy(n: int, base: float = 500.0, cv: float = 0.02, seed: int = 1) -> list[list[float]]:
    rnd = random.Random(seed)
    return [[base * (1 + rnd.gauss(0, cv)) * (1 + rnd.gauss(0, cv / 2)) for _ in range(3)]
            for _ in range(n)]


def _nights(store: ResultStore, tb: str, per_night: list[dict[tuple[str, int], Any]]
            ) -> list[str]:
    return [write_run(store, tb, night_date("2026-03-01", i + 1), figs,
                      run_id=f"{tb}-n{i + 1:02d}") for i, figs in enumerate(per_night)]


def _only(store: ResultStore, tb: str, test: str) -> Any:
    found = [t for t in trends(store, RunFilter(testbed=tb)) if t.key.test == test]
    assert len(found) == 1, [t.key.test for t in trends(store, RunFilter(testbed=tb))]
    return found[0]


def test_one_sample_is_one_normal_group(store: ResultStore) -> None:
    tb = _testbed()
    (run,) = _nights(store, tb, [{("end", 64): [500.0, 510.0, 505.0]}])
    t = _only(store, tb, "end 64B PDR@0.5%")
    assert len(t.groups) == 1 and t.cls == NORMAL and t.last_change is None
    assert t.current.avg == pytest.approx(505.0) and t.red_on(run) is None


def test_all_equal_values_never_change(store: ResultStore) -> None:
    tb = _testbed()
    runs = _nights(store, tb, [{("end", 64): [500.0] * 3}] * 12)
    t = _only(store, tb, "end 64B PDR@0.5%")
    assert len(t.groups) == 1 and t.current.stdev == 0.0 and t.cls == NORMAL
    assert not any(t.red_on(r) for r in runs)


def test_a_step_is_one_regression_named_with_its_night(store: ResultStore) -> None:
    tb = _testbed()
    h = _noisy(24)
    for night in h[15:]:
        night[:] = [v * 0.9 for v in night]
    runs = _nights(store, tb, [{("end", 64): v} for v in h])
    t = _only(store, tb, "end 64B PDR@0.5%")
    assert t.cls == REGRESSION and [g.cls for g in t.groups] == [NORMAL, REGRESSION]
    assert t.last_change.run_id == runs[15] and t.last_change.date.startswith("2026-03-16")
    assert t.last_change.change_pct == pytest.approx(-10.0, abs=2.0)
    assert t.current.avg == pytest.approx(450.0, rel=0.03)


def test_gaps_are_never_figures(store: ResultStore) -> None:
    tb = _testbed()
    h = _noisy(16)
    nights: list[dict[tuple[str, int], Any]] = [{("end", 64): v} for v in h]
    nights[4] = {("end", 64): ["generator_limited"] * 3}
    nights[7] = {("end", 64): "undecided"}
    nights[9] = {("end", 64): "unsupported"}
    _nights(store, tb, nights)
    t = _only(store, tb, "end 64B PDR@0.5%")
    assert t.gaps == 3 and len(t.points) == 13
    gaps = [s.gap for s in t.samples if s.is_gap]
    assert "generator_limited x3" in gaps[0] and "undecided" in gaps[1]
    assert gaps[2].startswith("unsupported")
    # the gaps did not pull the average down: one group, the noise's mean
    assert len(t.groups) == 1 and t.current.avg == pytest.approx(500.0, rel=0.03)


def test_a_test_appearing_mid_history_starts_there(store: ResultStore) -> None:
    tb = _testbed()
    h = _noisy(14)
    nights = [{("end", 64): v} for v in h]
    for i in range(8, 14):
        nights[i][("end_x", 64)] = [300.0, 301.0, 299.0]
    runs = _nights(store, tb, nights)
    t = _only(store, tb, "end_x 64B PDR@0.5%")
    assert [s.run_id for s in t.samples] == runs[8:]
    assert t.gaps == 0 and len(t.groups) == 1 and t.cls == NORMAL


def test_a_changed_frame_size_is_another_test(store: ResultStore) -> None:
    tb = _testbed()
    h = _noisy(16)
    # the suite moved from 64 B to 1500 B frames at night 9: 1500 B forwards fewer packets,
    # which is another test, not a regression of the 64 B one
    nights = [{("end", 64 if i < 8 else 1500): (v if i < 8 else [x * 0.6 for x in v])}
              for i, v in enumerate(h)]
    _nights(store, tb, nights)
    small = _only(store, tb, "end 64B PDR@0.5%")
    large = _only(store, tb, "end 1500B PDR@0.5%")
    assert len(small.points) == 8 and len(large.points) == 8
    assert small.cls == NORMAL and large.cls == NORMAL


def test_testbeds_have_their_own_histories(store: ResultStore) -> None:
    a, b = _testbed(), _testbed()
    h = _noisy(12)
    _nights(store, a, [{("end", 64): v} for v in h])
    _nights(store, b, [{("end", 64): [x * 0.8 for x in v]} for v in h])
    both = [t for t in trends(store) if t.key.testbed in (a, b)]
    assert len(both) == 2 and all(t.cls == NORMAL and len(t.points) == 12 for t in both)


def test_grouping_directions_and_thresholds() -> None:
    h = _noisy(20)
    up = [[v * 1.1 for v in x] for x in h[10:]]
    assert [g.cls for g in group(h[:10] + up)] == [NORMAL, PROGRESSION]
    # a time per packet that grows is the regression
    assert [g.cls for g in group(h[:10] + up, direction=-1)] == [NORMAL, REGRESSION]
    # a change smaller than min_change_pct is a group boundary, not an anomaly
    assert [g.cls for g in group(h[:10] + up, settings=TrendSettings(min_change_pct=15))] \
        == [NORMAL, NORMAL]
    with pytest.raises(ValueError, match="window"):
        TrendSettings(window=1)


def test_nightly_verdict_is_red_once_and_a_noisy_night_stays_green() -> None:
    h = _noisy(20, cv=0.03, seed=3)
    h[8] = [v * 0.94 for v in h[8]]             # one noisy night, -6 %
    for night in h[14:]:
        night[:] = [v * 0.85 for v in night]    # the step, night 15
    red = [k for k in range(2, 21)
           if new_regression(group(h[:k]), group(h[:k - 1]), k, 2) is not None]
    assert red == [15]


def _suite(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"""name: t36-suite
testbed: simulated
experiments: [quick]
results: {tmp_path / 'results'}
reports: {tmp_path / 'reports'}
{extra}""")
    return path


def test_nightly_is_red_on_the_night_of_the_step_and_junit_names_it(tmp_path: Path) -> None:
    h = _noisy(12, cv=0.02, seed=5)
    for night in h[9:]:
        night[:] = [v * 0.88 for v in night]
    runner = nightly_runner(h, "2026-04-01", "t36-night")

    suite = load_suite(_suite(tmp_path, "trend: {min_change_pct: 3}\n"))
    assert suite.trend.min_change_pct == 3 and suite.verdict == "trend"
    verdicts, junit10 = [], None
    for night in range(1, 13):
        verdicts.append(run_nightly(suite, runner=runner))
        if night == 10:   # the JUnit file is the suite's: rewritten every night
            junit10 = ET.parse(verdicts[-1].junit_path).getroot()
    assert [i + 1 for i, v in enumerate(verdicts) if v.regression] == [10]
    alert = verdicts[9].results[0].trend.alerts[0]
    assert alert.test == "end 64B PDR@0.5%" and alert.change_pct == pytest.approx(-12, abs=3)
    root = junit10
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["end 64B PDR@0.5%"]
    message = failed[0].find("failure").get("message")
    assert "trend regression" in message and "->" in message and "t36-night-10" in message
    # every night states the smallest step its trend would see (issue 48)
    v9 = verdicts[8].results[0].trend
    assert "smallest step red on its own night" in v9.texts["end 64B PDR@0.5%"]
    step = v9.steps["end 64B PDR@0.5%"]
    assert step["k"] == suite.trend.confirm + 1 and step["own_night_pct"] is not None
    assert "smallest step red on its own night" in verdicts[8].markdown


def test_suite_trend_settings_are_checked(tmp_path: Path) -> None:
    from srperf.errors import ConfigError

    with pytest.raises(ConfigError, match="min_change_pct"):
        load_suite(_suite(tmp_path, "trend: {min_change_pct: -1}\n"))
    with pytest.raises(ConfigError, match="verdict"):
        load_suite(_suite(tmp_path, "verdict: sometimes\n"))


def test_srperf_trend_lists_regressions_first(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as s:
        h = _noisy(20)
        steps = [[v * 0.9 for v in x] for x in h[12:]]
        _nights(s, "t36-cli", [{("end", 64): v, ("ipv6", 64): w}
                               for v, w in zip(h, h[:12] + steps)])
    assert main(["trend", "--results", str(tmp_path), "--html",
                 str(tmp_path / "trend.html")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("regression") and "ipv6 64B PDR@0.5%" in out[1]
    assert "2026-03-13 run t36-cli-n13" in out[1]
    assert float(out[1].split("(")[-1].split()[0]) == pytest.approx(-10, abs=2)
    assert out[2].startswith("normal") and "end 64B" in out[2]
    assert (tmp_path / "trend.html").stat().st_size > 10_000
    assert main(["trend", "--results", str(tmp_path), "--since", "2026-03-15"]) == 0
    since = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    # from 2026-03-15 on: 6 nights, all after the step, so no change inside them
    assert {(x[0], x[3], x[6]) for x in since} == {("normal", "end", "6"),
                                                   ("normal", "ipv6", "6")}
    with pytest.raises(SystemExit) as bad:
        main(["trend", "--results", str(tmp_path), "--since", "yesterday"])
    assert bad.value.code == 2 and "not an ISO date: 'yesterday'" in capsys.readouterr().err


def test_the_readme_worked_example_is_what_the_code_does() -> None:
    """The trending page's worked example (its nightly means, read from docs/trend.md), judged
    night by night: one group of nights 1-7 (497.7 +- 7.7), night 8 red at -9.4 %, nights
    9-10 green in that group (450.3, -9.5 %); min_change_pct 12 keeps night 8 green."""
    import re

    text = (Path(__file__).parents[1] / "docs" / "trend.md").read_text()
    example = text.split("**Worked example.**", 1)[1].split("\n\n", 1)[0]
    found = re.search(r"nightly means \(kpps\): ([\d.,\s]+?)\.\s", example)
    assert found, example
    means = [[float(v)] for v in re.split(r",\s*", found.group(1))]
    assert len(means) == 10

    def red_nights(settings: TrendSettings) -> list[int]:
        return [k for k in range(2, len(means) + 1)
                if new_regression(group(means[:k], settings=settings),
                                  group(means[:k - 1], settings=settings), k,
                                  settings.confirm) is not None]

    assert red_nights(TrendSettings()) == [8]
    first, last = group(means)
    assert (first.first, first.last, round(first.avg, 1), round(first.stdev, 1)) \
        == (0, 6, 497.7, 7.7)
    assert (last.cls, round(last.avg, 1), round(last.change_pct or 0, 1)) \
        == (REGRESSION, 450.3, -9.5)
    assert f"average {last.avg:.1f}, {last.change_pct:.1f} %" in example
    assert red_nights(TrendSettings(min_change_pct=12)) == []
    assert "min_change_pct: 12" in example


def _drifting(n: int, seed: int = 7) -> list[float]:
    """A host capacity factor per night that wanders by up to about +-15 % (a shared VM)."""
    rnd = random.Random(seed)
    return [1.0 + 0.15 * math.sin(i / 2.5) + rnd.gauss(0, 0.04) for i in range(n)]


def test_relative_test_cancels_a_common_drift_and_is_red_on_the_night_of_the_step(
        store: ResultStore) -> None:
    tb = _testbed()
    drift, rnd = _drifting(24), random.Random(3)
    nights: list[dict[tuple[str, int], Any]] = []
    for i, d in enumerate(drift):
        step = 0.9 if i >= 16 else 1.0
        reps = [d * (1 + rnd.gauss(0, 0.01)) for _ in range(3)]    # the host, per repetition
        nights.append({("end_x", 64): [600.0 * r * step * (1 + rnd.gauss(0, 0.01))
                                       for r in reps],
                       ("h_encaps", 64): [900.0 * r * (1 + rnd.gauss(0, 0.01)) for r in reps]})
    nights[9][("h_encaps", 64)] = ["generator_limited"] * 3    # no reference that night
    runs = _nights(store, tb, nights)
    settings = TrendSettings(reference="h_encaps")
    found = {t.key.test: t for t in trends(store, RunFilter(testbed=tb), settings)}
    assert "h_encaps 64B PDR@0.5% / h_encaps" not in found
    assert "end_x 64B PDR@0.5%" in found     # the raw figures stay trended
    rel = found["end_x 64B PDR@0.5% / h_encaps"]
    assert rel.key.unit == "%" and rel.key.behavior == "end_x"
    assert [s.is_gap for s in rel.samples].count(True) == 1
    assert "reference h_encaps" in rel.samples[9].gap
    assert rel.last_change is not None and rel.last_change.run_id == runs[16]
    assert rel.last_change.change_pct == pytest.approx(-10.0, abs=2.0)
    # night by night as the nightly judges: red on the night of the step only
    red = [r for r in runs if rel.red_on(r) or _red_then(store, tb, r, settings)]
    assert red == [runs[16]]


def _red_then(store: ResultStore, tb: str, run: str, settings: TrendSettings) -> bool:
    from srperf.results.trend_verdict import judge

    v = judge(store, run, RunFilter(testbed=tb), settings)
    return any(a.test == "end_x 64B PDR@0.5% / h_encaps" for a in v.alerts)


def test_a_reference_that_is_no_behavior_is_refused(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    from srperf.errors import ConfigError

    with pytest.raises(ConfigError, match=r"trend\.reference.*'end_y'"):
        load_suite(_suite(tmp_path, "trend: {reference: end_y}\n"))
    with pytest.raises(ConfigError, match="trend.reference"):
        load_suite(_suite(tmp_path, "trend: {reference: 'end; rm'}\n"))
    assert load_suite(_suite(tmp_path, "trend: {reference: h_encaps}\n")
                      ).trend.reference == "h_encaps"
    assert main(["trend", "--results", str(tmp_path / "r"), "--reference", "nope"]) == 2
    assert "--reference" in capsys.readouterr().err
