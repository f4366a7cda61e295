"""``srperf testbed``: bring a testbed up or down, show its state, trust its SSH nodes'
host keys, prepare or unprepare an SSH SUT's base setup.

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse

from srperf.cli.guard import EXIT_OK
from srperf.config.model import TestbedConfig
from srperf.errors import ConfigError
from srperf.resources import DEFAULT_TESTBED


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
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


def cmd_testbed(args: argparse.Namespace) -> int:
    from srperf.config.loader import resolve_testbed

    from srperf.testbeds import registry as testbeds

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
            from srperf.measure import preflight

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

    from srperf.testbeds import registry as testbeds
    from srperf.testbeds import ssh_prepare

    if tb.kind != "ssh":
        raise ConfigError(tb.source, "kind", tb.kind,
                          "prepare is for an ssh testbed's SUT ('srperf testbed up' makes "
                          "a virtual testbed's base setup itself)")
    setup = ssh_prepare.base_setup(tb)
    if dry_run:
        if undo:
            print(f"# unprepare: undoes what prepare recorded in {setup.record} on the SUT "
                  f"({ssh_prepare.RECORDED}: the value before prepare, read from it)")
        for argv in (setup.commands() if not undo else
                     [a for a, _ in ssh_prepare.undo_commands(None, setup)]):
            print(shlex.join(argv))
        return EXIT_OK
    testbed = testbeds.create(tb)
    from srperf.stateful import killed_run

    was_killed = undo and killed_run.killed(testbed)   # asked before the claim takes it
    testbed.claim(f"srperf testbed {'unprepare' if undo else 'prepare'}")
    try:
        sut = testbed.node("sut")
        if undo:
            left = killed_run.undo(testbed, sut, was_killed)   # left by a killed run
            done = ssh_prepare.unprepare(sut, setup)
            print(f"testbed {tb.name}: base setup undone on {sut.where}" if done else
                  f"testbed {tb.name}: nothing to undo on {sut.where} (no {setup.record})")
            for line in left:
                print(f"testbed {tb.name}: {line}")
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


COMMANDS = {"testbed": cmd_testbed}
