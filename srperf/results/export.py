"""Export runs as CSV, Parquet or JSON (tables runs, searches, trials, outcomes, summary;
stateful_samples and stateful_summary when the runs have stateful samples; costs when
they have per-packet costs, srperf.results.costs).

CSV and Parquet write one file per table into a directory; JSON writes one file
with a list of records per table.  Rates are pps, except the summary's kpps.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable

import pandas as pd

from srperf.safety import safe_paths
from srperf.results import frames
from srperf.results.store import ResultStore

log = logging.getLogger(__name__)

FORMATS = ("csv", "parquet", "json")


def tables(store: ResultStore, run_ids: Iterable[str]) -> dict[str, pd.DataFrame]:
    """The runs' tables as DataFrames (``runs`` without the parsed ``env`` column)."""
    ids = list(run_ids)
    s, o = frames.searches(store, ids), frames.outcomes(store, ids)
    runs = frames.runs(store, ids).drop(columns=["env"])
    out = {"runs": runs, "searches": s, "trials": frames.trials(store, ids),
           "outcomes": o, "summary": frames.summaries(store, ids, s, o)}
    stateful = store.frame("stateful_samples", ids)
    if not stateful.empty:  # JSON columns kept as JSON text (CSV and Parquet cells)
        out["stateful_samples"] = stateful
        out["stateful_summary"] = frames.stateful_summary(frames.stateful_samples(store, ids))
    costs = store.frame("costs", ids)
    if not costs.empty:  # the xdp forwarder's per-packet costs (srperf.results.costs)
        out["costs"] = costs
    return out


def export(store: ResultStore, run_ids: Iterable[str], fmt: str, dest: Path,
           what: str = "--output") -> list[Path]:
    """Write the runs in ``fmt`` under ``dest`` (a directory; for json a ``.json`` file
    path or a directory), each file 0600 (runs hold their environment), never through a
    planted symlink (:mod:`srperf.safety.safe_paths`).  Returns the files written."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    data = tables(store, run_ids)
    if fmt == "json":
        path = dest if dest.suffix == ".json" else dest / "srperf-export.json"
        doc = {name: json.loads(df.to_json(orient="records")) for name, df in data.items()}
        return [safe_paths.write_file(path, json.dumps(doc, indent=1), safe_paths.PRIVATE,
                                      what)]
    written = safe_paths.write_files(dest, {
        f"{name}.{fmt}": df.to_csv(index=False) if fmt == "csv"
        else df.to_parquet(None, index=False) for name, df in data.items()},
        safe_paths.PRIVATE, what)
    log.info("exported %d tables to %s", len(written), dest)
    return written
