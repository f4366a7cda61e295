"""``srperf run`` (an experiment, or ``--resume`` of a run) and ``srperf pdr`` (a search per
behavior from the flags): both end in :func:`_run`, the orchestrator and the summary table.

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from srperf import resources
from srperf.cli import guard, results as cli_results, runs as cli_runs
from srperf.cli.guard import EXIT_FAILED, EXIT_NOTHING_MEASURED, EXIT_OK
from srperf.config.model import ALGORITHMS, Experiment, TestbedConfig
from srperf.errors import ConfigError
from srperf.forwarders.registry import names as forwarder_names
from srperf.util.wording import count


def _rate(text: str) -> float | str:
    """A rate flag as the YAML would hold it: a number (pps) or text with a unit."""
    try:
        return float(text)
    except ValueError:
        return text


PDR_EXPERIMENT = "quick"
PDR_DEFAULT_SEARCH_TIME = "2 min"
"""What one search with the search's defaults (mlr) took per behavior here, said before
such a search starts: 107 s and 84 trials for end_t on the shared virtual testbed (issue
49: 140 s and 122 trials for ipv6)."""
PDR_BISECT_SEARCH_TIME = "20 s"
"""The same with quick's bisection: 20 s (20 trials) for end_t, 21 s for ipv6."""
"""The experiment whose behaviors ``srperf pdr`` measures when given no ``--behavior``."""


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    r = sub.add_parser("run", help="run every behavior x repetition of an experiment, "
                       "or resume a run whose process died", epilog=guard.RUN_EPILOG)
    r.add_argument("experiment", nargs="?", help="experiment file or name (e.g. quick); "
                   "not with --resume")
    _common_run_args(r)
    r.add_argument("--repetitions", type=int, help="override the experiment's repetitions "
                   "(default: the experiment's)")
    r.add_argument("--resume", metavar="RUN_ID",
                   help="continue this run (id, unique part or 'last') of --results: the "
                        "testbed is checked (rebuilt if incomplete), the SUT cleaned, every "
                        "search that ended is kept and skipped, the one that was running is "
                        "redone; the experiment and its settings are the run's own")

    d = sub.add_parser("pdr", help="a PDR/NDR search per behavior: those given with "
                       f"--behavior, else those of experiment {PDR_EXPERIMENT}",
                       description="One PDR/NDR search per behavior, one repetition. "
                       f"Without --behavior: every behavior of the default experiment "
                       f"({PDR_EXPERIMENT}, what 'make run' runs) that the forwarder offers, "
                       "named before the first search. Behaviors of "
                       f"{PDR_EXPERIMENT} (with --behavior or without) are searched as "
                       f"{PDR_EXPERIMENT} does (bisection, 1 s trials, accuracy 1%%, min "
                       "rate 5%%: seconds per behavior); others with the defaults below "
                       "(algorithm mlr: minutes per behavior, said before it starts); the "
                       "flags override either. Prints each PDR interval and a summary table; "
                       "every trial is stored in --results.")
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


def _common_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--testbed", "-t", action="append",
                   help="testbed file or name (default: virtual); given more than once, "
                        "the experiment runs on each (kernel targets), repetitions "
                        "interleaved, one run per testbed")
    p.add_argument("--algorithm", "-a", choices=ALGORITHMS,
                   help="search algorithm (default: the experiment's, else mlr)")
    cli_results._store_args(p, writes=True)
    p.add_argument("--keep-testbed", action="store_true",
                   help="leave a virtual testbed this run brought up")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override an experiment setting, e.g. search.trial_duration_s=2 or "
                        "options.proxy.age_s=0 (VALUE is YAML; repeatable)")


def _run(exp: Experiment, args: argparse.Namespace, tb: TestbedConfig | None = None,
         recipe: dict | None = None, resume: str | None = None) -> int:
    from srperf.config.loader import resolve_testbed

    from srperf.measure.orchestrator import Orchestrator
    from srperf.measure.progress import make_progress
    from srperf.results.summary import format_table

    from srperf.measure import preflight

    from srperf.safety.safe_paths import check_dir, ensure_dir

    check_dir(Path(args.results), "--results")
    several = args.testbed if isinstance(args.testbed, list) else None
    if tb is None and several and len(several) > 1:
        from srperf.cli.run_several import run_several

        return run_several(exp, args, several)
    if several:
        args.testbed = several[0]
    if tb is None:
        tb = resolve_testbed(args.testbed, exp)
    exp = preflight.replace_algorithm(exp, args.algorithm, "<command line>")
    preflight.check_run(exp, tb)
    ensure_dir(Path(args.results), "--results")   # usable, or refused naming the option
    cli_results.check_run_store(args)   # before the testbed is touched
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
    vrf = vrf_note(report.outcomes)
    if vrf:
        print(vrf)
    latency = [(key, p) for key, result in report.searches for p in result.latency]
    if latency:
        from srperf.measure.orchestrator import describe_latency

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
    print_costs(cli_results.store_location(args), report.run_id)
    print(f"\ntrials: {report.store_where}  summary: {report.summary_csv}")
    if orch.testbed.is_model:
        print("NOTE: the testbed is a simulated SUT model; these are not measurements.")
    if orch.testbed.label_line("") != "":
        print(f"NOTE: {orch.testbed.label_line('')}the SUT ran under software emulation: "
              "these figures rank behaviors, they are not the kernel's native cost.")
    if report.nothing_measured:
        from srperf.results.measured import what_to_try

        print(f"srperf: run {report.run_id}: {report.nothing_measured}", file=sys.stderr)
        print(f"srperf: to try: {what_to_try(report.nothing_measured)}", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    failed = [k for k, (st, _) in report.outcomes.items()
              if st in ("verify_failed", "error", "nonconformant")]
    return EXIT_FAILED if failed else EXIT_OK


def print_costs(store_location: str, run_id: str) -> None:
    """The run's per-packet costs without a generator (the xdp forwarder's
    BPF_PROG_RUN of each chain), when it has some."""
    from srperf.results.costs import cost_rows, format_costs
    from srperf.results.store import ResultStore

    with ResultStore(store_location) as store:
        rows = cost_rows(store, run_id)
    if rows:
        print("\nper-packet cost without a generator (BPF_PROG_RUN of the chain over its "
              "test frame on the SUT; ns, median of single runs; not a throughput):")
        print(format_costs(rows))


def vrf_note(outcomes: dict[tuple[str, int], tuple[str, str]]) -> str:
    """One line for the behaviors unsupported because this host has no VRF device (a
    kernel without CONFIG_NET_VRF): expected here on every run, not a fault of the run
    (``quick`` lists ``end_dt4`` so that hosts with VRF measure it)."""
    names = sorted({beh for (beh, _), (status, reason) in outcomes.items()
                    if status == "unsupported" and "vrf" in reason.lower()})
    if not names:
        return ""
    return (f"NOTE: {', '.join(names)} need{'s' if len(names) == 1 else ''} a VRF device, "
            "which this host's kernel lacks (CONFIG_NET_VRF, module vrf): unsupported on "
            "every run here, not a failure; the other behaviors are measured as usual.")


def cmd_run(args: argparse.Namespace) -> int:
    import dataclasses

    from srperf.config.loader import check_value, load_experiment

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
    from srperf.cli.results import _open, _resolve

    from srperf.config.cli_inputs import check_run_spec

    check_run_spec("--resume", args.resume)
    cli_runs.check_resume_args(args)
    with _open(args) as store:
        (run_id,) = _resolve(store, [args.resume], finished=False)
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
    # Measuring the default experiment's behaviors (with --behavior or without), measure
    # them the way it does (its search: bisection, 1 s trials), so that the command as
    # typed ends in minutes; other behaviors get the search's defaults, their time said.
    search: dict[str, object] = _pdr_default_search(behaviors, quiet=args.algorithm is not None)
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


def _pdr_default_search(behaviors: list[str], quiet: bool = False) -> dict[str, object]:
    """The search block of :data:`PDR_EXPERIMENT` when ``behaviors`` are its own (the
    forwarder offers them), else none (the search's defaults, whose length is said
    unless ``quiet``: --algorithm chose the search)."""
    from srperf.config.yamlfile import read_mapping
    from srperf.search.registry import DEFAULT_ALGORITHM

    path = resources.find_config(PDR_EXPERIMENT, "experiment")
    data = read_mapping(path)
    if not set(behaviors) <= set(data.get("behaviors") or ()):
        if not quiet:
            print(f"pdr: {', '.join(behaviors)}: not all in experiment {PDR_EXPERIMENT}: "
                  f"the search's defaults (algorithm {DEFAULT_ALGORITHM}, 1 s trials): "
                  f"about {PDR_DEFAULT_SEARCH_TIME} and 80-120 trials per behavior here "
                  f"(--algorithm bisect: about {PDR_BISECT_SEARCH_TIME})", flush=True)
        return {}
    search = dict(data.get("search") or {})
    print(f"pdr: searching as experiment {PDR_EXPERIMENT} does: "
          + ", ".join(f"{k} {v}" for k, v in search.items())
          + " (flags such as --algorithm override)", flush=True)
    return search


def _pdr_default_behaviors(forwarder: str) -> list[str]:
    """The behaviors of :data:`PDR_EXPERIMENT` that ``forwarder`` offers, else (it offers
    none of them) every behavior of the catalogue it offers; printed before the run."""
    from srperf.config.loader import load_experiment

    from srperf.behaviors import catalogue
    from srperf.forwarders import registry as forwarders

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


COMMANDS = {"run": cmd_run, "pdr": cmd_pdr}
