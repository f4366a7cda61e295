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

from srperf.results.frames import outcomes, runs, searches, summaries, trials
from srperf.results.store import ResultStore

__all__ = ["ResultStore", "outcomes", "runs", "searches", "summaries", "trials"]
