"""``srperf conform``: the conformance matrix of behaviors on a SUT (prints the tables).

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from srperf.errors import ConfigError
from srperf.util.wording import count

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from srperf.forwarders.registry import names as forwarder_names

    c = sub.add_parser(
        "conform", help="run the conformance matrix of behaviors on the SUT; exit 1 on a "
        "failing case",
        description="Send each behavior's packet variants (written from RFC 8986, RFC 8754, "
        "RFC 9800 and the SR service-programming draft) through the SUT and compare what comes out with the specifications: a table "
        "per behavior (pass, fail with the first differing field, finding: a documented "
        "difference of the forwarder, n/a), stored with the run.")
    c.add_argument("experiment", nargs="?", help="experiment file or name: its forwarder, "
                   "behaviors, options and testbed")
    c.add_argument("--forwarder", "-f", choices=forwarder_names(),
                   help="forwarder (default: the experiment's, else linux)")
    c.add_argument("--behavior", "-b", action="append", default=[],
                   help="behavior (repeatable; default: the experiment's, else every "
                        "behavior the forwarder offers)")
    c.add_argument("--testbed", "-t", help="testbed file or name (default: virtual)")
    from srperf.cli.results import _store_args

    _store_args(c, writes=True)
    c.add_argument("--keep-testbed", action="store_true",
                   help="leave a virtual testbed this command brought up")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override an experiment setting (e.g. options.vnf_count=2)")
    c.add_argument("--failures-only", action="store_true",
                   help="print only the failing cases and findings of each table")


def _experiment(args: argparse.Namespace):
    from srperf.forwarders import registry as forwarders
    from srperf import resources
    from srperf.config.loader import (apply_overrides, experiment_from_mapping,
                                      load_experiment)

    from srperf.config.cli_inputs import check_conform_forwarder

    if args.experiment:
        exp = load_experiment(resources.find_config(args.experiment, "experiment"), args.set)
        check_conform_forwarder(exp.forwarder, exp.source, "forwarder")
        if args.forwarder and args.forwarder != exp.forwarder:
            raise ConfigError("--forwarder", "forwarder", args.forwarder,
                              f"the experiment {exp.source} uses {exp.forwarder}")
        if args.behavior:
            data = {"name": exp.name, "forwarder": exp.forwarder,
                    "behaviors": args.behavior, "options": exp.options}
            exp = experiment_from_mapping(data, f"{exp.source} (with --behavior)")
        return exp
    name = args.forwarder or "linux"
    check_conform_forwarder(name, "<command line>", "--forwarder")
    offered = list(forwarders.get(name).behaviors)
    data = {"name": "conform", "forwarder": name, "behaviors": args.behavior or offered}
    apply_overrides(data, args.set, "<command line>")
    return experiment_from_mapping(data, "<command line>")


def cmd_conform(args: argparse.Namespace) -> int:
    from srperf.behaviors import catalogue
    from srperf.forwarders import registry as forwarders
    from srperf.testbeds import registry as testbeds
    from srperf.measure import conform, environment
    from srperf.config.loader import resolve_testbed
    from srperf.cli.results import store_location
    from srperf.results.store import ResultStore
    from srperf.measure.session import MeasurementSession

    from srperf.safety.safe_paths import check_dir

    check_dir(Path(args.results), "--results")
    exp = _experiment(args)
    tb = resolve_testbed(args.testbed, exp)
    from srperf.config.cli_inputs import check_conform_testbed

    testbed = testbeds.create(tb)
    check_conform_testbed(tb.source, tb.kind, testbed.is_model)   # before a run is opened
    forwarder = forwarders.get(exp.forwarder)
    testbed.check_forwarder(forwarder, exp.source)
    options = forwarder.conformance_options(forwarder.parse_options(exp.options))
    behaviors = [catalogue.get(name) for name in exp.behaviors]
    store = ResultStore(store_location(args))
    run_id = store.begin_run(f"conform:{exp.name}", tb.name, forwarder.name,
                             environment.collect(), purpose="conform")
    print(f"conformance run {run_id}: {count(len(behaviors), 'behavior')} of {forwarder.name} on "
          f"{tb.name}")
    status, reports = "failed", []

    def show(report: conform.BehaviorReport) -> None:
        table = conform.format_table(report)
        if args.failures_only:
            head, *rows = table.splitlines()
            keep = [r for r in rows if " fail " in r or " finding " in r]
            table = "\n".join([head, *keep])
        print(table, flush=True)

    try:
        with MeasurementSession(testbed, forwarder, options, store, run_id,
                                keep_testbed=args.keep_testbed) as session:
            env = environment.collect()
            env.update(session.environment())
            store.update_environment(run_id, env)
            reports = conform.run_matrix(session, behaviors, store, run_id, show)
        status = "finished"
    finally:
        store.end_run(run_id, status)
        store.close()
    print("\nbehavior          cases  pass  fail  finding  n/a")
    for row in conform.summary_rows(reports):
        note = f"  not run: {row['skipped']}" if row["skipped"] else ""
        print(f"{row['behavior']:<16} {row['cases']:>6} {row['pass']:>5} {row['fail']:>5} "
              f"{row['finding']:>8} {row['n/a']:>4}{note}")
    print(f"\nstored as run {run_id} in {store.where}")
    failed = [r.behavior for r in reports if r.count("fail")]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


COMMANDS = {"conform": cmd_conform}
