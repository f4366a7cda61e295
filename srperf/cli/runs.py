"""``srperf runs`` (the runs of a store and their states) and ``srperf run --resume``.

Registered by :mod:`srperf.cli`.  A run stores a *recipe*: how its experiment and
testbed were made (files as absolute paths, ``--set`` overrides, repetitions,
algorithm, or the mapping ``srperf pdr`` built), so that ``--resume RUN_ID``
makes the same plan again without the user repeating the command line; the
orchestrator then checks that the plan did not change.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import ConfigError

EXIT_OK = 0

RESUME_FORBIDS = (("experiment", "EXPERIMENT"), ("testbed", "--testbed"),
                  ("algorithm", "--algorithm"), ("repetitions", "--repetitions"),
                  ("set", "--set"))
"""Arguments that come from the resumed run and may not be given with ``--resume``."""


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    r = sub.add_parser("runs", help="list the runs of a results store: status (running, "
                       "finished, interrupted, failed; dead when the process of a "
                       "running run is gone), reason, searches ended/planned")
    from srperf.cli.results import _store_args

    _store_args(r)
    r.add_argument("--limit", "-n", type=int, default=20,
                   help="show the newest N runs (0: all)")


def recipe(args: argparse.Namespace, tb: TestbedConfig, experiment_file: Path | None = None,
           mapping: dict[str, Any] | None = None) -> dict[str, Any]:
    """How to make this run's experiment and testbed again."""
    def absolute(source: str) -> str:
        path = Path(source)
        return str(path.resolve()) if path.exists() else source

    out: dict[str, Any] = {"testbed": absolute(tb.source),
                           "algorithm": getattr(args, "algorithm", None),
                           "keep_testbed": bool(getattr(args, "keep_testbed", False))}
    if mapping is not None:
        out["mapping"] = mapping
    else:
        out.update(experiment=absolute(str(experiment_file)), set=list(args.set),
                   repetitions=args.repetitions)
    return out


def check_resume_args(args: argparse.Namespace) -> None:
    """With ``--resume``, the experiment and its settings come from the run."""
    for attr, flag in RESUME_FORBIDS:
        value = getattr(args, attr, None)
        if value not in (None, [], False):
            raise ConfigError("<command line>", flag, value,
                              "not allowed with --resume: the resumed run's own is used")


def from_recipe(store_where: str, run_id: str,
                row: dict[str, Any]) -> tuple[Experiment, TestbedConfig, dict[str, Any]]:
    """The experiment and testbed a stored run was made of."""
    import dataclasses

    from srperf.config.loader import experiment_from_mapping, load_experiment, load_testbed

    made = row["environment"].get("recipe")
    if not made:
        raise ConfigError(f"{store_where} run {run_id}", "environment.recipe", None,
                          "the run was stored without its recipe (an older srperf, a bench "
                          "or a nightly job); it cannot be resumed")
    if "mapping" in made:
        exp = experiment_from_mapping(made["mapping"], "<command line>")
    else:
        exp = load_experiment(Path(made["experiment"]), made.get("set") or ())
        if made.get("repetitions"):
            exp = dataclasses.replace(exp, repetitions=int(made["repetitions"]))
    return exp, load_testbed(Path(made["testbed"])), made


LIMIT_MAX = 1_000_000
LIMIT_SCHEMA = {"properties": {"limit": {
    "type": "integer", "minimum": 0, "maximum": LIMIT_MAX,
    "description": "newest runs shown (0: all)"}}}


def cmd_runs(args: argparse.Namespace) -> int:
    from srperf.cli.results import _open, _place
    from srperf.results.runs_table import sqlite_runs_rows

    if not (isinstance(args.limit, int) and 0 <= args.limit <= LIMIT_MAX):
        # out of bounds: the schema check (jsonschema) words the error as for a file key
        from srperf.config.loader import check_value

        args.limit = check_value("--limit", args.limit, "limit", LIMIT_SCHEMA)
    rows = sqlite_runs_rows(*_place(args), args.limit or None)
    if rows is None:   # a server, or a store to make or migrate: SQLAlchemy does it
        with _open(args) as store:
            rows = store.runs_rows(args.limit or None)
    if not rows:
        print("no runs")
        return EXIT_OK
    print(format_runs(rows))
    return EXIT_OK


def done_cell(r: dict[str, Any]) -> tuple[str, str]:
    """The SEARCHES and TRIALS cells of a run: ``3/7`` searches ended of those planned
    and its trials; a stateful run ``2/2 samples`` (its calibration aside) and ``-``
    without trials; a conformance run ``52 cases`` and ``-`` (it plans no search)."""
    planned = "?" if r["planned"] is None or r["planned"] != r["planned"] \
        else str(int(r["planned"]))
    trials = int(r["trials"])
    if int(r.get("cases") or 0) or r.get("purpose") == "conform":
        return f"{int(r.get('cases') or 0)} cases", str(trials) if trials else "-"
    if int(r.get("samples") or 0):
        return f"{int(r['searches'])}/{planned} samples", str(trials) if trials else "-"
    return f"{int(r['searches'])}/{planned}", str(trials)


def format_runs(runs: list[dict[str, Any]]) -> str:
    """The runs table (:meth:`ResultStore.runs_rows`): id, experiment, testbed, status,
    searches, trials, started, reason."""
    rows = [("RUN", "EXPERIMENT", "TESTBED", "STATUS", "SEARCHES", "TRIALS", "STARTED",
             "REASON")]
    for r in runs:
        status = str(r["status"])
        if status == "interrupted" and isinstance(r["signal"], str):
            status += f" ({r['signal']})"
        reason = r["reason"] if isinstance(r["reason"], str) else ""
        done, trials = done_cell(r)
        rows.append((str(r["run_id"]), str(r["experiment"]), str(r["testbed"]), status,
                     done, trials, str(r["started"])[:19].replace("T", " "), reason))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1]
                     for row in rows).rstrip()


COMMANDS = {"runs": cmd_runs}

__all__ = ["COMMANDS", "add_parsers", "check_resume_args", "done_cell", "format_runs",
           "from_recipe", "recipe"]
