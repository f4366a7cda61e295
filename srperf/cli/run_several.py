"""``srperf run EXPERIMENT --testbed A --testbed B ...``: one experiment on several
testbeds (kernel targets above all), repetitions interleaved (repetition 1 on every
testbed, then repetition 2...), one run per testbed (:mod:`srperf.kernel.interleave`).

Called by :mod:`srperf.cli.run` when ``--testbed`` is given more than once; like it,
this module prints.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from srperf.cli import results as cli_results, runs as cli_runs
from srperf.cli.guard import EXIT_FAILED, EXIT_NOTHING_MEASURED, EXIT_OK
from srperf.config.model import Experiment, TestbedConfig
from srperf.errors import ConfigError


def run_several(exp: Experiment, args: argparse.Namespace, names: list[str]) -> int:
    """Run ``exp`` on every testbed in ``names``, interleaved; print each run's summary
    and how to compare them."""
    from srperf.measure import preflight
    from srperf.config.loader import resolve_testbed
    from srperf.kernel.interleave import run_interleaved
    from srperf.measure.orchestrator import Orchestrator
    from srperf.measure.progress import PlainProgress
    from srperf.safety.safe_paths import check_dir, ensure_dir

    check_dir(Path(args.results), "--results")
    exp = preflight.replace_algorithm(exp, args.algorithm, "<command line>")
    tbs: list[TestbedConfig] = [resolve_testbed(name, exp) for name in names]
    _check_distinct(tbs)
    for tb in tbs:
        preflight.check_run(exp, tb)
    ensure_dir(Path(args.results), "--results")
    cli_results.check_run_store(args)
    group = {"group": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
             "testbeds": [tb.source for tb in tbs]}
    # One plain view per run (their lines interleave as the runs do): a shared view
    # would count one run's searches in another's and end it under the other's id.
    views = [PlainProgress(sys.stdout) for _ in tbs]
    orchs: list[Orchestrator] = []
    for tb, view in zip(tbs, views):
        recipe = cli_runs.recipe(args, tb, mapping=getattr(args, "mapping", None),
                                 experiment_file=getattr(args, "experiment_file", None))
        recipe["interleaved"] = group
        orchs.append(Orchestrator(exp, tb, Path(args.results),
                                  store=cli_results.store_location(args), progress=view,
                                  keep_testbed=args.keep_testbed, recipe=recipe))
    print(f"{exp.name} on {len(tbs)} testbeds, repetitions interleaved: "
          + ", ".join(tb.name for tb in tbs), flush=True)
    turns = run_interleaved([_participant(o) for o in orchs], views[0])
    return _print_turns(exp, orchs, turns, cli_results.store_location(args))


def _check_distinct(tbs: list[TestbedConfig]) -> None:
    """Two testbeds of a group may not share a prefix (their namespaces, taps and locks
    would be the same)."""
    seen: dict[str, str] = {}
    for tb in tbs:
        if tb.prefix in seen:
            raise ConfigError(tb.source, "prefix", tb.prefix,
                              f"also the prefix of {seen[tb.prefix]}: testbeds run "
                              "side by side need prefixes of their own")
        seen[tb.prefix] = tb.source


def _participant(orch: Any) -> Any:
    from srperf.kernel.interleave import Participant, process_cpu_s

    def sut_cpu_s() -> float | None:
        pid_of = getattr(orch.testbed, "sut_pid", None)
        return process_cpu_s(pid_of()) if pid_of is not None else None

    return Participant(orch.tb.name, orch.steps, lambda: orch.report, sut_cpu_s)


def _boot_s(store_location: str, run_id: str) -> float | None:
    """How long the run's guest took to boot, s (None: not a kernel target)."""
    from srperf.results.store import ResultStore

    with ResultStore(store_location) as store:
        row = store.run_row(run_id) or {}
    target = (row.get("environment") or {}).get("kernel_target") or {}
    boot = target.get("boot_s") if isinstance(target, dict) else None
    return float(boot) if isinstance(boot, (int, float)) else None


def _print_turns(exp: Experiment, orchs: list[Any], turns: list[Any],
                 args_store: str) -> int:
    from srperf.results.summary import format_table

    code = EXIT_OK
    measured = []
    for orch, turn in zip(orchs, turns):
        rep = turn.report
        print()
        label = orch.testbed.label_line("")
        if rep is None:
            print(f"{turn.testbed}: no run ({turn.error})")
            code = EXIT_FAILED
            continue
        state = "finished" if turn.error is None else f"failed: {turn.error}"
        idle = turn.idle_cpu_share
        boot = _boot_s(args_store, rep.run_id)
        print(f"{label}{turn.testbed}: run {rep.run_id} {state}"
              + (f"; idle between its turns: {100 * idle:.1f} % of a CPU over "
                 f"{turn.idle_wall_s:.0f} s" if idle is not None else "")
              + (f"; its boot took {boot:.1f} s" if boot is not None else ""))
        if not rep.summary.empty:
            print(format_table(rep.summary))
        if turn.error is not None or any(st in ("verify_failed", "error", "nonconformant")
                                         for st, _ in rep.outcomes.values()):
            code = EXIT_FAILED
        if rep.nothing_measured:
            from srperf.results.measured import what_to_try

            print(f"srperf: run {rep.run_id}: {rep.nothing_measured}", file=sys.stderr)
            print(f"srperf: to try: {what_to_try(rep.nothing_measured)}",
                  file=sys.stderr)
        else:
            measured.append(rep.run_id)
    if any(o.testbed.label_line("") for o in orchs):
        print("\nNOTE: [EMULATED] runs ran under software emulation: their figures rank "
              "behaviors and kernels, they are not the kernels' native cost.")
    if len(measured) >= 2:
        print(f"\ncompare the kernels: srperf compare {measured[0]} {measured[1]}"
              + (f" (and {', '.join(measured[2:])})" if len(measured) > 2 else ""))
    if code == EXIT_OK and not measured:
        return EXIT_NOTHING_MEASURED
    return code


__all__ = ["run_several"]
