"""PF-PLM with nftables rules: ``pm.implementation: nftables``.

Everything is in one table of the node's own, ``table ip6 srperf_pm_<tag>``:

- ingress node: base chain ``post`` (hook postrouting, priority mangle) with one rule
  ``oif <dev> rt type 4 jump c<colour>``; ``c0`` / ``c1`` hold one rule per flow
  ``<flow match> counter goto m<colour>``; ``m0`` / ``m1`` colour:
  ``@nh,9,1 set 0`` / ``@nh,9,1 set 1`` (bit 9 of the IPv6 header is Traffic Class
  bit 2, the colour bit; nothing else of the packet changes), empty when counting only;
- egress node: base chain ``pre`` (hook prerouting, priority mangle, before any
  decapsulation): ``iif <dev> rt type 4 @nh,9,1 1 goto c1`` and ``... goto c0``; ``c0`` /
  ``c1`` hold ``<flow match> counter return`` per flow.

A flow's match is the whole SID list, exactly: ``srh last-entry n-1``, ``srh sid[1]`` and
``srh sid[2]`` (Segment List[0] and [1], found wherever the SRH is), and for the entries
after those, which nft 1.0.6 cannot name, a raw payload match at their offset with the
outer Next Header = 43 (the SRH right after the outer IPv6 header, as H.Encaps builds
it; an SRH further in is not counted for lists of three SIDs or more).  Rules are
scanned in order.

Every change (flows, colour flip) is one ``nft`` command line, so one netlink
transaction: no packet sees half a change.  Counters are read from ``nft -j list
table``; each counting rule carries the comment ``f<flow> c<colour>``.  Detaching
deletes the table, and so everything the node added.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srperf.pm.impl_spec import Implementation, check_flows
from srperf.pm.kernel_base import KernelNode, PmUnsupported, srh_segments, words
from srperf.pm.maps import Runner
from srperf.pm.model import Count, Flow, c_limits

log = logging.getLogger(__name__)

NAME = "nftables"
COLOUR_BIT = "@nh,9,1"
"""The colour bit as an nft raw payload expression (Traffic Class bit 2)."""
_COMMENT = re.compile(r"^f(\d+) c([01])$")


EXTHDR_SIDS = 2
"""Segment List entries nft (1.0.6) can name as ``srh sid[k]`` (its later ``sid[k]``
have no type: "No symbol type information"); later ones are matched as raw payload."""


def flow_match(flow: Flow) -> str:
    """The nft match of exactly ``flow``'s SID list (see the module docstring)."""
    segs = srh_segments(flow)
    out = [f"srh last-entry {len(segs) - 1}"]
    raw = []
    for k, sid in enumerate(segs):
        if k < EXTHDR_SIDS:
            out.append(f"srh sid[{k + 1}] {sid}")
        else:
            word = int.from_bytes(ipaddress.IPv6Address(sid).packed, "big")
            raw.append(f"@nh,{(48 + 16 * k) * 8},128 0x{word:032x}")
    if raw:
        out = ["ip6 nexthdr 43"] + out + raw
    return " ".join(out)


def _hook(role: str, dev: str, colour: int) -> str:
    if role == "ingress":
        return f'oif "{dev}" rt type 4 jump c{colour}'
    return f'iif "{dev}" rt type 4 {COLOUR_BIT} 1 goto c1' if colour else \
        f'iif "{dev}" rt type 4 goto c0'


def attach_commands(role: str, dev: str, table: str) -> list[str]:
    """The table of a node with no flows yet (ingress: counting colour 0)."""
    t = f"ip6 {table}"
    if role == "ingress":
        base = (f"add chain {t} post {{ type filter hook postrouting priority mangle; "
                "policy accept; }")
        parts = ["c0", "c1", "m0", "m1"]
        rules = [f"add rule {t} post {_hook(role, dev, 0)}"]
    else:
        base = (f"add chain {t} pre {{ type filter hook prerouting priority mangle; "
                "policy accept; }")
        parts = ["c0", "c1"]
        rules = [f"add rule {t} pre {_hook(role, dev, 1)}",
                 f"add rule {t} pre {_hook(role, dev, 0)}"]
    return ([f"add table {t}"] + [f"add chain {t} {c}" for c in parts] + [base] + rules)


def flow_commands(role: str, table: str, flows: list[Flow]) -> list[str]:
    """Both colour chains emptied and refilled with ``flows``' counting rules."""
    t = f"ip6 {table}"
    out = [f"flush chain {t} c0", f"flush chain {t} c1"]
    for colour in (0, 1):
        then = f"goto m{colour}" if role == "ingress" else "return"
        out += [f'add rule {t} c{colour} {flow_match(f)} counter {then} '
                f'comment "f{f.index} c{colour}"' for f in flows]
    return out


def colour_commands(dev: str, table: str, colour: int, marking: bool) -> list[str]:
    """Mark (or only count) ``colour`` from now on: ``post``'s jump and ``m<colour>``."""
    t = f"ip6 {table}"
    out = [f"flush chain {t} post", f"add rule {t} post {_hook('ingress', dev, colour)}",
           f"flush chain {t} m{colour}"]
    if marking:
        out.append(f"add rule {t} m{colour} {COLOUR_BIT} set {colour}")
    return out


def nft(runner: Runner, commands: list[str], check: bool = False) -> str:
    """``commands`` as one nft command line: one transaction (``check``: validated by
    nft and the kernel, not applied)."""
    argv = ["nft", *(["-c"] if check else [])]
    for cmd in commands:
        argv += [cmd, ";"]
    return runner(argv)


def parse_counts(text: str) -> dict[int, Count]:
    """``{flow * 2 + colour: Count}`` from ``nft -j list table`` of a node's table."""
    out: dict[int, Count] = {}
    for item in json.loads(text).get("nftables", []) if text.strip() else []:
        rule = item.get("rule")
        if not rule:
            continue
        match = _COMMENT.match(str(rule.get("comment", "")))
        if match is None:
            continue
        counter: dict[str, Any] = next((e["counter"] for e in rule.get("expr", [])
                                        if isinstance(e, dict) and "counter" in e), {})
        pkts, octets = int(counter.get("packets", 0)), int(counter.get("bytes", 0))
        if pkts or octets:
            idx = int(match.group(1)) * 2 + int(match.group(2))
            got = out.get(idx, Count())
            out[idx] = Count(got.packets + pkts, got.bytes + octets)
    return out


def tables(runner: Runner) -> list[tuple[str, str]]:
    """``(family, name)`` of every nft table of the node."""
    text = runner(["nft", "-j", "list", "tables"])
    return [(i["table"]["family"], i["table"]["name"])
            for i in (json.loads(text).get("nftables", []) if text.strip() else [])
            if "table" in i]


def probe(runner: Runner, role: str, dev: str) -> str | None:
    """None when nft and the kernel take this node's table with one flow (``nft -c``:
    checked, nothing applied); else their words."""
    try:
        runner(["nft", "--version"])
    except Exception as exc:  # noqa: BLE001 - the words are the result
        return f"nft: {words(exc)}"
    table = KernelNode(runner, role, dev).base + "_p"
    sample = [Flow(0, ("fc00::1", "fc00::2", "fc00::3"))]
    cmds = attach_commands(role, dev, table) + flow_commands(role, table, sample)
    if role == "ingress":
        cmds += colour_commands(dev, table, 1, True)
    try:
        nft(runner, cmds, check=True)
    except Exception as exc:  # noqa: BLE001
        return words(exc)
    return None


@dataclass
class NftNode(KernelNode):
    """A node counting (and colouring) with nftables rule counters."""

    def set_flows(self, flows: list[Flow]) -> None:
        check_flows(IMPLEMENTATION, flows, "<pm flows>")
        nft(self.runner, flow_commands(self.role, self.base, flows))
        self.flows = list(flows)

    def set_colour(self, colour: int, marking: bool) -> None:
        self._need_ingress("colours")
        nft(self.runner, colour_commands(self.dev, self.base, colour & 1, marking))

    def read(self) -> dict[int, Count]:
        return parse_counts(self.runner(["nft", "-j", "list", "table", "ip6", self.base]))

    def detach(self) -> None:
        if ("ip6", self.base) in tables(self.runner):
            self.runner(["nft", "delete", "table", "ip6", self.base])
            log.info("pm: nft table ip6 %s deleted", self.base)


def attach(runner: Runner, role: str, dev: str, obj_dir: Path) -> NftNode:
    """The node's table on ``dev`` (an earlier run's table of the same node is deleted
    first); PmUnsupported with nft's or the kernel's words when :func:`probe` fails."""
    why = probe(runner, role, dev)
    if why is not None:
        raise PmUnsupported(NAME, why)
    node = NftNode(runner, role, dev)
    node.detach()
    nft(runner, attach_commands(role, dev, node.base))
    log.info("pm: nftables %s node on %s (table ip6 %s)", role, dev, node.base)
    return node


IMPLEMENTATION = Implementation(
    NAME, ("ingress", "egress"), attach,
    "nftables rules in a table of srperf's own (postrouting/prerouting), one per flow and "
    "colour (srh exthdr match of the whole SID list; a raw payload write colours)",
    probe=probe, max_flows=c_limits()["PM_MAX_FLOWS"])

__all__ = ["IMPLEMENTATION", "NftNode", "attach", "attach_commands", "colour_commands",
           "flow_commands", "flow_match", "nft", "parse_counts", "probe", "tables"]
