"""The quick commands import no heavy library they do not use (``bench/startup.py`` shows
the time; this checks the cause, by the modules a fresh process holds afterwards).

Each command runs in its own interpreter (a test process has imported everything
already) and reports ``sys.modules`` on exit, whatever the exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("scapy", "pandas", "numpy", "matplotlib", "sqlalchemy", "jsonschema", "pyarrow",
         "paramiko", "jinja2", "MLRsearch")
"""Top-level packages that cost a tenth of a second or more to import here."""

CHILD = """
import json, sys
from srperf.cli.entry import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
with open(sys.argv[1], "w") as out:
    json.dump(sorted({name.split(".")[0] for name in sys.modules}), out)
"""


def heavy_loaded(argv: list[str], tmp_path: Path) -> set[str]:
    report = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(report), *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert report.exists(), proc.stderr
    return set(json.loads(report.read_text())) & set(HEAVY)


@pytest.mark.parametrize(("argv", "allowed"), [
    (["--help"], set()),
    (["behaviors"], set()),
    (["validate", "testbed/virtual.yaml"], {"jsonschema"}),
    # frame lengths for the MTU check come from header sizes, not scapy frames
    (["validate", "experiments/quick.yaml"], {"jsonschema"}),
    (["validate", "experiments/end_ad.yaml"], {"jsonschema"}),
], ids=["help", "behaviors", "validate-testbed", "validate-experiment", "validate-proxies"])
def test_quick_command_imports_no_heavy_module_it_does_not_use(
        argv: list[str], allowed: set[str], tmp_path: Path) -> None:
    extra = heavy_loaded(argv, tmp_path) - allowed
    assert not extra, f"srperf {' '.join(argv)} imported {sorted(extra)}"


@pytest.mark.parametrize("argv", [[], ["--limit", "0"], ["-n", "5"]])
def test_runs_reads_an_sqlite_store_without_sqlalchemy(argv: list[str], tmp_path: Path) -> None:
    """An SQLite store of the current schema is read with sqlite3, ``--limit`` checked
    without jsonschema (tests/test_runs_table.py: the same rows and table)."""
    from srperf.results.store import ResultStore

    ResultStore(str(tmp_path / "srperf.sqlite")).close()
    extra = heavy_loaded(["runs", "--results", str(tmp_path), *argv], tmp_path)
    assert not extra, f"srperf runs imported {sorted(extra)}"
