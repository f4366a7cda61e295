"""VPP's ``show runtime``, per graph node: clocks per packet and vectors per call.

As CSIT keeps it beside every result: ``clear runtime`` before the trial, ``show
runtime`` after it, through ``vppctl -s SOCKET`` on the SUT.  One table per VPP
thread (``Thread N name (lcore C)``), columns ``Name State Calls Vectors Suspends
Clocks Vectors/Call``, a row for instance::

    sr-localsid        active     12345     1580160     0     4.12e1     128.00

``Clocks`` (``Packet-Clocks`` in VPP 26.06) is clocks per vector for a node that
handled vectors, else per call.  A long node name may run into its state column
(``...-pinterrupt wa``), so rows are split from the right: the last five columns are
numbers.  Checked against a real VPP v26.06 (tests/data/profile): with one thread
there is no ``Thread`` header, process nodes' states are quoted (``"any wait"``), and
a vectors/call below one prints without its leading zero (``.01``).
"""

from __future__ import annotations

import logging
import re

from srperf.profile.model import NodeCost, Profile
from srperf.profile.sources import ProfileSource
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

STATES = ("event wait", "any wait", "time wait", "interrupt wa", "interrupt", "active",
          "polling", "disabled", "done", "running", "suspended")
_QUOTED_STATE = re.compile(r'\s*"(?P<state>[^"]*)"$')
_THREAD = re.compile(r"^\s*Thread\s+\d+\s+(?P<name>\S+)")


def _number(text: str) -> float:
    return float(text)


def parse_runtime(text: str) -> list[NodeCost]:
    """Every node row of ``show runtime`` output (all threads)."""
    nodes: list[NodeCost] = []
    thread = "vpp_main"
    in_table = False
    for line in text.splitlines():
        m = _THREAD.match(line)
        if m:
            thread, in_table = m["name"], False
            continue
        if "Vectors/Call" in line and "Name" in line:
            in_table = True
            continue
        if not in_table or not line.strip():
            continue
        parts = line.rsplit(None, 5)
        if len(parts) != 6:
            in_table = False
            continue
        head, calls, vectors, suspends, clocks, vpc = parts
        try:
            numbers = (int(calls), int(vectors), int(suspends), _number(clocks), _number(vpc))
        except ValueError:
            in_table = False
            continue
        head = head.strip()
        quoted = _QUOTED_STATE.search(head)
        if quoted:   # a process node: VPP 26.06 prints its state in quotes
            state, name = quoted["state"], head[: quoted.start()].strip()
        else:
            state = next((s for s in STATES if head.endswith(s)), "")
            name = head[: len(head) - len(state)].strip() if state else head.split()[0]
        nodes.append(NodeCost(thread, name, state, *numbers))  # type: ignore[arg-type]
    return nodes


def busy_nodes(nodes: list[NodeCost]) -> list[NodeCost]:
    """Nodes that handled packets, most clocks per packet first."""
    return sorted((n for n in nodes if n.vectors), key=lambda n: -n.clocks)


class VppRuntime(ProfileSource):
    """``clear runtime`` before, ``show runtime`` after, through ``vppctl`` on the SUT."""

    name = "vpp"

    def __init__(self, node: Transport, vppctl: str, cli_sock: str) -> None:
        self.node = node
        self.argv = [vppctl, "-s", cli_sock]
        self._why = ""

    def _cli(self, *words: str) -> str:
        res = self.node.run([*self.argv, *words], timeout=30.0)
        if not res.ok:
            raise RuntimeError(f"{' '.join(self.argv)} {' '.join(words)}: exit "
                               f"{res.returncode}: {(res.stderr or res.stdout).strip()}")
        return res.stdout

    def start(self) -> None:
        self._why = ""
        try:
            out = self._cli("clear", "runtime").strip()
        except RuntimeError as exc:
            self._why = f"VPP runtime not cleared: {exc}"
            return
        if out:   # vppctl exits 0 even when a command fails; a failed one prints
            self._why = f"VPP runtime not cleared: {out.splitlines()[0]}"

    def stop(self, profile: Profile) -> None:
        if self._why:
            profile.notes.append(self._why)
            return
        try:
            text = self._cli("show", "runtime")
        except RuntimeError as exc:
            profile.notes.append(f"VPP runtime not read: {exc}")
            return
        log.debug("VPP show runtime:\n%s", text)
        nodes = parse_runtime(text)
        if not nodes:
            profile.notes.append("VPP show runtime: no node rows found")
        profile.nodes.extend(busy_nodes(nodes))
        profile.notes.append("VPP polls its input: its CPU is busy with or without packets, "
                             "so its ns per packet is an upper bound; the nodes' clocks per "
                             "packet are its cost")


__all__ = ["parse_runtime", "busy_nodes", "VppRuntime", "STATES"]
