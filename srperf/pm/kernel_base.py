"""What the kernel-path loss-monitoring nodes (ip6tables, nftables, ipset) share.

Each node puts everything it adds under one name, ``srperf_pm_<tag>`` (chains, an nft
table, ipsets), the tag made of the node's role and interface, so that detaching removes
exactly what that node added and nothing else.  Every command goes through the node's
:data:`~srperf.pm.maps.Runner` (argv -> stdout), so a node works in a namespace of this
host and on an SSH SUT alike; a rule set is handed to ``ip6tables-restore`` /
``ipset restore`` through ``sh -c 'printf ... | tool'`` with the lines as arguments
(the runner has no stdin).

The colour is the same bit the eBPF programs use: Traffic Class bit 2 (``0x04``, the
lowest DSCP bit), see ``testbed/dataplanes/pm/pm_common.h``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from srperf.errors import UnsupportedBehavior
from srperf.pm.maps import Runner
from srperf.pm.model import Flow

log = logging.getLogger(__name__)

PREFIX = "srperf_pm_"
"""Every chain, table and set a kernel-path node adds starts with this."""
COLOUR_TC_BIT = 0x04
"""The colour bit of the Traffic Class (PM_COLOUR_TC_BIT of pm_common.h)."""
TAG_MAX = 13
"""Longest tag: ``srperf_pm_<tag>_c0`` must fit an ip6tables chain name (28 characters)."""


class PmUnsupported(UnsupportedBehavior):
    """This node's kernel or tools lack what an implementation needs (their words)."""

    def __init__(self, implementation: str, reason: str) -> None:
        super().__init__(f"pm {implementation}", reason)


class PmNodeError(RuntimeError):
    """A kernel-path node was driven the wrong way (e.g. told to colour as egress)."""


def node_tag(role: str, dev: str) -> str:
    """``i<dev>`` / ``e<dev>`` (characters other than letters, digits and ``_`` become
    ``_``); a name too long for ip6tables is ``i``/``e`` + 12 hex digits of its hash."""
    if role not in ("ingress", "egress"):
        raise ValueError(f"role {role!r}: ingress or egress")
    tag = role[0] + re.sub(r"[^A-Za-z0-9_]", "_", dev)
    if len(tag) > TAG_MAX or tag != role[0] + dev:
        tag = role[0] + hashlib.sha1(dev.encode()).hexdigest()[:TAG_MAX - 1]
    return tag


def ours(name: str, base: str) -> bool:
    """Whether ``name`` is the object ``base`` or one of its parts (``base_*``)."""
    return name == base or name.startswith(base + "_")


WORDS_MAX = 400
"""Most characters of a tool's words kept in an ``unsupported`` reason."""


def words(exc: BaseException) -> str:
    """A failed command's own words on one line: its stderr when the exception carries
    the result (:class:`srperf.util.netns.CommandFailed`), else the message; cut to
    :data:`WORDS_MAX` characters."""
    result = getattr(exc, "result", None)
    text = (getattr(result, "stderr", "") or getattr(result, "stdout", "")) if result else ""
    text = " ".join((text or str(exc)).split()) or type(exc).__name__
    return text if len(text) <= WORDS_MAX else text[:WORDS_MAX - 3] + "..."


def feed(runner: Runner, tool: list[str], lines: list[str]) -> str:
    """Run ``tool`` on the node with ``lines`` on its standard input."""
    script = 'printf "%s\\n" "$@" | ' + " ".join(tool)
    return runner(["sh", "-c", script, "sh", *lines])


def srh_segments(flow: Flow) -> list[str]:
    """The flow's SIDs in SRH order: Segment List[0] is the last segment."""
    return list(reversed(flow.sids))


@dataclass
class KernelNode:
    """The part every kernel-path node shares: where it is and what it monitors."""

    runner: Runner
    role: str
    dev: str
    flows: list[Flow] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return node_tag(self.role, self.dev)

    @property
    def base(self) -> str:
        """``srperf_pm_<tag>``: the name every object of this node starts with."""
        return PREFIX + self.tag

    def _need_ingress(self, what: str) -> None:
        if self.role != "ingress":
            raise PmNodeError(f"{self.base}: only an ingress node {what}")


__all__ = ["COLOUR_TC_BIT", "KernelNode", "PREFIX", "PmNodeError", "PmUnsupported", "feed", "node_tag", "ours", "srh_segments", "words"]
