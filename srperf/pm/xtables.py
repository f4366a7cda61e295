"""ip6tables through a runner, for the nodes that hook with it (ip6tables, ipset).

Rule sets are committed with ``ip6tables-restore --noflush`` (one commit: the kernel
sees the whole change at once, whichever backend, legacy or nf_tables, the node's
``ip6tables`` is); counters are read from ``ip6tables-save -c``, where each counting
rule carries a comment ``<base> f<flow> c<colour>``.
"""

from __future__ import annotations

import re
import shlex

from srperf.pm.kernel_base import feed, ours
from srperf.pm.maps import Runner
from srperf.pm.model import Count

TABLE = "mangle"
"""The table every rule goes in (the thesis's: mangle POSTROUTING / PREROUTING)."""
HOOKS = {"ingress": ("POSTROUTING", "-o"), "egress": ("PREROUTING", "-i")}
"""Per role: the built-in chain the node jumps from and the interface option."""

_COUNTED = re.compile(r'^\[(\d+):(\d+)\] -A (\S+) .*--comment "?(\S+) f(\d+) c([01])"?')


def restore(runner: Runner, lines: list[str], table: str = TABLE) -> None:
    """Commit ``lines`` (``:chain``, ``-A``/``-D``/``-F``/``-X`` ...) to ``table`` at once."""
    feed(runner, ["ip6tables-restore", "--noflush"], [f"*{table}", *lines, "COMMIT"])


def save(runner: Runner, table: str = TABLE, counters: bool = False) -> str:
    """``ip6tables-save`` of ``table`` (with the rule counters when ``counters``)."""
    return runner(["ip6tables-save", *(["-c"] if counters else []), "-t", table])


def parse_counts(text: str, base: str) -> dict[int, Count]:
    """``{flow * 2 + colour: Count}`` of the rules of ``base`` that count a flow."""
    out: dict[int, Count] = {}
    for line in text.splitlines():
        match = _COUNTED.match(line.strip())
        if match is None or match.group(4) != base or not ours(match.group(3), base):
            continue
        idx = int(match.group(5)) * 2 + int(match.group(6))
        got = out.get(idx, Count())
        out[idx] = Count(got.packets + int(match.group(1)), got.bytes + int(match.group(2)))
    return {k: v for k, v in out.items() if v.packets or v.bytes}


def removal(text: str, base: str) -> list[str]:
    """The restore lines that remove everything of ``base`` from a saved table: the
    rules of other chains that jump or go to one of its chains, then its chains."""
    chains = [line[1:].split()[0] for line in text.splitlines()
              if line.startswith(":") and ours(line[1:].split()[0], base)]
    lines = []
    for line in text.splitlines():
        if not line.startswith("-A "):
            continue
        argv = shlex.split(line)
        chain = argv[1]
        target = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-j", "-g")),
                      None)
        if target is not None and ours(target, base) and not ours(chain, base):
            lines.append("-D " + line[3:])
    lines += [f"-F {c}" for c in chains] + [f"-X {c}" for c in chains]
    return lines


def remove(runner: Runner, base: str, table: str = TABLE) -> list[str]:
    """Remove every chain of ``base`` and every rule jumping to one (none: nothing is
    run); the lines it committed."""
    lines = removal(save(runner, table), base)
    if lines:
        restore(runner, lines, table)
    return lines


def comment(base: str, flow: int, colour: int) -> str:
    """The comment option of flow ``flow``'s rule of colour ``colour``."""
    return f'-m comment --comment "{base} f{flow} c{colour}"'


__all__ = ["HOOKS", "TABLE", "comment", "parse_counts", "remove", "removal", "restore", "save"]
