"""The results subcommands of ``srperf``: report, compare, export, nightly.

Registered by :mod:`srperf.cli` (``add_parsers`` and ``COMMANDS``); like it,
this command-line module prints, the library modules it calls only log.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from srperf.errors import ConfigError
from srperf.safety.safe_paths import check_outputs, safe_component

EXIT_OK, EXIT_FAILED, EXIT_NOTHING_MEASURED = 0, 1, 3


def _store_args(p: argparse.ArgumentParser, writes: bool = False) -> None:
    """``--results`` and ``--db``: the same two for every command that reads or writes
    results (run, pdr, conform, runs, report, compare, export; nightly has its own)."""
    p.add_argument("--results", default=os.environ.get("SRPERF_RESULTS", "srperf-results"),
                   help="results directory: its srperf.sqlite" + (
                       ", summary CSVs and each run's temporary files (runs/RUN_ID/tmp)"
                       if writes else "") + "; env SRPERF_RESULTS")
    p.add_argument("--db", default=os.environ.get("SRPERF_DB"),
                   help="the results database instead of RESULTS/srperf.sqlite: an SQLite "
                        "file or a postgresql:// URL, e.g. the team's shared store "
                        "(env SRPERF_DB)")


def store_location(args: argparse.Namespace) -> str:
    """Where a command's results go: ``--db`` (or SRPERF_DB), else RESULTS/srperf.sqlite."""
    return getattr(args, "db", None) or str(Path(args.results) / "srperf.sqlite")


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    r = sub.add_parser("report", help="HTML report (+ Markdown summary) of one or more runs")
    r.add_argument("runs", nargs="+", metavar="RUN",
                   help="run id, unique part, or 'last' (the newest finished run)")
    r.add_argument("-o", "--output", help="HTML file (default: RESULTS/report-<run>.html)")
    r.add_argument("--markdown", help="also write the Markdown summary to this file")
    r.add_argument("--title", default="", help="report title (default: one made from "
                   "the runs)")
    _store_args(r)

    c = sub.add_parser("compare", help="per behavior change with its 95 %% interval; "
                       "exit 1 on regression")
    c.add_argument("baseline", metavar="BASELINE",
                   help="the reference run: id, unique part or 'last' (the newest "
                   "finished run)")
    c.add_argument("current", metavar="CURRENT",
                   help="the run judged against BASELINE: id, unique part or 'last' (the newest "
                   "finished run)")
    c.add_argument("--threshold", type=float, default=None,
                   help="regression threshold in %% of the baseline mean (default 5)")
    c.add_argument("--method", choices=["welch", "bootstrap"], default="welch",
                   help="how the 95 %% interval of the change is computed: Welch's t "
                        "or a bootstrap")
    _store_args(c)

    e = sub.add_parser("export", help="export runs as csv, parquet or json")
    e.add_argument("runs", nargs="+", metavar="RUN",
                   help="run id, unique part, or 'last' (the newest finished run)")
    e.add_argument("--format", "-f", choices=["csv", "parquet", "json"], default="csv",
                   help="file format")
    e.add_argument("-o", "--output", help="directory (json: a .json file or a directory)")
    _store_args(e)

    n = sub.add_parser("nightly", help="run a suite, compare with the last good run, "
                       "write report and JUnit XML; exit 1 on regression")
    n.add_argument("suite", metavar="SUITE.yaml", help="the nightly suite file")
    n.add_argument("--results", help="override the suite's results directory")
    n.add_argument("--db", help="override the suite's shared database URL (env SRPERF_DB "
                   "when the suite names none)")
    n.add_argument("--reports", help="override the suite's reports directory")
    n.add_argument("--testbed", "-t", help="override the suite's testbed")
    n.add_argument("--repetitions", type=int, help="override the suite's repetitions")
    n.add_argument("--verdict", choices=["trend", "baseline"],
                   help="what makes a night red: its tests starting a jumpavg regression "
                        "group (trend, the default) or the comparison with the last good "
                        "run (baseline); overrides the suite's")


def _open(args: argparse.Namespace):
    from srperf.results.store import ResultStore

    return ResultStore(*_place(args))


def _place(args: argparse.Namespace) -> tuple[str, str]:
    """The store to open and the option that named it; refused when ``--results`` holds
    no store (``--db`` may name a new one)."""
    location = store_location(args)
    if not args.db and not Path(location).exists():
        raise ConfigError("--results", "results", args.results,
                          f"no results store {location} (run something first, or --db)")
    return location, "--db" if args.db else "--results"


def _last_finished(store: Any) -> list[str]:
    """``last`` for report, compare and export: the newest finished run.  When a newer
    run has not finished (running, dead, interrupted, failed) it is named on stderr; with
    no finished run at all, the newest is taken with a warning (its report may be empty)."""
    rows = store.runs_rows(1)   # the newest, a running run whose process is gone: dead
    if not rows:
        return []
    newest, status = str(rows[0]["run_id"]), str(rows[0]["status"])
    finished = store.last_run_id("finished")
    if finished == newest:
        return [newest]
    if finished is not None:
        print(f"srperf: 'last' is the newest finished run, {finished}; the newest run, "
              f"{newest}, is {status} (name it to take it)", file=sys.stderr)
        return [finished]
    print(f"srperf: warning: no run has finished; 'last' takes {newest}, which is "
          f"{status}: its report may be empty or partial", file=sys.stderr)
    return [newest]


def _resolve(store: object, specs: list[str], finished: bool = True) -> list[str]:
    """The run ids ``specs`` name (ConfigError naming the one that names none or
    several); ``last`` is the newest finished run unless not ``finished`` (resume)."""
    ids: list[str] = []
    from srperf.config.cli_inputs import check_run_spec

    for spec in specs:
        check_run_spec("run", spec)
        found = _last_finished(store) if spec == "last" and finished \
            else store.run_ids(spec)  # type: ignore[attr-defined]
        if len(found) != 1:
            why = "no such run" if not found else f"ambiguous: {', '.join(found[:5])}"
            raise ConfigError(str(store.url), "run", spec, why)  # type: ignore[attr-defined]
        ids.extend(found)
    return ids


def cmd_report(args: argparse.Namespace) -> int:
    from srperf.results.report import render_markdown, write_report

    with _open(args) as store:
        ids = _resolve(store, args.runs)
        html = Path(args.output) if args.output else \
            Path(args.results) / f"report-{safe_component(ids[0])}.html"
        md = Path(args.markdown) if args.markdown else None
        check_outputs([(html, "--output" if args.output else "--results")]
                      + ([(md, "--markdown")] if md else []))   # all, before any is written
        data = write_report(store, ids, html, md, title=args.title)
    print(render_markdown(data))
    print(f"report: {html}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from srperf.results.compare import DEFAULT_THRESHOLD_PCT, REGRESSION, compare_runs, \
        format_markdown

    from srperf.config.loader import check_value
    from srperf.nightly import SUITE_SCHEMA

    threshold = DEFAULT_THRESHOLD_PCT if args.threshold is None else args.threshold
    threshold = check_value("--threshold", threshold, "compare.threshold_pct", SUITE_SCHEMA)
    with _open(args) as store:
        base, cur = _resolve(store, [args.baseline, args.current])
        result = compare_runs(store, base, cur, threshold, args.method)
        from srperf.results import kernel_compare

        kernels = (kernel_compare.compare_kernels(store, base, cur)
                   if kernel_compare.is_kernel_pair(store, base, cur) else None)
    print(format_markdown(result))
    if kernels is not None:   # two kernel targets: named, ratios, conformance, profiles
        print("\n" + kernel_compare.format_markdown(kernels))
    return EXIT_FAILED if result.verdict == REGRESSION else EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from srperf.results.export import export

    with _open(args) as store:
        ids = _resolve(store, args.runs)
        dest = Path(args.output) if args.output else \
            Path(args.results) / f"export-{safe_component(ids[0])}"
        for path in export(store, ids, args.format, dest,
                           "--output" if args.output else "--results"):
            print(path)
    return EXIT_OK


def cmd_nightly(args: argparse.Namespace) -> int:
    from srperf.measure.progress import make_progress
    from srperf.nightly import load_suite, run_nightly

    from srperf.config.loader import check_value
    from srperf.nightly import SUITE_SCHEMA

    suite = load_suite(args.suite)
    if args.repetitions is not None:
        args.repetitions = check_value("--repetitions", args.repetitions, "repetitions",
                                       SUITE_SCHEMA)
    progress = make_progress(sys.stdout)
    try:
        database = args.db or (None if suite.database else os.environ.get("SRPERF_DB"))
        out = run_nightly(suite, progress, overrides={
            "results": args.results, "database": database, "reports": args.reports,
            "testbed": args.testbed, "repetitions": args.repetitions,
            "verdict": args.verdict})
    finally:
        progress.close()
    print(out.markdown)
    for r in out.results:
        verdict = (r.comparison.verdict if r.comparison else "error" if r.error
                   else "nothing measured" if r.nothing_measured else "no baseline")
        if r.trend is not None:
            verdict += (f"; trend red: {', '.join(a.test for a in r.trend.alerts)}"
                        if r.trend.red else "; trend green")
        print(f"{r.name}: run {r.run_id}, baseline {r.baseline_run_id or 'none'}, {verdict}"
              f"{', report ' + str(r.report) if r.report else ''}")
    print(f"junit: {out.junit_path}")
    for r in out.results:
        if r.nothing_measured:
            print(f"srperf: nightly {r.name}: run {r.run_id}: {r.nothing_measured}",
                  file=sys.stderr)
            from srperf.results.measured import what_to_try

            print(f"srperf: to try: {what_to_try(r.nothing_measured)}", file=sys.stderr)
    if out.regression or out.errors:
        return EXIT_FAILED
    return EXIT_NOTHING_MEASURED if out.nothing_measured else EXIT_OK


def check_run_store(args: argparse.Namespace) -> None:
    """The run's store checked before the testbed is claimed (exit 2 naming ``--db`` or
    ``--results``): an existing file must be an srperf store srperf may trust; a missing
    one is not made yet, so that a run refused later (a busy testbed) leaves no file."""
    from srperf.safety import safe_paths
    from srperf.results import location as where
    from srperf.results.store import ResultStore

    what = "--db" if args.db else "--results"
    place = where.resolve(store_location(args), what)
    if place.path is None:
        ResultStore(store_location(args), what).close()
    else:
        safe_paths.open_store_file(place.path, what, create=False)


COMMANDS = {"report": cmd_report, "compare": cmd_compare, "export": cmd_export,
            "nightly": cmd_nightly}
