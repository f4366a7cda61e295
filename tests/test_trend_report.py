"""The HTML trend page: its content, and the page as headless Chromium draws it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from srperf.results.store import ResultStore
from srperf.results.trend import trends
from srperf.results.trend_report import write_trend_report
from srperf.results.trend_synth import Shape, fill

sys.path.insert(0, str(Path(__file__).parent))
import chromium  # noqa: E402


@pytest.fixture
def page(tmp_path: Path) -> Path:
    """Two testbeds x three tests x 30 nights: a -12 % step in ``end`` on lab1 from
    night 20, nothing elsewhere (a model: srperf.results.trend_synth)."""
    tests = [("end", 64), ("ipv6", 64), ("end_x", 64)]
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        fill(store, tests, 30, 0.02, {("end", 64): Shape("step", -12.0, 20)}, testbed="lab1")
        fill(store, tests, 30, 0.02, testbed="lab2", seed=7)
        out = write_trend_report(trends(store), tmp_path / "trend.html", title="t36 trend")
    return out


def test_index_lists_the_regression_first_and_charts_carry_hover_details(page: Path) -> None:
    html = page.read_text()
    rows = re.findall(r'<tr class="(\w+)"><td class="l cls">', html)
    assert rows[0] == "regression" and rows.count("regression") == 1 and len(rows) == 6
    first = html.split('<tr class="regression">', 1)[1].split("</tr>", 1)[0]
    assert "linux end 64B PDR@0.5%" in first and "lab1" in first
    assert "run lab1-n020" in first and "2026-01-20" in first
    # hover: run id, kernel, forwarder, commit of each night
    assert "run lab1-n020\n2026-01-20T02:00:00\nend 64B PDR@0.5%:" in html
    assert "kernel 6.18.20" in html and "commit c0020" in html
    assert "regression from run lab1-n020 (2026-01-20): -1" in html
    # one row of charts per test, both testbeds side by side
    assert html.count('class="plot"') == 6 and html.count('<div class="panels">') == 3


@pytest.mark.skipif(chromium.binary() is None, reason="chromium (Debian package) not installed")
def test_trend_page_renders_in_headless_chromium(page: Path, tmp_path: Path) -> None:
    from PIL import Image

    png = tmp_path / "shot.png"
    size = (1000, 1600)
    boxes = chromium.screenshot(page, png, size, "svg.plot, #trend-index")
    assert len(boxes) == 1 + 6
    index = boxes[0]
    assert index[2] > 500 and index[3] > 6 * 15     # laid out: header + 6 rows
    charts = boxes[1:]
    # the first row of charts is the regressed test, its two testbeds side by side
    assert charts[0][1] == charts[1][1] and charts[1][0] > charts[0][0] + charts[0][2] - 1
    img = Image.open(png).convert("RGB")
    x, y, w, h = charts[0]
    assert y + h < size[1], "the first chart is below the fold"
    area = img.crop((x + 2, y + 2, x + w - 2, y + h - 2))
    colors = dict((rgb, c) for c, rgb in area.getcolors(maxcolors=1 << 16) or [])
    assert len(colors) > 8
    # the step line (orange), the samples (blue) and the regression marker (red) are drawn
    def near(target: tuple[int, int, int]) -> int:
        return sum(c for rgb, c in colors.items()
                   if all(abs(a - b) < 40 for a, b in zip(rgb, target)))
    assert near((0xe6, 0x7e, 0x22)) > 20 and near((0x2c, 0x7f, 0xb8)) > 20
    assert near((0xc0, 0x39, 0x2b)) > 5


def test_ticks_of_a_range_below_float_precision_end() -> None:
    """A range narrow beside its size (nights of 1e16 that differ by 2) once made
    ``nice_ticks`` add a step below the values' precision forever (MemoryError in
    ``srperf trend --html``); run in a child process so that a regression fails, not hangs."""
    import subprocess
    import sys

    code = ("from srperf.results.svgplot import nice_ticks\n"
            "t = nice_ticks(1e16, 1e16 + 2)\n"
            "assert 1 <= len(t) <= 50, t\n"
            "assert nice_ticks(0, 10) == [0, 2, 4, 6, 8, 10]\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stderr
