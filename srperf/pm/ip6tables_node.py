"""PF-PLM with ip6tables rules (the thesis's first kernel variant): ``pm.implementation:
ip6tables``.

Ingress node (mangle POSTROUTING, ``-o dev``; the packet already carries the SRH its
H.Encaps pushed)::

    POSTROUTING -o dev -m rt --rt-type 4 -j B          B = srperf_pm_<tag>
    B           -j B_c<colour>                         the colour being marked now
    B_c0 / B_c1 one rule per flow: <flow match> -g B_m0 / -g B_m1   (its counter counts)
    B_m0 / B_m1 -j TOS --set-tos 0x00/0x04 / 0x04/0x04 (empty when counting only)

Egress node (mangle PREROUTING, ``-i dev``, before any decapsulation)::

    PREROUTING -i dev -m rt --rt-type 4 -j B
    B           -m tos --tos 0x04/0x04 -g B_c1 ; -g B_c0
    B_c0 / B_c1 one rule per flow: <flow match> -j RETURN

A flow's match is the whole SID list, exactly: ``-m srh --srh-last-entry-eq n-1
--srh-lsid <last SID>`` (the srh match can name only the previous, next and last SID)
and ``-m u32`` on every other Segment List entry at its offset, with the outer Next
Header = 43 (the SRH right after the outer IPv6 header, as H.Encaps builds it; an SRH
further in is not counted).  Rules are scanned in order: the cost grows with the flows.

The colour flips by replacing B's one rule (and B_m<colour>) in one
``ip6tables-restore --noflush`` commit: no packet sees half a change.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path

from srperf.pm import xtables
from srperf.pm.impl_spec import Implementation, check_flows
from srperf.pm.kernel_base import COLOUR_TC_BIT, KernelNode, PmUnsupported, srh_segments, words
from srperf.pm.maps import Runner
from srperf.pm.model import Count, Flow, c_limits

log = logging.getLogger(__name__)

NAME = "ip6tables"
U32_TESTS = 10
"""Tests one ``-m u32`` holds (libxt_u32 takes at most 10); more go in more matches."""


def flow_match(flow: Flow) -> str:
    """The ip6tables match of exactly ``flow``'s SID list (see the module docstring)."""
    segs = srh_segments(flow)
    out = [f"-m srh --srh-last-entry-eq {len(segs) - 1} --srh-lsid {segs[0]}/128"]
    tests = []
    for i, sid in enumerate(segs[1:], start=1):
        packed = ipaddress.IPv6Address(sid).packed
        for w in range(4):
            word = int.from_bytes(packed[4 * w:4 * w + 4], "big")
            tests.append(f"{48 + 16 * i + 4 * w}=0x{word:x}")
    if tests:
        tests.insert(0, "4&0xff00=0x2b00")   # the outer Next Header is the routing header
    for k in range(0, len(tests), U32_TESTS):
        out.append(f'-m u32 --u32 "{"&&".join(tests[k:k + U32_TESTS])}"')
    return " ".join(out)


def hook_rule(role: str, dev: str, base: str) -> str:
    chain, opt = xtables.HOOKS[role]
    return f"-A {chain} {opt} {dev} -m rt --rt-type 4 -j {base}"


def tos_target(colour: int) -> str:
    """Set only the colour bit: TOS zeroes the mask's bits, then XORs the value in."""
    return f"-j TOS --set-tos 0x{COLOUR_TC_BIT if colour else 0:02x}/0x{COLOUR_TC_BIT:02x}"


def attach_lines(role: str, dev: str, base: str) -> list[str]:
    """The chains of a node with no flows yet (ingress: marking colour 0)."""
    chains = [base, f"{base}_c0", f"{base}_c1"]
    if role == "ingress":
        chains += [f"{base}_m0", f"{base}_m1"]
    lines = [f":{c} - [0:0]" for c in chains]
    if role == "ingress":
        lines.append(f"-A {base} -j {base}_c0")
    else:
        lines += [f"-A {base} -m tos --tos 0x{COLOUR_TC_BIT:02x}/0x{COLOUR_TC_BIT:02x} "
                  f"-g {base}_c1", f"-A {base} -g {base}_c0"]
    return lines + [hook_rule(role, dev, base)]


def flow_lines(role: str, base: str, flows: list[Flow]) -> list[str]:
    """Both colour chains emptied and refilled with ``flows``' counting rules."""
    lines = [f"-F {base}_c0", f"-F {base}_c1"]
    for colour in (0, 1):
        then = f"-g {base}_m{colour}" if role == "ingress" else "-j RETURN"
        lines += [f"-A {base}_c{colour} {flow_match(f)} "
                  f"{xtables.comment(base, f.index, colour)} {then}" for f in flows]
    return lines


def colour_lines(base: str, colour: int, marking: bool) -> list[str]:
    """Mark (or only count) ``colour`` from now on: B's rule and B_m<colour>."""
    lines = [f"-F {base}", f"-A {base} -j {base}_c{colour}", f"-F {base}_m{colour}"]
    if marking:
        lines.append(f"-A {base}_m{colour} {tos_target(colour)}")
    return lines


def probe(runner: Runner, role: str, dev: str) -> str | None:
    """None when this node's ip6tables and kernel have the srh, u32, rt, tos and comment
    matches and the TOS target; else their words.  A chain of srperf's own name is
    made with one such rule and removed again."""
    try:
        runner(["ip6tables", "--version"])
    except Exception as exc:  # noqa: BLE001 - the words are the result
        return f"ip6tables: {words(exc)}"
    node = KernelNode(runner, role, dev)
    chain = f"{node.base}_p"
    sample = Flow(0, ("fc00::1", "fc00::2", "fc00::3"))
    try:
        xtables.restore(runner, [f":{chain} - [0:0]",
                                 f"-A {chain} -m rt --rt-type 4 {flow_match(sample)} "
                                 f"-m tos --tos 0x04/0x04 {xtables.comment(node.base, 0, 0)} "
                                 f"{tos_target(1)}"])
    except Exception as exc:  # noqa: BLE001
        return words(exc)
    finally:
        try:
            xtables.remove(runner, chain)
        except Exception as exc:  # noqa: BLE001
            log.warning("pm: could not remove the probe chain %s: %s", chain, exc)
    return None


@dataclass
class Ip6tablesNode(KernelNode):
    """A node counting (and colouring) with ip6tables rule counters."""

    def set_flows(self, flows: list[Flow]) -> None:
        check_flows(IMPLEMENTATION, flows, "<pm flows>")
        xtables.restore(self.runner, flow_lines(self.role, self.base, flows))
        self.flows = list(flows)

    def set_colour(self, colour: int, marking: bool) -> None:
        self._need_ingress("colours")
        xtables.restore(self.runner, colour_lines(self.base, colour & 1, marking))

    def read(self) -> dict[int, Count]:
        return xtables.parse_counts(xtables.save(self.runner, counters=True), self.base)

    def detach(self) -> None:
        if xtables.remove(self.runner, self.base):
            log.info("pm: ip6tables chains of %s removed", self.base)


def attach(runner: Runner, role: str, dev: str, obj_dir: Path) -> Ip6tablesNode:
    """The node's chains on ``dev`` (what an earlier run of the same node left is
    removed first); PmUnsupported with the tool's words when :func:`probe` fails."""
    why = probe(runner, role, dev)
    if why is not None:
        raise PmUnsupported(NAME, why)
    node = Ip6tablesNode(runner, role, dev)
    node.detach()
    xtables.restore(runner, attach_lines(role, dev, node.base))
    log.info("pm: ip6tables %s node on %s (%s)", role, dev, node.base)
    return node


IMPLEMENTATION = Implementation(
    NAME, ("ingress", "egress"), attach,
    "ip6tables rules in mangle POSTROUTING/PREROUTING, one per flow and colour (srh + u32 "
    "match of the whole SID list; the TOS target colours)",
    probe=probe, max_flows=c_limits()["PM_MAX_FLOWS"])

__all__ = ["IMPLEMENTATION", "Ip6tablesNode", "attach", "attach_lines", "colour_lines", "flow_lines",
           "flow_match", "probe"]
