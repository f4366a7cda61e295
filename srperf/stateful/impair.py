"""Loss and delay on one link of a :class:`~srperf.stateful.pipes_chain.PipesChain`, per
direction: ``netem`` where the kernel has it, else a user-space delay line for a delay
and a tc cls_bpf program for a loss alone.

Methods, tried in this order for each (link, direction):

* ``netem``: ``tc qdisc add dev SENDER root netem [delay D ms] [loss L %]``;
* ``delay-line`` (a delay, with or without loss, where the kernel has no netem; eBPF
  cannot delay without the fq qdisc's EDT, which this kernel lacks too): the user-space
  delay line (:mod:`srperf.traffic.delay_line`) at the receiving port's ingress holds every
  frame D ms and drops the loss share; TSO/GSO are off on the sending port when a loss
  is asked, so that each TCP segment is one frame (as on a wire);
* ``bpf-drop`` (loss only): the VNF drop program (``vnf_drop.c``) on the receiving
  port's tc ingress, drawing ``bpf_get_prandom_u32`` per packet, with TSO/GSO off on the
  sending port for the same reason.

:class:`Applied` records the method used, for the results.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from srperf.traffic import delay_line
from srperf.errors import SrperfError
from srperf.util.netns import run
from srperf.transports.netns import NetnsTransport

log = logging.getLogger(__name__)

DIRECTIONS = ("forward", "reverse", "both")
"""forward: client -> server; reverse: server -> client."""


class ImpairmentUnsupported(SrperfError):
    """This kernel cannot make the impairment asked for (the reason says why)."""


@dataclass(frozen=True)
class Impairment:
    """Loss and/or delay on one link of the chain."""

    link: int
    """Link index: 0 client-first node, ..., N last node-server."""
    direction: str = "both"
    """forward (toward the server), reverse, or both."""
    loss_pct: float = 0.0
    """Share of packets dropped (%)."""
    delay_ms: float = 0.0
    """Added one-way delay (ms)."""

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r}: one of {', '.join(DIRECTIONS)}")
        if not 0 <= self.loss_pct <= 100:
            raise ValueError(f"loss_pct {self.loss_pct!r}: 0-100")
        if not 0 <= self.delay_ms <= 10_000:
            raise ValueError(f"delay_ms {self.delay_ms!r}: 0-10000")


@dataclass(frozen=True)
class Applied:
    """One impaired direction of a link and how it was made."""

    sender: tuple[str, str]
    """(namespace, device) whose egress leads into the impairment."""
    receiver: tuple[str, str]
    """(namespace, device) at the other end."""
    loss_pct: float
    """Loss asked for (%)."""
    delay_ms: float
    """Delay asked for (ms)."""
    method: str
    """``netem``, ``delay-line`` or ``bpf-drop``."""
    line: delay_line.DelayLine | None = field(default=None, compare=False, repr=False)
    """The delay line (method ``delay-line``)."""


def _ends(chain, link: int, direction: str) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    left, right = chain.link_devs(link)
    pairs = []
    if direction in ("forward", "both"):
        pairs.append((left, right))
    if direction in ("reverse", "both"):
        pairs.append((right, left))
    return pairs


def netem_available(ns: str, dev: str) -> tuple[bool, str]:
    """Whether ``tc qdisc add ... netem`` works on ``dev`` (tried and removed)."""
    res = run(["tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", "1ms"], ns=ns,
              check=False)
    if res.ok:
        run(["tc", "qdisc", "del", "dev", dev, "root"], ns=ns, check=False)
        return True, ""
    return False, (res.stderr or res.stdout).strip()


def apply(chain, imp: Impairment) -> list[Applied]:
    """Make ``imp`` on ``chain``; what was made, per direction.  On failure nothing of it
    stays."""
    if not 0 <= imp.link <= len(chain.roles):
        raise ValueError(f"link {imp.link}: the chain has links 0-{len(chain.roles)}")
    done: list[Applied] = []
    try:
        for sender, receiver in _ends(chain, imp.link, imp.direction):
            done.append(_apply_one(sender, receiver, imp))
    except BaseException:
        remove(done)
        raise
    return done


def _apply_one(sender: tuple[str, str], receiver: tuple[str, str],
               imp: Impairment) -> Applied:
    from srperf.testbeds.vnf import drop_object

    (sns, sdev), (rns, rdev) = sender, receiver
    line = None
    has_netem, why = netem_available(sns, sdev)
    if has_netem:
        argv = ["tc", "qdisc", "add", "dev", sdev, "root", "netem", "limit", "100000"]
        if imp.delay_ms:
            argv += ["delay", f"{imp.delay_ms}ms"]
        if imp.loss_pct:
            argv += ["loss", f"{imp.loss_pct}%"]
        run(argv, ns=sns)
        method = "netem"
    elif imp.delay_ms:
        log.debug("%s/%s: no netem (%s): a delay line", sns, sdev, why)
        if imp.loss_pct:
            run(["ethtool", "-K", sdev, "tso", "off", "gso", "off"], ns=sns)
        try:
            line = delay_line.insert(NetnsTransport(None), rns, rdev, imp.delay_ms,
                                     imp.loss_pct)
        except BaseException:
            if imp.loss_pct:
                run(["ethtool", "-K", sdev, "tso", "on", "gso", "on"], ns=sns, check=False)
            raise
        method = "delay-line"
    else:
        run(["ethtool", "-K", sdev, "tso", "off", "gso", "off"], ns=sns)
        run(["tc", "qdisc", "add", "dev", rdev, "clsact"], ns=rns)
        try:
            run(["tc", "filter", "add", "dev", rdev, "ingress", "pref", "1", "handle", "1",
                 "bpf", "direct-action", "object-file", drop_object(), "section", "tc"],
                ns=rns)
            ppm = round(imp.loss_pct * 10_000)
            value = [f"{(ppm >> s) & 0xff:02x}" for s in (0, 8, 16, 24)]
            run(["bpftool", "map", "update", "id", str(_map_id(rns, rdev, "vnf_drop_cfg")),
                 "key", "hex", "00", "00", "00", "00", "value", "hex", *value])
        except BaseException:
            remove([Applied(sender, receiver, imp.loss_pct, 0.0, "bpf-drop")])
            raise
        method = "bpf-drop"
    log.info("%s/%s -> %s/%s: loss %g %%, delay %g ms by %s", sns, sdev, rns, rdev,
             imp.loss_pct, imp.delay_ms, method)
    return Applied(sender, receiver, imp.loss_pct, imp.delay_ms, method, line)


def _map_id(ns: str, dev: str, name: str) -> int:
    filters = json.loads(run(["tc", "-j", "filter", "show", "dev", dev, "ingress"],
                             ns=ns).stdout or "[]")
    for f in filters:
        prog = f.get("options", {}).get("prog", {})
        if "id" not in prog:
            continue
        info = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog["id"])]).stdout)
        for map_id in info.get("map_ids", []):
            m = json.loads(run(["bpftool", "-j", "map", "show", "id", str(map_id)]).stdout)
            if m.get("name") == name:
                return int(map_id)
    raise SrperfError(f"{ns}/{dev}: no BPF map {name} on its tc ingress")


def drop_counts(applied: Applied) -> dict[str, int]:
    """passed/dropped unicast IP packets counted by a ``bpf-drop`` impairment; for a
    ``delay-line`` one, the frames it passed (sent on, or still held) and dropped by its
    loss share, plus ``overflow`` (dropped because its FIFO was full)."""
    if applied.method == "delay-line" and applied.line is not None:
        c = applied.line.counters()
        return {"passed": c["rx"] - c["lost"] - c["overflow"], "dropped": c["lost"],
                "overflow": c["overflow"]}
    if applied.method != "bpf-drop":
        return {}
    ns, dev = applied.receiver
    data = json.loads(run(["bpftool", "-j", "map", "dump", "id",
                           str(_map_id(ns, dev, "vnf_drop_stats"))]).stdout)
    out = {}
    for entry in data:
        formatted = entry.get("formatted", entry)   # bpftool's BTF-decoded form
        total = sum(int(v["value"]) for v in formatted["values"])
        out["passed" if int(formatted["key"]) == 0 else "dropped"] = total
    return out


def remove(applied: list[Applied]) -> None:
    """Undo :func:`apply` (best effort, idempotent)."""
    for a in applied:
        (sns, sdev), (rns, rdev) = a.sender, a.receiver
        if a.method == "netem":
            run(["tc", "qdisc", "del", "dev", sdev, "root"], ns=sns, check=False)
        elif a.method == "delay-line":
            if a.line is not None:
                a.line.remove()
            if a.loss_pct:
                run(["ethtool", "-K", sdev, "tso", "on", "gso", "on"], ns=sns, check=False)
        else:
            run(["tc", "qdisc", "del", "dev", rdev, "clsact"], ns=rns, check=False)
            run(["ethtool", "-K", sdev, "tso", "on", "gso", "on"], ns=sns, check=False)


__all__ = ["Impairment", "Applied", "ImpairmentUnsupported", "apply", "remove", "drop_counts",
           "netem_available", "DIRECTIONS"]
