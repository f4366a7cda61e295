"""Results: the store and everything that reads it.

``store`` (SQLite or PostgreSQL, versioned ``schema``), ``summary`` and ``stats``
(mean, CV, CI95 over repetitions), ``frames`` (runs, searches, trials, outcomes
and summaries as pandas DataFrames, re-exported here), ``compare`` (run to run,
with intervals and verdicts), ``report`` + ``plots`` + ``svgplot`` (HTML and
Markdown), ``export`` (csv, parquet, json), ``nightly`` and ``junit``.

    from srperf.results import ResultStore, summaries
    with ResultStore("srperf-results/srperf.sqlite") as store:
        df = summaries(store, store.run_ids("last"))
"""

from __future__ import annotations

import importlib
from typing import Any

_FROM = {"ResultStore": "store", "outcomes": "frames", "runs": "frames", "searches": "frames",
         "summaries": "frames", "trials": "frames"}
"""Re-exported names and their modules, imported on first use: ``srperf.results.store``
alone must not cost the import of pandas' frames (``srperf runs`` starts faster)."""


def __getattr__(name: str) -> Any:
    if name in _FROM:
        return getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["ResultStore", "outcomes", "runs", "searches", "summaries", "trials"]
