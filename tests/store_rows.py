"""Editing a stored run's row in a test's SQLite store (what a run on another kernel,
or under emulation, would have recorded)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def update_environment(db: Path, run_id: str, extra: dict[str, Any]) -> None:
    """Merge ``extra`` into the ``environment`` JSON of run ``run_id`` in ``db``."""
    con = sqlite3.connect(db)
    try:
        env = json.loads(con.execute("SELECT environment FROM runs WHERE run_id = ?",
                                     (run_id,)).fetchone()[0])
        env.update(extra)
        con.execute("UPDATE runs SET environment = ? WHERE run_id = ?",
                    (json.dumps(env), run_id))
        con.commit()
    finally:
        con.close()
