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


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two testbeds x three tests x 30 nights: a -12 % step in ``end`` on lab1 from
    night 20, nothing elsewhere; lab2 about 60 % faster than lab1 (a model:
    srperf.results.trend_synth).  Built once for the module: the tests only read it
    (it took 9-30 s a test, most of the file's time)."""
    tmp_path = tmp_path_factory.mktemp("trend-page")
    tests = [("end", 64), ("ipv6", 64), ("end_x", 64)]
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        fill(store, tests, 30, 0.02, {("end", 64): Shape("step", -12.0, 20)}, testbed="lab1")
        fill(store, tests, 30, 0.02, testbed="lab2", seed=7, base=800.0)
        out = write_trend_report(trends(store), tmp_path / "trend.html", title="t36 trend")
    return out


def _row_charts(html: str, name: str) -> list[str]:
    """The SVG charts of the row of test ``name`` (overlay first, then one per testbed)."""
    row = html.split(f'class="test ', 1)[1]
    for part in html.split("<h3 ")[1:]:
        if f">{name}</h3>" in part:
            row = part
            break
    else:
        raise AssertionError(f"no chart row for {name}")
    return re.findall(r"<svg .*?</svg>", row.split("</div>", 1)[0], flags=re.S)


def _y_ticks(svg: str) -> list[str]:
    return re.findall(r'<text x="[\d.]+" y="[\d.]+" text-anchor="end">([^<]+)</text>', svg)


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
    # one row of charts per test: the overlay of both testbeds, then each testbed
    assert html.count('class="plot"') == 9 and html.count('<div class="panels">') == 3


def test_testbeds_of_one_test_share_their_axes_and_an_overlay(page: Path) -> None:
    """Side by side: lab1 (~500 kpps, stepping to ~440) and lab2 (~800) of one test on
    the same y axis, and one overlay chart with each testbed in its own color."""
    html = page.read_text()
    over, lab1, lab2 = _row_charts(html, "linux end 64B PDR@0.5%")
    assert ">lab1: regression<" in lab1 and ">lab2: normal<" in lab2
    ticks = _y_ticks(lab1)
    assert ticks == _y_ticks(lab2) == _y_ticks(over), "the row's charts differ in y axis"
    values = [float(t) for t in ticks]
    assert min(values) < 450 and max(values) >= 800   # both testbeds' levels fit
    # the overlay: both testbeds named in its legend, each in its own color, with hover
    assert ">testbeds side by side<" in over
    assert ">lab1</text>" in over and ">lab2</text>" in over
    assert 'fill="#2c7fb8"' in over and 'fill="#d95f02"' in over
    assert "<title>lab2\nrun lab2-n030\n" in over
    assert "lab1: regression from run lab1-n020: -1" in over


def test_side_by_side_table_gives_each_testbeds_current_figure(page: Path) -> None:
    html = page.read_text()
    table = html.split('<table id="trend-testbeds">', 1)[1].split("</table>", 1)[0]
    header, *rows = table.split("<tr>")[1:]
    assert re.findall(r'<th class="l">(lab\d)</th>', header) == ["lab1", "lab2"]
    assert len(rows) == 3 and "linux end 64B PDR@0.5%" in rows[0]   # regressions first
    end = rows[0]
    lab1 = re.search(r'<td class="l regression" data-testbed="lab1">([\d.]+) &plusmn;', end)
    lab2 = re.search(r'<td class="l normal" data-testbed="lab2">([\d.]+) &plusmn; '
                     r'[\d.]+\n\(\+([\d.]+) %\)', end)
    assert lab1 and lab2, end
    a, b = float(lab1.group(1)), float(lab2.group(1))
    assert 400 < a < 480 and 760 < b < 840                        # lab1 after its step
    assert float(lab2.group(2)) == pytest.approx(100 * (b - a) / a, abs=0.1)


def test_one_testbed_has_no_overlay_and_no_side_by_side_table(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        fill(store, [("end", 64), ("ipv6", 64)], 10, 0.02, testbed="lab1")
        html = write_trend_report(trends(store), tmp_path / "t.html").read_text()
    assert 'id="trend-testbeds"' not in html and "testbeds side by side" not in html
    assert html.count('class="plot"') == 2


@pytest.mark.skipif(chromium.binary() is None, reason="chromium (Debian package) not installed")
def test_trend_page_renders_in_headless_chromium(page: Path, tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    png = tmp_path / "shot.png"
    size = (1400, 1800)
    boxes = chromium.screenshot(page, png, size, "svg.plot, #trend-index, #trend-testbeds")
    assert len(boxes) == 2 + 9
    index, table = boxes[0], boxes[1]
    assert index[2] > 500 and index[3] > 6 * 15     # laid out: header + 6 rows
    assert table[2] > 200 and table[3] > 3 * 15 and table[1] > index[1] + index[3]
    charts = boxes[2:]
    # the first row of charts is the regressed test: the overlay, then its two testbeds,
    # side by side on one line
    assert charts[0][1] == charts[1][1] == charts[2][1]
    assert charts[1][0] > charts[0][0] + charts[0][2] - 1
    assert charts[2][0] > charts[1][0] + charts[1][2] - 1
    img = Image.open(png).convert("RGB")
    for x, y, w, h in charts[:3]:
        assert y + h < size[1], "the first row of charts is below the fold"
    rgb = np.asarray(img, dtype=np.int16)

    def pixels(box: tuple[int, int, int, int]) -> "np.ndarray":
        x, y, w, h = box
        return rgb[y + 2:y + h - 2, x + 2:x + w - 2]

    def near(px: "np.ndarray", target: tuple[int, int, int]) -> "np.ndarray":
        """The rows (y) of the pixels of ``px`` near the color ``target``."""
        return np.nonzero((np.abs(px - np.array(target)) < 40).all(axis=2))[0]

    blue, orange, red = (0x2c, 0x7f, 0xb8), (0xe6, 0x7e, 0x22), (0xc0, 0x39, 0x2b)
    over, lab1, lab2 = (pixels(b) for b in charts[:3])
    # lab1: the step line (orange), the samples (blue) and the regression marker (red)
    assert len(near(lab1, orange)) > 20 and len(near(lab1, blue)) > 20
    assert len(near(lab1, red)) > 5
    # one y axis for the row: lab1's samples (~440-500) sit well below lab2's (~800)
    assert near(lab1, blue).mean() > near(lab2, blue).mean() + 0.2 * charts[1][3]
    # the overlay draws both testbeds, each in its own color
    assert len(near(over, blue)) > 20 and len(near(over, (0xd9, 0x5f, 0x02))) > 20


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
