"""``srperf provision``: write the CloudLab profile, or install and tune a testbed's nodes.

Registered by :mod:`srperf.cli` (``add_parsers`` and ``COMMANDS``); like it, this
module prints.  Exit status: 0 every step done or already there (``--check``: no
difference), 1 a step failed (``--check``: a difference), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from srperf import resources
from srperf.errors import ConfigError
from srperf.provision.runner import StepReport
from srperf.provision.steps import Outcome, Role, Step
from srperf.util.wording import count

ROLES = ("tester", "sut")


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("provision", help="write the CloudLab profile (TARGET 'cloudlab'), "
                       "or install and tune a testbed's nodes over SSH (TARGET a testbed)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="TARGET",
                   help="'cloudlab', or a testbed file or name")
    p.add_argument("--role", choices=ROLES, action="append",
                   help="only this node (repeatable; default: sut and tester)")
    p.add_argument("--dry-run", action="store_true",
                   help="print every step's commands; touch no node")
    p.add_argument("--check", action="store_true",
                   help="read the nodes back and print what differs from the testbed file")
    p.add_argument("-o", "--output", help="with 'cloudlab': where to write the profile "
                   "script (default: standard output)")
    p.add_argument("--kernel", metavar="KERNEL_TESTBED",
                   help="install only this kernel testbed's kernel on the SUT, reboot into "
                   "it and check uname -r (default: provision.kernel.target, after the "
                   "SUT's other steps)")


def _check_options(args: argparse.Namespace) -> None:
    """Options that contradict each other or the target, refused before anything is
    read or touched (ConfigError: exit 2, naming the option)."""
    where = "<command line>"
    if args.dry_run and args.check:
        raise ConfigError(where, "--check", True, "--dry-run prints the commands and runs "
                          "none, --check reads the nodes back: give one of them")
    if args.kernel is not None and args.target == "cloudlab":
        raise ConfigError(where, "--kernel", args.kernel, "a kernel is installed on a "
                          "testbed's SUT; TARGET 'cloudlab' writes a profile")
    if args.kernel is not None and args.role and "sut" not in args.role:
        raise ConfigError(where, "--role", ",".join(args.role), "--kernel installs on the "
                          "SUT: add --role sut, or leave --role out")
    if args.output is not None and args.target != "cloudlab":
        raise ConfigError(where, "-o", args.output, "only with TARGET 'cloudlab'")


def cmd_provision(args: argparse.Namespace) -> int:
    _check_options(args)
    if args.target == "cloudlab":
        return _cloudlab(args.output)
    from srperf.testbeds import registry as testbeds
    from srperf.config.loader import resolve_testbed
    from srperf.provision import plan, runner

    config = resolve_testbed(args.target)
    from srperf.cli import kernel

    wanted = kernel.kernel_request(config, args)
    testbed = testbeds.create(config)
    if wanted is not None and args.kernel is not None:
        return kernel.provision_kernel(args, wanted, testbed)
    failed = False
    # changing the nodes while a run measures would spoil it: applying steps holds
    # the testbed's lock (TestbedBusy, exit 2, naming the run); reading does not
    claimed = not (args.dry_run or args.check) and testbed.claim("srperf provision")
    try:
        for name in args.role or ["sut", "tester"]:
            role = Role(name)
            node = None if args.dry_run else testbed.node(name)
            steps = plan.plan(config, role, node)
            if not steps:
                print(f"{name}: nothing to provision")
                continue
            if args.dry_run:
                _print_plan(name, steps)
            elif args.check:
                failed |= _print_reports(name, runner.check(node, steps), check=True)
            else:
                print(f"{name} ({node.where}):")
                failed |= _print_reports(name, runner.provision(node, steps), check=False)
    finally:
        if claimed:
            testbed.unclaim()
        testbed.close()
    if wanted is not None and "sut" in (args.role or ["sut"]) and (
            args.check or args.dry_run or not failed):
        return max(kernel.provision_kernel(args, wanted, testbed), 1 if failed else 0)
    return 1 if failed else 0


def _cloudlab(output: str | None) -> int:
    src = resources.cloudlab_profile()
    if output is None:
        sys.stdout.write(src.read_text())
        return 0
    from srperf.safety import safe_paths

    safe_paths.write_file(Path(output), src.read_bytes(), what="--output")
    print(f"CloudLab profile written to {output}: paste it into a new profile "
          f"(Experiments > Create Experiment Profile), instantiate it, then copy "
          f"testbed/cloudlab.yaml and run srperf provision on it")
    return 0


def _print_plan(role: str, steps: Sequence[Step]) -> None:
    print(f"{role}: {count(len(steps), 'step')} (dry run: nothing is run)")
    for step in steps:
        print(f"- {step.name}" + (f": {step.why}" if step.why else "")
              + (" (needs a reboot to take effect)" if step.reboot else ""))
        if step.applies:
            print(f"    applies if: {step.applies}")
        print(f"    check: {step.check}")
        for command in step.apply:
            print(f"    run:   {command}")


def _print_reports(role: str, reports: Sequence[StepReport], check: bool) -> bool:
    failed = False
    for r in reports:
        if check:
            label = {Outcome.ALREADY: "as described", Outcome.FAILED: "DIFFERS",
                     Outcome.NOT_APPLICABLE: "not applicable"}[r.outcome]
        else:
            label = r.outcome.value
        print(f"  {r.step.name}: {label}")
        if r.outcome is Outcome.FAILED:
            failed = True
            if not check:
                print(f"    command: {r.command}")
            for line in (r.output or "(no output)").splitlines()[-10:]:
                print(f"    | {line}")
    return failed


COMMANDS = {"provision": cmd_provision}

__all__ = ["COMMANDS", "add_parsers"]
