"""The ``srperf`` command line: the only place that prints."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from typing import Sequence

from srperf import cli_conform, cli_guard, cli_provision, cli_results, cli_runs, resources
from srperf.config.loader import (DEFAULT_TESTBED, load_experiment, load_testbed,
                                  resolve_testbed, validate_file)
from srperf.config.model import ALGORITHMS, Experiment, TestbedConfig
from srperf.forwarders import names as forwarder_names
from srperf.errors import ConfigError, SrperfError
from srperf.terminate import Terminated, sigterm_as_interrupt
from srperf.wording import count

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_NOTHING_MEASURED = 0, 1, 2, 3


def _rate(text: str) -> float | str:
    """A rate flag as the YAML would hold it: a number (pps) or text with a unit."""
    try:
        return float(text)
    except ValueError:
        return text


PDR_EXPERIMENT = "quick"
"""The experiment whose behaviors ``srperf pdr`` measures when given no ``--behavior``."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="srperf", description="Benchmark SRv6 dataplanes: "
                                "PDR/NDR/MRR of each behavior on each forwarder.",
                                epilog=cli_guard.MAIN_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("validate", help="check experiment/testbed files; touches no SUT",
                       description="Check experiment and testbed files as 'run' would, "
                       "an experiment also against its testbed (rates vs line rate, "
                       "frames vs link MTU, forwarder vs SUT). Touches no SUT.",
                       epilog=cli_guard.VALIDATE_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="experiment, testbed or nightly suite YAML file")
    v.add_argument("--testbed", "-t", help="testbed to check experiments against (default: "
                   "the experiment's 'testbed' key, else virtual)")

    tb = sub.add_parser("testbed", help="bring a testbed up or down, or check it (virtual: "
                        "namespaces; ssh: the SUT answers and has its ports)")
    tb.add_argument("action", choices=["up", "down", "status", "trust", "prepare",
                                       "unprepare"],
                    help="up: bring it up; down: remove it; status: up or down (and, for "
                         "an SSH SUT, what it lacks, by key); trust: show the SSH nodes' "
                         "host key fingerprints and add each to known_hosts when you "
                         "confirm; prepare: apply an SSH SUT's base setup from the file "
                         "(addresses, neighbours, sysctls, ip sr tunsrc), recording what "
                         "it changes on the SUT; unprepare: undo it from that record (and "
                         "the endpoint hosts' setup a killed stateful run left)")
    tb.add_argument("testbed", nargs="?", default=DEFAULT_TESTBED,
                    help="testbed file or name (default: %(default)s)")
    tb.add_argument("--dry-run", action="store_true",
                    help="prepare: print the commands, change nothing")

    r = sub.add_parser("run", help="run every behavior x repetition of an experiment, "
                       "or resume a run whose process died", epilog=cli_guard.RUN_EPILOG)
    r.add_argument("experiment", nargs="?", help="experiment file or name (e.g. quick); "
                   "not with --resume")
    _common_run_args(r)
    r.add_argument("--repetitions", type=int, help="override the experiment's repetitions "
                   "(default: the experiment's)")
    r.add_argument("--resume", metavar="RUN_ID",
                   help="continue this run (id, unique prefix or 'last') of --results: the "
                        "testbed is checked (rebuilt if incomplete), the SUT cleaned, every "
                        "search that ended is kept and skipped, the one that was running is "
                        "redone; the experiment and its settings are the run's own")

    d = sub.add_parser("pdr", help="a PDR/NDR search per behavior: those given with "
                       f"--behavior, else those of experiment {PDR_EXPERIMENT}",
                       description="One PDR/NDR search per behavior, one repetition, with "
                       "the search settings below (not an experiment file's). Without "
                       f"--behavior: every behavior of the default experiment "
                       f"({PDR_EXPERIMENT}, what 'make run' runs) that the forwarder offers, "
                       "named before the first search. Prints each PDR interval and a "
                       "summary table; every trial is stored in --results.")
    d.add_argument("--behavior", "-b", action="append",
                   help="behavior name (srperf behaviors; repeatable); default: every "
                        f"behavior of experiment {PDR_EXPERIMENT} the forwarder offers")
    d.add_argument("--threshold", type=float, action="append",
                   help="loss threshold in %% (repeatable; 0 = NDR); default 0.5")
    d.add_argument("--forwarder", default="linux", choices=forwarder_names(),
                   help="forwarder (default: %(default)s)")
    d.add_argument("--trial-duration", type=float, help="seconds per (final) trial "
                   "(default 1)")
    d.add_argument("--accuracy", type=_rate, help="bisection width: pps or %% of line rate "
                   "(default 0.5%%)")
    d.add_argument("--min-rate", type=_rate, help="pps, '500kpps' or %% of line rate "
                   "(default 1%%)")
    d.add_argument("--max-rate", type=_rate, help="pps, '1.2Mpps' or %% of line rate "
                   "(default 100%%)")
    d.add_argument("--packet-size", type=int, default=64,
                   help="inner IP packet bytes (default: %(default)s)")
    d.add_argument("--no-verify", action="store_true",
                   help="skip checking a few forwarded frames before the search")
    _common_run_args(d)

    sub.add_parser("behaviors", help="list the behavior catalogue and which forwarders "
                   "offer each behavior")
    sub.add_parser("build", help="compile the traffic generator and the eBPF dataplane")
    cli_runs.add_parsers(sub)  # runs
    cli_results.add_parsers(sub)  # report, compare, export, nightly
    cli_provision.add_parsers(sub)
    cli_conform.add_parser(sub)
    return cli_guard.use_help_formatter(p)


def _common_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--testbed", "-t", help="testbed file or name (default: virtual)")
    p.add_argument("--algorithm", "-a", choices=ALGORITHMS,
                   help="search algorithm (default: the experiment's, else mlr)")
    cli_results._store_args(p, writes=True)
    p.add_argument("--keep-testbed", action="store_true",
                   help="leave a virtual testbed this run brought up")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override an experiment setting, e.g. search.trial_duration_s=2 or "
                        "options.proxy.age_s=0 (VALUE is YAML; repeatable)")


def main(argv: Sequence[str] | None = None) -> int:
    from srperf import redact

    with redact.redacting_std_streams():
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    from srperf import redact

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
        log_file = cli_guard.write_error_log(exc, list(argv if argv is not None else sys.argv[1:]))
        print(f"srperf: internal error: {type(exc).__name__}: {str(exc)[:200]} "
              f"(traceback in {log_file or 'no log file could be written'})", file=sys.stderr)
        return EXIT_FAILED


def cmd_validate(args: argparse.Namespace) -> int:
    from srperf import preflight

    status = EXIT_OK
    for name in args.files:
        try:
            kind = validate_file(Path(name))
            if kind == "suite":
                checked = _validate_suite(Path(name), args.testbed)
                print(f"{name}: ok (nightly suite, {checked})")
            elif kind == "experiment":
                exp = load_experiment(Path(name))
                tb = resolve_testbed(args.testbed, exp)
                preflight.check_run(exp, tb)
                print(f"{name}: ok (experiment, checked against testbed {tb.source})")
            else:
                preflight.check_testbed(load_testbed(Path(name)))
                print(f"{name}: ok (testbed)")
        except ConfigError as exc:
            print(f"srperf: config error: {exc}", file=sys.stderr)
            status = EXIT_CONFIG
    return status


def _validate_suite(path: Path, testbed: str | None) -> str:
    """A nightly suite as ``srperf nightly`` would read it: the file, its testbed and
    every experiment checked against that testbed."""
    from srperf import preflight
    from srperf.nightly import load_suite

    suite = load_suite(path)
    tb = load_testbed(resources.find_config(testbed or suite.testbed, "testbed"))
    preflight.check_testbed(tb)
    for name in suite.experiments:
        exp = load_experiment(resources.find_config(name, "experiment"))
        exp = preflight.replace_algorithm(exp, suite.algorithm, suite.source)
        preflight.check_run(exp, tb)
    return f"{len(suite.experiments)} experiment(s) checked against testbed {tb.source}"


def cmd_testbed(args: argparse.Namespace) -> int:
    from srperf import testbeds

    tb = resolve_testbed(args.testbed)
    if args.action == "trust":
        return _trust(tb)
    if args.action in ("prepare", "unprepare"):
        return _prepare(tb, undo=args.action == "unprepare", dry_run=args.dry_run)
    testbed = testbeds.create(tb)
    try:
        if args.action == "status":
            print(f"{tb.name} ({tb.kind}): {'; '.join(testbed.status())}")
            return EXIT_OK
        # refused (TestbedBusy, exit 2) while a run holds the testbed
        testbed.claim(f"srperf testbed {args.action}")
        if args.action == "up":
            from srperf import preflight

            preflight.check_testbed(tb)   # what this host can tell, before making anything
            made = testbed.up()
            print(f"testbed {tb.name} ({tb.kind}) "
                  f"{'up' if made else 'was already up (nothing made)'}")
        else:
            testbed.down()
            print(f"testbed {tb.name} ({tb.kind}) down")
    finally:
        testbed.close()
        testbed.unclaim()
    return EXIT_OK


def _prepare(tb: TestbedConfig, undo: bool, dry_run: bool) -> int:
    """``testbed prepare|unprepare``: an SSH SUT's base setup, applied or undone, under
    the testbed's lock."""
    import shlex

    from srperf import testbeds
    from srperf.testbeds import ssh_prepare

    if tb.kind != "ssh":
        raise ConfigError(tb.source, "kind", tb.kind,
                          "prepare is for an ssh testbed's SUT ('srperf testbed up' makes "
                          "a virtual testbed's base setup itself)")
    setup = ssh_prepare.base_setup(tb)
    if dry_run:
        for argv in setup.commands():
            print(shlex.join(argv))
        return EXIT_OK
    testbed = testbeds.create(tb)
    testbed.claim(f"srperf testbed {'unprepare' if undo else 'prepare'}")
    try:
        sut = testbed.node("sut")
        if undo:
            done = ssh_prepare.unprepare(sut, setup)
            print(f"testbed {tb.name}: base setup undone on {sut.where}" if done else
                  f"testbed {tb.name}: nothing to undo on {sut.where} (no {setup.record})")
            from srperf.stateful.ssh_endpoints import undo_left_setup

            for where in undo_left_setup(tb):   # left by a stateful run that was killed
                print(f"testbed {tb.name}: endpoint setup a killed run left undone on "
                      f"{where}")
        else:
            ssh_prepare.prepare(sut, setup)
            print(f"testbed {tb.name}: base setup applied on {sut.where} (what it changed: "
                  f"{setup.record}; undo with 'srperf testbed unprepare {tb.source}')")
    finally:
        testbed.close()
        testbed.unclaim()
    return EXIT_OK


def _trust(tb: TestbedConfig) -> int:
    """Show each SSH node's host key fingerprint; add it to known_hosts only on 'yes'."""
    from srperf.transports import ssh_trust

    hosts = [("sut", tb.sut.transport), ("tester", tb.tester.transport)]
    if tb.endpoints is not None:
        hosts += [(f"endpoints.{side}", getattr(tb.endpoints, side).transport)
                  for side in ("client", "server")]
    nodes = [(role, t.ssh) for role, t in hosts
             if t is not None and t.kind == "ssh" and t.ssh is not None]
    if not nodes:
        print(f"{tb.source}: no node is reached over SSH; nothing to trust")
        return EXIT_OK
    for role, cfg in nodes:
        name, path = ssh_trust.host_name(cfg), ssh_trust.known_hosts_path(cfg)
        key = ssh_trust.fetch_host_key(cfg)
        print(f"{role} {name}: {key.get_name()} key {ssh_trust.fingerprint(key)}")
        try:
            answer = input(f"Is this the key of {name}? Add it to {path}? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print(f"{role}: not added")
            continue
        print(f"{role}: added to {ssh_trust.add_known_host(cfg, key)}")
    return EXIT_OK


def _run(exp: Experiment, args: argparse.Namespace, tb: TestbedConfig | None = None,
         recipe: dict | None = None, resume: str | None = None) -> int:
    from srperf.orchestrator import Orchestrator
    from srperf.progress import make_progress
    from srperf.results.summary import format_table

    from srperf import preflight

    from srperf.safe_paths import check_dir

    check_dir(Path(args.results), "--results")
    if tb is None:
        tb = resolve_testbed(args.testbed, exp)
    exp = preflight.replace_algorithm(exp, args.algorithm, "<command line>")
    preflight.check_run(exp, tb)
    if recipe is None:
        recipe = cli_runs.recipe(args, tb, mapping=getattr(args, "mapping", None),
                                 experiment_file=getattr(args, "experiment_file", None))
    orch = Orchestrator(exp, tb, Path(args.results), store=cli_results.store_location(args),
                        progress=make_progress(sys.stdout),
                        keep_testbed=args.keep_testbed, recipe=recipe)

    report = orch.run(resume=resume)
    print()
    if report.stateful is not None:
        from srperf.stateful import table

        print(f"run {report.run_id}: {exp.kind} per configuration "
              f"({'pipes chains' if exp.pipes else exp.forwarder}; "
              f"machine shared: figures are noisy):")
        if report.stateful.calibrated_streams is not None:
            print(f"streams: {report.stateful.calibrated_streams} (calibrated)")
        print(table.format_table(table.summarize(report.stateful.rows,
                                                 getattr(exp.goodput, "confidence", 0.95))))
        print(f"\nstored in: {report.store_path}")
        failed = [r for r in report.stateful.rows if r.get("status") == "failed"]
        return EXIT_FAILED if failed else EXIT_OK
    print(f"summary of run {report.run_id} ({exp.forwarder}, algorithm "
          f"{orch.exp.search.algorithm}; rates in kpps; n = repetitions):")
    print(format_table(report.summary))
    latency = [(key, p) for key, result in report.searches for p in result.latency]
    if latency:
        from srperf.orchestrator import describe_latency

        print("\nlatency after each search (at fractions of its PDR):")
        for key, p in latency:
            print(f"  {key.behavior} {key.packet_size} B rep {key.repetition} "
                  f"{p.fraction:.0%}: {describe_latency(p)}")
    if any(result.profile is not None for _, result in report.searches):
        from srperf.results.profiles import format_profiles, profile_rows
        from srperf.results.store import ResultStore

        with ResultStore(cli_results.store_location(args)) as store:
            rows = profile_rows(store, report.run_id)
        print("\nprofile trials (ns of the SUT's forwarding per forwarded packet: its "
              "threads' CPU time, else its CPU's busy time; medians over repetitions):")
        print(format_profiles(rows))
    print(f"\ntrials: {report.store_where}  summary: {report.summary_csv}")
    if orch.testbed.is_model:
        print("NOTE: the testbed is a simulated SUT model; these are not measurements.")
    if orch.testbed.label_line("") != "":
        print(f"NOTE: {orch.testbed.label_line('')}the SUT ran under software emulation: "
              "these figures rank behaviors, they are not the kernel's native cost.")
    if report.nothing_measured:
        print(f"srperf: run {report.run_id}: {report.nothing_measured}", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    failed = [k for k, (st, _) in report.outcomes.items()
              if st in ("verify_failed", "error", "nonconformant")]
    return EXIT_FAILED if failed else EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    import dataclasses

    from srperf.config.loader import check_value

    if args.resume is not None:
        return _resume(args)
    if args.experiment is None:
        raise ConfigError("<command line>", "EXPERIMENT", None,
                          "an experiment file or name is required (or --resume RUN_ID)")
    if args.repetitions is not None:   # the file's bounds, before anything else
        args.repetitions = check_value("--repetitions", args.repetitions, "repetitions")
    args.experiment_file = resources.find_config(args.experiment, "experiment")
    exp = load_experiment(args.experiment_file, args.set)
    if args.repetitions is not None:
        exp = dataclasses.replace(exp, repetitions=args.repetitions)
    return _run(exp, args)


def _resume(args: argparse.Namespace) -> int:
    """``run --resume RUN_ID``: the run's own experiment and testbed, made again."""
    from srperf.cli_results import _open, _resolve

    cli_runs.check_resume_args(args)
    with _open(args) as store:
        (run_id,) = _resolve(store, [args.resume])
        row = store.run_row(run_id)
        where = store.where
    if row is None:
        raise ConfigError(where, "--resume", args.resume, "no such run")
    exp, tb, made = cli_runs.from_recipe(where, run_id, row)
    args.algorithm = made.get("algorithm")
    args.keep_testbed = bool(made.get("keep_testbed"))
    return _run(exp, args, tb=tb, recipe=made, resume=run_id)


def cmd_pdr(args: argparse.Namespace) -> int:
    """A default experiment of one behavior, its search set from the flags and ``--set``."""
    from srperf.config.loader import apply_overrides, experiment_from_mapping

    behaviors = args.behavior or _pdr_default_behaviors(args.forwarder)
    # Measuring the default experiment's behaviors, measure them the way it does (its
    # search: bisection, 1 s trials), so that the command as typed ends in minutes.
    search: dict[str, object] = {} if args.behavior else _pdr_default_search(behaviors)
    for key, value in (("thresholds_pct", args.threshold), ("algorithm", args.algorithm),
                       ("trial_duration_s", args.trial_duration), ("accuracy", args.accuracy),
                       ("min_rate", args.min_rate), ("max_rate", args.max_rate)):
        if value is not None:
            search[key] = value
    data = {"name": f"pdr-{behaviors[0]}" if len(behaviors) == 1 else "pdr",
            "forwarder": args.forwarder,
            "behaviors": behaviors, "packet_sizes": [args.packet_size],
            "verify": not args.no_verify, "search": search}
    apply_overrides(data, args.set, "<command line>")
    exp = experiment_from_mapping(data, "<command line>")
    args.mapping = data
    args.algorithm = None
    return _run(exp, args)


def _pdr_default_search(behaviors: list[str]) -> dict[str, object]:
    """The search block of :data:`PDR_EXPERIMENT` when ``behaviors`` are its own (the
    forwarder offers them), else none (the search's defaults)."""
    from srperf.config.yamlfile import read_mapping

    path = resources.find_config(PDR_EXPERIMENT, "experiment")
    data = read_mapping(path)
    if not set(behaviors) <= set(data.get("behaviors") or ()):
        return {}
    search = dict(data.get("search") or {})
    print(f"pdr: searching as experiment {PDR_EXPERIMENT} does: "
          + ", ".join(f"{k} {v}" for k, v in search.items())
          + " (flags such as --algorithm override)", flush=True)
    return search


def _pdr_default_behaviors(forwarder: str) -> list[str]:
    """The behaviors of :data:`PDR_EXPERIMENT` that ``forwarder`` offers, else (it offers
    none of them) every behavior of the catalogue it offers; printed before the run."""
    from srperf import behaviors as catalogue
    from srperf import forwarders

    path = resources.find_config(PDR_EXPERIMENT, "experiment")
    listed = load_experiment(path).behaviors
    fwd = forwarders.get(forwarder)
    chosen = [b for b in listed if fwd.offers(b)]
    if chosen:
        left = [b for b in listed if b not in chosen]
        source = (f"{count(len(chosen), 'behavior')} of experiment {PDR_EXPERIMENT}, {path}"
                  + (f"; not offered by {forwarder}: {', '.join(left)}" if left else ""))
    else:
        chosen = [b.name for b in catalogue.all_behaviors() if fwd.offers(b.name)]
        source = (f"every behavior {forwarder} offers: it offers none of experiment "
                  f"{PDR_EXPERIMENT}'s")
    if not chosen:
        raise ConfigError("<command line>", "--forwarder", forwarder,
                          "offers no behavior of the catalogue (srperf behaviors)")
    print(f"pdr: no --behavior given: measuring {', '.join(chosen)} on {forwarder} "
          f"({source}); --behavior NAME measures only NAME", flush=True)
    return chosen


def cmd_behaviors(args: argparse.Namespace) -> int:
    from srperf import behaviors as catalogue
    from srperf import forwarders

    for b in catalogue.all_behaviors():
        offered = ", ".join(forwarders.offering(b.name)) or "-"
        print(f"{b.name:<16} {b.display:<16} {b.kind:<9} {offered}")
        for name, why in forwarders.not_offering(b.name).items():
            print(f"{'':<16} not {name}: {why}")
    for fwd in forwarders.REGISTRY.values():
        if fwd.functions:
            print(f"{fwd.name} offers no packet behavior; its behaviors are "
                  f"{', '.join(fwd.functions)}: {fwd.description}")
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    from srperf.drivers.linux import build_srgen
    from srperf.drivers.linux_sink import sink_object

    from srperf.forwarders.ebpf.build import build_all

    built = [str(build_srgen()), str(sink_object())]
    built += [str(p) for p in build_all()]
    from srperf.forwarders.pipes import build_relay

    built.append(str(build_relay()))
    from srperf.delay_line import build_delay_line, divert_object

    built += [str(build_delay_line()), str(divert_object())]
    for path in built:
        print(f"built {path}")
    return EXIT_OK


COMMANDS = {"validate": cmd_validate, "testbed": cmd_testbed, "run": cmd_run, "pdr": cmd_pdr,
            "behaviors": cmd_behaviors, "build": cmd_build}
COMMANDS.update(cli_runs.COMMANDS)
COMMANDS.update(cli_results.COMMANDS)
COMMANDS.update(cli_provision.COMMANDS)
COMMANDS.update(cli_conform.COMMANDS)

if __name__ == "__main__":
    sys.exit(main())
