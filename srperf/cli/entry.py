"""The ``srperf`` command line: the only place that prints.

One module per command group, each with ``add_parsers`` (its subcommands' options)
and ``COMMANDS`` (name -> function): validate, testbed, run (run, pdr), catalogue
(behaviors), build, runs, results (report, compare, export, nightly), provision,
conform; :mod:`helptext` holds what ``--help`` says besides the options and
:mod:`guard` what happens around every command (exit codes, epilogs, the help
layout, the error log).
Heavy libraries are imported inside the commands that use them, so that
``srperf --help`` and ``srperf validate`` start quickly.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Sequence

from srperf.cli import (ab, build, catalogue, conform, guard, helptext, kernel, provision, results,
                        run, runs, testbed, trend, validate)
from srperf.cli.guard import EXIT_CONFIG, EXIT_FAILED, EXIT_NOTHING_MEASURED, EXIT_OK
from srperf.cli.run import PDR_EXPERIMENT
from srperf.errors import ConfigError, SrperfError
from srperf.util.terminate import Terminated, sigterm_as_interrupt


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="srperf", description="Benchmark SRv6 dataplanes: "
                                "PDR/NDR/MRR of each behavior on each forwarder.",
                                epilog=guard.MAIN_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate.add_parsers(sub)
    testbed.add_parsers(sub)
    run.add_parsers(sub)  # run, pdr
    catalogue.add_parsers(sub)  # behaviors
    build.add_parsers(sub)
    runs.add_parsers(sub)  # runs
    results.add_parsers(sub)  # report, compare, export, nightly
    provision.add_parsers(sub)
    conform.add_parser(sub)
    trend.add_parsers(sub)
    kernel.add_parsers(sub)
    ab.add_parsers(sub)
    return helptext.use_help_formatter(p)


def main(argv: Sequence[str] | None = None) -> int:
    from srperf.safety import redact

    redact.scan_invocation(list(argv if argv is not None else sys.argv[1:]))
    with redact.redacting_std_streams():
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    from srperf.safety import redact

    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    redact.install_log_filter()
    try:
        with sigterm_as_interrupt():
            return COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"srperf: {exc.label}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except SrperfError as exc:
        print(f"srperf: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # a disk full, a permission: the system's words, one line
        print(f"srperf: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Terminated:
        print("srperf: terminated (SUT cleaned, finished trials kept)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("srperf: interrupted (SUT cleaned, finished trials kept)", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the user
        log_file = guard.write_error_log(exc, list(argv if argv is not None else sys.argv[1:]))
        print(f"srperf: internal error: {type(exc).__name__}: {redact.redact(str(exc))[:200]} "
              f"(traceback in {log_file or 'no log file could be written'})", file=sys.stderr)
        return EXIT_FAILED


COMMANDS: dict = {}
for _group in (validate, testbed, run, catalogue, build, runs, results, provision, conform,
               trend, kernel, ab):
    COMMANDS.update(_group.COMMANDS)

__all__ = ["COMMANDS", "EXIT_CONFIG", "EXIT_FAILED", "EXIT_NOTHING_MEASURED", "EXIT_OK",
           "PDR_EXPERIMENT", "build_parser", "main"]
