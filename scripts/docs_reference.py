#!/usr/bin/env python3
"""Write docs/reference/settings.md and results-schema.md from the code's declarations
(srperf.config.reference).

Run after adding or changing a setting: .venv/bin/python scripts/docs_reference.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from srperf.config.reference import render, render_schema

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"
PAGES = {"settings.md": render, "results-schema.md": render_schema}


def main() -> int:
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for name, make in PAGES.items():
        (REFERENCE / name).write_text(make())
        print(f"wrote {REFERENCE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
