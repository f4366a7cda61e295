"""Headless Chromium for report tests: a screenshot and the boxes of the plots.

Runs as root with the flags the project requires (no sandbox, no network
services, a fresh profile directory that is removed afterwards).  Only
file:// pages are opened.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1"]

MEASURE = """<script>
document.body.setAttribute('data-plot-boxes', JSON.stringify(
  Array.from(document.querySelectorAll('%s')).map(function (e) {
    var r = e.getBoundingClientRect();
    return [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)];
  })));
</script>"""


def binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str], profile: Path, size: tuple[int, int]) -> subprocess.CompletedProcess:
    return subprocess.run([binary() or "chromium", *FLAGS, f"--user-data-dir={profile}",
                           f"--window-size={size[0]},{size[1]}", *args],
                          capture_output=True, text=True, timeout=120)


def screenshot(page: Path, png: Path, size: tuple[int, int],
               selector: str = ".plot") -> list[tuple[int, int, int, int]]:
    """Screenshot ``page`` into ``png``; returns the boxes (x, y, w, h) of the elements
    matching ``selector``, measured by the browser in a copy of the page at the same
    window size."""
    work = Path(tempfile.mkdtemp(prefix="srperf-chromium-"))
    try:
        probe = work / "probe.html"
        probe.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE % selector + "</body>"),
                         encoding="utf-8")
        dom = _run(["--dump-dom", probe.as_uri()], work / "profile1", size)
        match = re.search(r'data-plot-boxes="([^"]*)"', dom.stdout)
        if not match:
            raise RuntimeError(f"chromium gave no plot boxes: {dom.stderr[-2000:]}")
        boxes = [tuple(b) for b in json.loads(html.unescape(match.group(1)))]
        shot = _run([f"--screenshot={png}", page.as_uri()], work / "profile2", size)
        if not png.exists():
            raise RuntimeError(f"chromium wrote no screenshot: {shot.stderr[-2000:]}")
        return boxes  # type: ignore[return-value]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def dump_dom(page: Path, size: tuple[int, int] = (1200, 1600)) -> str:
    """The DOM of ``page`` after its scripts ran (``--dump-dom``)."""
    work = Path(tempfile.mkdtemp(prefix="srperf-chromium-"))
    try:
        dom = _run(["--dump-dom", page.as_uri()], work / "profile", size)
        if "<body" not in dom.stdout:
            raise RuntimeError(f"chromium gave no DOM: {dom.stderr[-2000:]}")
        return dom.stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
