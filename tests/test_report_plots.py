"""The per-search plots and intervals of the report say only what was measured: no upper
bound where the search found no loss (generator-limited), generator-limited trials at the
rate they achieved, a legend that covers no axis or data, threshold and upper bound in two
colours, an open interval written one way in the CLI and the HTML.

The plots are drawn in the browser (reports/search_plots.js) from
:func:`search_plot_data`: the tests of what they show open a page of that data in
headless Chromium and read the SVG it drew."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from srperf.measure.orchestrator import describe_estimate
from srperf.results.names import interval_text
from srperf.results.plots import SearchTrials, search_plot_data
from srperf.results.report import templates_dir
from srperf.search.base import GoalResult

sys.path.insert(0, str(Path(__file__).parent))
import chromium  # noqa: E402

needs_chromium = pytest.mark.skipif(chromium.binary() is None,
                                    reason="chromium (Debian package) not installed")


def search_panels(tmp_path: Path, t: SearchTrials, search: dict,
                  threshold_pct: float) -> list[str]:
    """The two SVGs the report's script draws for one search, as Chromium drew them."""
    data = json.dumps([search_plot_data(t, search, threshold_pct)]).replace("</", "<\\/")
    script = (templates_dir() / "search_plots.js").read_text(encoding="utf-8")
    page = tmp_path / "search.html"
    page.write_text('<!DOCTYPE html><html><body><details class="searches" open>'
                    '<div class="plots" data-search="0"></div></details>'
                    f'<script type="application/json" id="srperf-search-data">{data}</script>'
                    f"<script>{script}</script></body></html>", encoding="utf-8")
    drawn = chromium.dump_dom(page).split("<script")[0]   # the page before its scripts
    svgs = re.findall(r"<svg.*?</svg>", drawn, re.S)
    assert len(svgs) == 2, svgs
    return svgs


def _trials(limited: bool) -> SearchTrials:
    df = pd.DataFrame({
        "run_id": ["r"] * 3, "search_seq": [1] * 3,
        "offered_kpps": [100.0, 50.0, 25.0], "received_kpps": [60.0, 50.0, 25.0],
        "delivery_ratio": [0.6, 1.0, 1.0], "loss_ratio": [0.0, 0.0, 0.0],
        "duration_s": [1.0] * 3, "generator_limited": [1 if limited else 0] * 3,
        "offered_rate_pps": [60_000.0, 49_000.0, 24_900.0]})
    return SearchTrials.split(df, ["run_id", "search_seq"])[("r", 1)]


def test_generator_limited_trials_are_drawn_at_the_rate_achieved() -> None:
    assert _trials(limited=True).offered_kpps == [60.0, 49.0, 24.9]
    assert _trials(limited=False).offered_kpps == [100.0, 50.0, 25.0]


@needs_chromium
def test_a_trial_stopped_early_says_so_in_its_tooltip(tmp_path: Path) -> None:
    df = pd.DataFrame({
        "run_id": ["r"] * 2, "search_seq": [1] * 2,
        "offered_kpps": [100.0, 50.0], "received_kpps": [60.0, 50.0],
        "delivery_ratio": [0.6, 1.0], "loss_ratio": [0.4, 0.0],
        "duration_s": [0.05, 1.0], "generator_limited": [0, 0],
        "stopped_early": [True, False]})
    t = SearchTrials.split(df, ["run_id", "search_seq"])[("r", 1)]
    assert t.stopped == [True, False]
    _, loss = search_panels(tmp_path, t, {"status": "ok", "lower_pps": 50_000.0,
                                "upper_pps": 100_000.0}, 0.5)
    assert loss.count("stopped early") == 1 and "100.0 kpps, 0.05 s" in loss


@needs_chromium
def test_no_upper_bound_where_the_search_found_no_loss(tmp_path: Path) -> None:
    limited = {"status": "generator_limited", "lower_pps": None, "upper_pps": 25_000.0}
    _, loss = search_panels(tmp_path, _trials(True), limited, 0.5)
    assert "upper bound" not in loss
    ok = {"status": "ok", "lower_pps": 40_000.0, "upper_pps": 45_000.0}
    _, loss = search_panels(tmp_path, _trials(False), ok, 0.5)
    assert "upper bound" in loss and "lower bound" in loss


def _legend(svg: str) -> dict[str, tuple[str, float]]:
    """label -> (colour of its mark, y of its text) for each legend entry."""
    found = re.findall(r'fill="(#[0-9a-f]{6})"[^>]*(?:/>|></(?:rect|circle)>)'
                       r'<text x="[0-9.]+" y="([0-9.]+)">([^<]+)</text>', svg)
    return {label: (color, float(y)) for color, y, label in found}


@needs_chromium
def test_threshold_and_upper_bound_have_their_own_colours_and_the_legend_is_below(
        tmp_path: Path) -> None:
    ok = {"status": "ok", "lower_pps": 40_000.0, "upper_pps": 45_000.0}
    fig4, loss = search_panels(tmp_path, _trials(False), ok, 0.5)
    legend = _legend(loss)
    assert legend["threshold 0.5 %"][0] != legend["upper bound"][0]
    assert len({c for c, _ in legend.values()}) == len(legend)
    height = 210   # the plot's own height: every legend row lies below it
    assert all(y > height for _, y in legend.values()), legend
    assert 'height="2' in loss and all(y > height for _, y in _legend(fig4).values())


def test_an_open_interval_is_written_one_way() -> None:
    assert interval_text(700.1, 777.6) == "700.1–777.6"
    assert interval_text(777.6, None) == "≥ 777.6"
    assert interval_text(None, 777.6) == "≤ 777.6"
    assert interval_text(float("nan"), float("nan")) == "-"
    g = GoalResult(0.5, 700_000.0, 800_000.0, estimate_pps=780_000.0,
                   estimate_low_pps=777_600.0, estimate_high_pps=None)
    assert describe_estimate(g) == ", estimate 780.0 kpps (95 % ≥ 777.6)"
