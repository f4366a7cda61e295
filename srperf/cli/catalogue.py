"""``srperf behaviors``: the behavior catalogue and the forwarders that offer each behavior.

Registered by :mod:`srperf.cli`; like it, this module prints.
"""

from __future__ import annotations

import argparse

from srperf.cli.guard import EXIT_OK


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    sub.add_parser("behaviors", help="list the behavior catalogue and which forwarders "
                   "offer each behavior")


def cmd_behaviors(args: argparse.Namespace) -> int:
    from srperf.behaviors import catalogue
    from srperf.forwarders import registry as forwarders

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


COMMANDS = {"behaviors": cmd_behaviors}
