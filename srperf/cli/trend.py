"""``srperf trend``: every test's history grouped by jumpavg, regressions first.

A command group of :mod:`srperf.cli` (``add_parsers`` and ``COMMANDS``); like the
rest of the CLI, this module prints, the library only logs.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Callable

from srperf.cli.guard import EXIT_OK
from srperf.errors import ConfigError


def _date(text: str) -> str:
    """``--since``: an ISO date (2026-11-01) or date and time."""
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date: {text!r} (e.g. 2026-11-01)")
    return text


def add_trend_arguments(p: argparse.ArgumentParser) -> None:
    """The selection and thresholds shared by ``srperf trend`` and the bench commands."""
    p.add_argument("--testbed", "-t", help="only this testbed's runs (default: every "
                   "testbed, each its own history)")
    p.add_argument("--since", type=_date, help="only runs started on or after this ISO date")
    p.add_argument("--suite", help="only runs of this nightly suite")
    p.add_argument("--experiment", help="only runs of this experiment")
    p.add_argument("--min-change", type=float, default=None, metavar="PCT",
                   help="a new group whose average moved less than PCT %% is normal, "
                        "not an anomaly (default 0, as CSIT: every jumpavg split counts)")
    p.add_argument("--window", type=int, default=None, metavar="N",
                   help="group only the newest N samples of each test (default: all)")
    p.add_argument("--reference", default="", metavar="BEHAVIOR",
                   help="also trend each behavior relative to BEHAVIOR measured in the "
                        "same runs (per repetition, %%): a drift of the host cancels")


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]"
                ) -> dict[str, Callable[[argparse.Namespace], int]]:
    from srperf.cli.results import _store_args

    p = sub.add_parser("trend", help="each test's history grouped by jumpavg (CSIT "
                       "trending): current average, last change and its class, "
                       "regressions first")
    _store_args(p)
    add_trend_arguments(p)
    p.add_argument("--html", metavar="FILE", help="also write the HTML trend report "
                   "(one chart per test)")
    return {"trend": cmd_trend}


def check_names(args: argparse.Namespace) -> None:
    """A selection given as an empty name (``--testbed ''``) is refused (exit 2), not
    read as "every testbed"; so is an empty ``--html`` file name."""
    for flag in ("--testbed", "--suite", "--experiment", "--html"):
        value = getattr(args, flag[2:], None)
        if value is not None and not str(value).strip():
            what = "a file name" if flag == "--html" else "a name"
            raise ConfigError("<command line>", flag, value, f"empty: give {what}, or "
                              f"leave {flag} out")


def settings_from(args: argparse.Namespace):  # -> TrendSettings
    from srperf.results.trend import TrendSettings

    check_names(args)
    pct = 0.0 if args.min_change is None else float(args.min_change)
    try:
        return TrendSettings(min_change_pct=pct, window=args.window,
                             reference=args.reference)
    except ValueError as exc:
        flag, value = ("--window", args.window) if "window" in str(exc) \
            else ("--reference", args.reference) if "reference" in str(exc) \
            else ("--min-change", pct)
        raise ConfigError(flag, flag[2:], value, str(exc)) from None


def cmd_trend(args: argparse.Namespace) -> int:
    from srperf.cli.results import _open
    from srperf.results.trend import RunFilter, format_table, trends
    from srperf.results.trend_power import visibility

    settings = settings_from(args)
    if args.html:
        from srperf.safety.safe_paths import check_outputs

        check_outputs([(Path(args.html), "--html")])   # before the store is opened
    flt = RunFilter(testbed=args.testbed, suite=args.suite, experiment=args.experiment,
                    since=args.since)
    with _open(args) as store:
        items = trends(store, flt, settings)
        if args.html:
            from srperf.results.trend_report import write_trend_report

            write_trend_report(items, Path(args.html), title=f"srperf trend: {store.where}")
    print(format_table(items, visibility))
    if args.html:
        print(f"trend report: {args.html}")
    return EXIT_OK


COMMANDS = {"trend": cmd_trend}
