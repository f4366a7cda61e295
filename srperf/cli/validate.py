"""``srperf validate``: experiment, testbed and nightly suite files checked as 'run' would
(an experiment also against its testbed); touches no SUT.

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from srperf import resources
from srperf.cli import guard
from srperf.cli.guard import EXIT_CONFIG, EXIT_OK
from srperf.errors import ConfigError
from srperf.safety import safe_paths

if TYPE_CHECKING:
    from srperf.config.model import TestbedConfig


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    v = sub.add_parser("validate", help="check experiment/testbed files; touches no SUT",
                       description="Check experiment and testbed files as 'run' would, "
                       "an experiment also against its testbed (rates vs line rate, "
                       "frames vs link MTU, forwarder vs SUT). Touches no SUT.",
                       epilog=guard.VALIDATE_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="experiment, testbed or nightly suite YAML file")
    v.add_argument("--testbed", "-t", help="testbed to check experiments against (default: "
                   "the experiment's 'testbed' key, else virtual)")


def cmd_validate(args: argparse.Namespace) -> int:
    from srperf.config.loader import load_experiment, load_testbed, resolve_testbed, validate_file

    from srperf.measure import preflight

    status = EXIT_OK
    for name in args.files:
        try:
            path = _config_path(name)
            kind = validate_file(path)
            if kind == "suite":
                checked = _validate_suite(path, args.testbed)
                print(f"{name}: ok (nightly suite, {checked})")
            elif kind == "experiment":
                exp = load_experiment(path)
                tb = resolve_testbed(args.testbed, exp)
                preflight.check_run(exp, tb)
                print(f"{name}: ok (experiment, checked against testbed {tb.source})")
            else:
                tb = load_testbed(path)
                preflight.check_testbed(tb)
                _check_kernel_target(tb)
                print(f"{name}: ok (testbed)")
        except ConfigError as exc:
            print(f"srperf: config error: {exc}", file=sys.stderr)
            status = EXIT_CONFIG
    return status


def _check_kernel_target(tb: "TestbedConfig") -> None:
    """The kernel an SSH testbed's ``provision.kernel.target`` names is checked as
    ``srperf provision`` would take it (the kernel testbed through the read gate, its
    image present), not only when provisioning."""
    from srperf.kernel.provision import request

    if tb.kind == "ssh" and (tb.provision or {}).get("kernel"):
        request(tb, None)


def _config_path(name: str) -> Path:
    """A file as given, else a shipped experiment or testbed of that name (``quick``,
    ``kernel-src``), as every other command takes them."""
    for kind in ("experiment", "testbed"):
        found = resources.find_config(name, kind)
        if found.is_file():
            return found
    return Path(name)


def _validate_suite(path: Path, testbed: str | None) -> str:
    """A nightly suite as ``srperf nightly`` would read it: the file, its testbed and
    every experiment checked against that testbed."""
    from srperf.config.loader import load_experiment, load_testbed

    from srperf.measure import preflight
    from srperf.nightly import load_suite

    suite = load_suite(path)
    # The directories nightly writes into, checked as nightly checks them (refused when
    # another user can write into one or owns a symlink on the way), without making them.
    safe_paths.check_dir(Path(suite.results), "results", suite.source)
    safe_paths.check_dir_to_be_made(Path(suite.reports), "reports", suite.source)
    tb = load_testbed(resources.find_config(testbed or suite.testbed, "testbed"))
    preflight.check_testbed(tb)
    for name in suite.experiments:
        exp = load_experiment(resources.find_config(name, "experiment"))
        exp = preflight.replace_algorithm(exp, suite.algorithm, suite.source)
        preflight.check_run(exp, tb)
    return f"{len(suite.experiments)} experiment(s) checked against testbed {tb.source}"


COMMANDS = {"validate": cmd_validate}
