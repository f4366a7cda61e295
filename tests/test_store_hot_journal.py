"""A store whose writer was killed mid-transaction (kill -9 of a live run) keeps a hot
journal beside it; the store check must still take it as a store (test_run_states'
resume after a kill failed so under load: "attempt to write a readonly database")."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from srperf.safety.safe_paths import open_store_file

CHILD = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN")
for i in range(400):
    conn.execute("INSERT INTO runs VALUES (?, ?)", (f"r{i}", "x" * 4000))
os._exit(9)   # killed before COMMIT: the journal stays, hot
"""


def test_a_store_with_a_killed_writers_journal_is_still_a_store(tmp_path: Path) -> None:
    db = tmp_path / "srperf.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (run_id TEXT, detail TEXT)")
        conn.execute("INSERT INTO runs VALUES ('kept', '')")
    conn.close()
    db.chmod(0o600)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(db)], capture_output=True)
    assert proc.returncode == 9, proc.stderr
    journal = Path(f"{db}-journal")
    assert journal.stat().st_size > 0       # the kill left a hot journal
    assert open_store_file(db) == db
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as ro:
        assert ro.execute("SELECT run_id FROM runs").fetchall() == [("kept",)]
    ro.close()
