"""The HTML report and Markdown summary; the HTML opened in headless Chromium."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from srperf.cli.entry import main
from srperf.drivers.base import TrialResult
from srperf.results import report
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import GoalResult, SearchResult

sys.path.insert(0, str(Path(__file__).parent))
import chromium  # noqa: E402


def _trial(rate: float, loss: float, simulated: bool = False, limited: bool = False,
           latency: dict | None = None) -> TrialResult:
    intended = int(rate)
    extra: dict = {"simulated": True} if simulated else {}
    if latency:
        extra["latency"] = latency
    return TrialResult(rate_pps=rate, duration_s=1.0, intended=intended, sent=intended,
                       refused=0, received=int(intended * (1 - loss)), elapsed_s=1.0,
                       generator_limited=limited, extra=extra)


def _run(store: ResultStore, forwarder: str, capacity: float, simulated: bool,
         env: dict) -> str:
    run = store.begin_run("quick", "virtual", forwarder, env)
    seq = 0
    for rep in (1, 2, 3):
        for beh, cap in (("ipv6", capacity), ("end", 0.8 * capacity)):
            seq += 1
            key = TrialKey(beh, forwarder, 64, rep, seq)
            cap_r = cap * (1 + 0.01 * rep)
            rates = [0.5 * cap_r, 0.9 * cap_r, 1.1 * cap_r, 0.98 * cap_r, 1.02 * cap_r, cap_r]
            trials = [_trial(r, 0.0 if r <= cap_r else 0.05 * (r / cap_r - 1) + 0.01,
                             simulated, latency={"avg_us": 12.5, "p99_us": 40}
                             if r == rates[0] else None) for r in rates]
            trials.append(_trial(1.3 * cap_r, 0.0, simulated, limited=True))
            for t in trials:
                store.add_trial(run, key, t)
            store.add_search(run, key, SearchResult("bisect", [GoalResult(
                0.5, 0.98 * cap_r, 1.02 * cap_r, "ok", estimate_pps=cap_r,
                estimate_low_pps=0.99 * cap_r, estimate_high_pps=1.01 * cap_r)], trials))
            store.add_outcome(run, beh, forwarder, 64, "measured")
    store.add_outcome(run, "end_dt4", forwarder, 64, "unsupported", "Error: no VRF")
    key = TrialKey("end_x", forwarder, 64, 1, seq + 1)
    store.add_search(run, key, SearchResult("bisect", [GoalResult(
        0.5, None, None, "generator_limited", note="the generator could not offer 900 kpps")],
        []))
    store.end_run(run, "finished")
    return run


@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        a = _run(store, "linux", 900e3, False,
                 {"nodes": {"tester": {"cpu": "EPYC", "nic": {"driver": "veth"}},
                            "sut": {"kernel": "6.18.44"}}, "srperf_commit": "abc123"})
        b = _run(store, "ebpf", 1000e3, True, {"kernel": "6.18.44", "cpu_count": 2})
    return tmp_path, [a, b]


def test_report_content(two_runs: tuple[Path, list[str]]) -> None:
    path, ids = two_runs
    with ResultStore(path / "srperf.sqlite") as store:
        data = report.write_report(store, ids, path / "r.html", path / "r.md")
    text = (path / "r.html").read_text()
    # Tables II-V: mean, CV, CI95 per behavior and run. ipv6 of the linux run:
    # 900 * 0.98 * (1.01, 1.02, 1.03) = 890.82, 899.64, 908.46 kpps; mean 899.64,
    # stdev 8.82, CV 0.980 %, CI95 4.3027 * 8.82 / sqrt(3) = 21.91 kpps.
    table = data.tables[0]
    ipv6 = [r for r in table.rows if r["behavior"] == "ipv6" and "linux" in r["run"]][0]
    assert ipv6["mean"] == pytest.approx(899.64) and ipv6["cv"] == pytest.approx(0.980, abs=1e-3)
    assert ipv6["ci95"] == pytest.approx(21.91, abs=0.01)
    assert "899.6" in text and "21.9" in text
    # Statuses are shown as such, never as numbers.
    end_x = [r for r in table.rows if r["behavior"] == "end_x"]
    assert end_x and not any(r["has"] for r in end_x)
    assert "generator_limited x1: the generator could not offer 900 kpps" in text
    assert "unsupported" in text and "Error: no VRF" in text
    # The simulated run is labelled a model; the nested environment is rendered.
    assert "MODEL (simulated SUT)" in text and "come from the simulated SUT" in text
    assert ">tester<" in text and ">nic<" in text and "veth" in text and "abc123" in text
    # Plots: one bar chart (PNG) and, per search with a trial (2 runs x 6), the data of
    # its two plots (drawn in the browser: test_report_renders_in_headless_chromium).
    assert text.count('src="data:image/png;base64,') == 1
    assert text.count('class="plots" data-search=') == 12  # drawn by search_plots.js
    assert "estimate 95 % interval" in text and "lower bound" in text
    assert "avg_us" in text  # latency where there is some
    md = (path / "r.md").read_text()
    assert "| ipv6 | #1 linux" in md and "MODEL" in md and "unsupported: Error: no VRF" in md
    assert "finished (MODEL (simulated SUT))" in md and "virtual (linux), finished\n" in md
    assert "http" not in text.replace("http://www.w3.org/2000/svg", "")  # self-contained


def test_report_cli(two_runs: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, ids = two_runs
    assert main(["report", ids[0], "last", "--results", str(path), "-o",
                 str(path / "cli.html")]) == 0
    out = capsys.readouterr().out
    assert "## PDR@0.5%, 64-byte packets" in out and (path / "cli.html").exists()
    assert main(["report", "nosuch", "--results", str(path)]) == 2


@pytest.mark.skipif(chromium.binary() is None, reason="chromium (Debian package) not installed")
def test_report_renders_in_headless_chromium(two_runs: tuple[Path, list[str]]) -> None:
    from PIL import Image

    path, ids = two_runs
    with ResultStore(path / "srperf.sqlite") as store:
        report.write_report(store, ids[:1], path / "one.html")
    png = path / "shot.png"
    size = (1200, 3000)
    boxes = chromium.screenshot(path / "one.html", png, size, ".plot, table.summary")
    # The summary table, the bar chart and two plots per search, in page order.
    assert len(boxes) == 1 + 1 + 2 * 6
    table = boxes[1]
    assert table[2] > 300 and table[3] > 3 * 15  # laid out: header + 3 behaviors
    img = Image.open(png).convert("RGB")
    assert img.size == size
    checked = 0
    for x, y, w, h in boxes:
        if w < 50 or h < 50 or y + h > size[1] or x + w > size[0]:
            continue  # below the fold
        area = img.crop((x + 2, y + 2, x + w - 2, y + h - 2))
        colors = area.getcolors(maxcolors=1 << 16) or []
        white = sum(c for c, rgb in colors if min(rgb) > 245)
        assert white < 0.97 * w * h, f"plot at {x},{y} is blank"
        assert len(colors) > 8, f"plot at {x},{y} has {len(colors)} colours"
        checked += 1
    assert checked >= 5
    # And the blank page this check would reject: a crop of the white margin.
    margin = img.crop((size[0] - 40, 0, size[0], 40)).getcolors()
    assert margin is not None and len(margin) == 1 and math.isclose(margin[0][0], 1600)
