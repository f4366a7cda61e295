"""The documentation site builds with ``mkdocs build --strict`` (issue 47).

mkdocs.yml's ``validation`` makes a page missing from the nav, a link to a file that
does not exist, an anchor that does not exist and a link mkdocs does not recognise
warnings, which ``--strict`` turns into a failed build.  The site is built into a
scratch directory (removed by pytest), never into the worktree's ``site/``.  Not with
``-q``: mkdocs then drops warnings before ``--strict`` counts them, and passes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MKDOCS, "build", "--strict", "-f", str(config), "-d",
                           str(site)], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    proc = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "settings" / "index.html").is_file()


def _nav_files(nav: list) -> list[str]:
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        out.extend(_nav_files(value) if isinstance(value, list) else [value])
    return out


def test_every_page_is_in_the_nav() -> None:
    """Said directly (the strict build says it too, as a warning turned error)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - set(_nav_files(config["nav"])) == set()


@pytest.mark.parametrize("breakage", ["link", "orphan"])
def test_the_strict_build_can_fail(tmp_path: Path, breakage: str) -> None:
    """A copy of the site with a broken link, or a page left out of the nav, fails."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    if breakage == "link":
        page = tmp_path / "docs" / "first-run.md"
        page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    else:
        (tmp_path / "docs" / "orphan.md").write_text("# Not in the nav\n")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert ("no-such-page.md" if breakage == "link" else "orphan.md") in proc.stdout + proc.stderr
