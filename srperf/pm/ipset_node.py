"""PF-PLM with ipset counters (the thesis's second kernel variant, stock ipset):
``pm.implementation: ipset``.

Two sets per node, ``srperf_pm_<tag>_c0`` / ``_c1`` (``hash:net family inet6 counters``),
each holding every monitored flow's key, so a set's element counters are that colour's
per-flow counts; the set is found by hash, so the cost does not grow with the flows.
ip6tables hooks them:

- ingress node (mangle POSTROUTING, ``-o dev``): ``-m rt --rt-type 4 -j B``; ``B`` holds
  ``-j B_k<colour>``; ``B_k0`` / ``B_k1`` hold ``-m set --match-set B_c0/_c1 dst -j TOS
  --set-tos 0x00/0x04`` / ``0x04/0x04`` (no target when counting only);
- egress node (mangle PREROUTING, ``-i dev``): ``-m rt --rt-type 4 -j B``; ``B`` holds
  ``-m tos --tos 0x04/0x04 -m set --match-set B_c1 dst -j RETURN`` and the same for
  colour 0.

**What it matches**: stock ipset has no SID-list type (the thesis patched one in,
``sr6hash``), and a set match looks at the packet's addresses only.  A flow's key is its
**first SID**, matched against the outer destination (``hash:net``, /128): the
destination H.Encaps writes, and the one the egress node sees when it is the node of
the first segment.  Two flows with the same first SID cannot be told apart: they are
refused (ConfigError ``pm.flows[i]``).  A packet to a monitored first SID with another
SID list is counted as that flow (the documented deviation), and an egress node that
sees a later segment as destination counts nothing.

The colour flips by replacing ``B``'s rule in one ``ip6tables-restore --noflush`` commit
(the colour written is in the rule, not in the set, so swapping sets alone could not
flip it); new flows are loaded into fresh sets that ``ipset swap`` puts in place of the
old ones, each swap atomic, the counters starting at 0.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from srperf.errors import ConfigError
from srperf.pm import xtables
from srperf.pm.impl_spec import Implementation, check_flows
from srperf.pm.kernel_base import COLOUR_TC_BIT, KernelNode, PmUnsupported, feed, ours, words
from srperf.pm.maps import Runner
from srperf.pm.model import Count, Flow, c_limits

log = logging.getLogger(__name__)

NAME = "ipset"
SET_TYPE = "hash:net family inet6 counters"
_ADD = re.compile(r"^add (\S+) (\S+?)(?:/128)? packets (\d+) bytes (\d+)")


def max_flows() -> int:
    return c_limits()["PM_MAX_FLOWS"]


def refuse(flows: list[Flow], source: str) -> None:
    """ConfigError ``pm.flows[i]`` for a flow whose first SID an earlier flow has."""
    seen: dict[str, int] = {}
    for i, flow in enumerate(flows):
        if flow.sids[0] in seen:
            raise ConfigError(source, f"pm.flows[{i}]", list(flow.sids),
                              f"ipset tells flows apart by their first SID (the outer "
                              f"destination); flow {seen[flow.sids[0]]} has {flow.sids[0]} too")
        seen[flow.sids[0]] = i


def create(name: str) -> str:
    return f"create {name} {SET_TYPE} maxelem {max_flows()}"


def _tos(colour: int) -> str:
    return f"0x{COLOUR_TC_BIT if colour else 0:02x}/0x{COLOUR_TC_BIT:02x}"


def attach_lines(role: str, dev: str, base: str) -> list[str]:
    """The ip6tables chains of a node (ingress: counting colour 0); its sets exist."""
    chain, opt = xtables.HOOKS[role]
    if role == "ingress":
        lines = [f":{c} - [0:0]" for c in (base, f"{base}_k0", f"{base}_k1")]
        lines += [f"-A {base} -j {base}_k0"]
        lines += [f"-A {base}_k{c} -m set --match-set {base}_c{c} dst" for c in (0, 1)]
    else:
        lines = [f":{base} - [0:0]"]
        lines += [f"-A {base} -m tos --tos {_tos(c)} -m set --match-set {base}_c{c} dst "
                  "-j RETURN" for c in (1, 0)]
    return lines + [f"-A {chain} {opt} {dev} -m rt --rt-type 4 -j {base}"]


def colour_lines(base: str, colour: int, marking: bool) -> list[str]:
    """Mark (or only count) ``colour`` from now on: ``B``'s rule and ``B_k<colour>``."""
    rule = f"-A {base}_k{colour} -m set --match-set {base}_c{colour} dst"
    return [f"-F {base}", f"-A {base} -j {base}_k{colour}", f"-F {base}_k{colour}",
            rule + (f" -j TOS --set-tos {_tos(colour)}" if marking else "")]


def flow_lines(base: str, flows: list[Flow]) -> list[str]:
    """``ipset restore`` lines: fresh sets of ``flows`` swapped in for both colours."""
    lines = []
    for c in (0, 1):
        lines += [create(f"{base}_n{c}")] + [f"add {base}_n{c} {f.sids[0]}/128" for f in flows]
    for c in (0, 1):
        lines += [f"swap {base}_n{c} {base}_c{c}", f"destroy {base}_n{c}"]
    return lines


def parse_counts(text: str, base: str, flows: list[Flow]) -> dict[int, Count]:
    """``{flow * 2 + colour: Count}`` from ``ipset list -o save`` (elements by first SID)."""
    index = {f.sids[0]: f.index for f in flows}
    out: dict[int, Count] = {}
    for line in text.splitlines():
        match = _ADD.match(line.strip())
        if match is None:
            continue
        name, elem = match.group(1), match.group(2)
        if name not in (f"{base}_c0", f"{base}_c1") or elem not in index:
            continue
        pkts, octets = int(match.group(3)), int(match.group(4))
        if pkts or octets:
            out[index[elem] * 2 + int(name[-1])] = Count(pkts, octets)
    return out


def set_names(runner: Runner, base: str) -> list[str]:
    """The node's ipsets (``ipset list -n``)."""
    return [n for n in runner(["ipset", "list", "-n"]).split() if ours(n, base)]


DESTROY_TRIES = 20
"""Tries of ``ipset destroy`` 0.1 s apart: the nf_tables backend of ip6tables may drop
its reference to a set a moment after the rule is gone ("in use by a kernel component")."""


def destroy(runner: Runner, name: str, sleep: Callable[[float], None] = time.sleep) -> None:
    """``ipset destroy name``, again while the kernel still holds the set."""
    for attempt in range(DESTROY_TRIES):
        try:
            runner(["ipset", "destroy", name])
            return
        except Exception as exc:  # noqa: BLE001 - only "in use" is waited for
            if "in use" not in str(exc) or attempt == DESTROY_TRIES - 1:
                raise
            sleep(0.1)


def probe(runner: Runner, role: str, dev: str) -> str | None:
    """None when ipset and ip6tables and the kernel have what the node uses (a set of
    the type above, the set, rt and tos matches, the TOS target); else their words.  A
    set and a chain of srperf's own name are made and removed again."""
    for tool in ("ipset", "ip6tables"):
        try:
            runner([tool, "--version"])
        except Exception as exc:  # noqa: BLE001 - the words are the result
            return f"{tool}: {words(exc)}"
    base = KernelNode(runner, role, dev).base + "_p"
    try:
        feed(runner, ["ipset", "restore"], [create(base), f"add {base} fc00::1/128"])
        xtables.restore(runner, [f":{base} - [0:0]",
                                 f"-A {base} -m rt --rt-type 4 -m tos --tos {_tos(1)} "
                                 f"-m set --match-set {base} dst -j TOS --set-tos {_tos(1)}"])
    except Exception as exc:  # noqa: BLE001
        return words(exc)
    finally:
        try:
            xtables.remove(runner, base)
            if base in set_names(runner, base):
                destroy(runner, base)
        except Exception as exc:  # noqa: BLE001
            log.warning("pm: could not remove the probe %s: %s", base, exc)
    return None


@dataclass
class IpsetNode(KernelNode):
    """A node counting (and colouring) with ipset element counters."""

    def set_flows(self, flows: list[Flow]) -> None:
        check_flows(IMPLEMENTATION, flows, "<pm flows>")
        feed(self.runner, ["ipset", "restore"], flow_lines(self.base, flows))
        self.flows = list(flows)

    def set_colour(self, colour: int, marking: bool) -> None:
        self._need_ingress("colours")
        xtables.restore(self.runner, colour_lines(self.base, colour & 1, marking))

    def read(self) -> dict[int, Count]:
        text = "\n".join(self.runner(["ipset", "list", "-o", "save", f"{self.base}_c{c}"])
                         for c in (0, 1))
        return parse_counts(text, self.base, self.flows)

    def detach(self) -> None:
        removed = xtables.remove(self.runner, self.base)
        sets = set_names(self.runner, self.base)
        for name in sets:
            destroy(self.runner, name)
        if removed or sets:
            log.info("pm: ipset node %s removed (sets %s)", self.base, ", ".join(sets))


def attach(runner: Runner, role: str, dev: str, obj_dir: Path) -> IpsetNode:
    """The node's sets and chains on ``dev`` (what an earlier run of the same node left
    is removed first); PmUnsupported with the tools' words when :func:`probe` fails."""
    why = probe(runner, role, dev)
    if why is not None:
        raise PmUnsupported(NAME, why)
    node = IpsetNode(runner, role, dev)
    node.detach()
    feed(runner, ["ipset", "restore"], [create(f"{node.base}_c{c}") for c in (0, 1)])
    try:
        xtables.restore(runner, attach_lines(role, dev, node.base))
    except Exception:
        node.detach()
        raise
    log.info("pm: ipset %s node on %s (%s)", role, dev, node.base)
    return node


IMPLEMENTATION = Implementation(
    NAME, ("ingress", "egress"), attach,
    "ipset hash:net counters keyed by the flow's first SID (the outer destination), one "
    "set per colour, hooked by ip6tables in mangle (the TOS target colours)",
    probe=probe, max_flows=c_limits()["PM_MAX_FLOWS"], check_flows=refuse)

__all__ = ["IMPLEMENTATION", "IpsetNode", "attach", "attach_lines", "colour_lines",
           "destroy", "flow_lines", "parse_counts", "probe", "refuse"]
