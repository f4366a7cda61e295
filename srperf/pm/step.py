"""Loss monitoring as a step around a case's trials: attach, search, loss trial, detach.

:func:`attached` puts the case's implementation on the SUT (through the SUT's transport:
the same code drives a namespace here or an SSH SUT) for the search and detaches it
whatever happens; anything a killed run left (our tc filter, our XDP program) is swept
first.  :func:`loss_trial` then runs the monitor for ``pm.loss.blocks`` blocks at a fixed
load, one generator trial of ``pm.period_s`` per block, the colour flipped between
blocks and both sides' counters read after each (the trial has ended, so every packet
of the block has arrived): each flow's loss per block, beside the generator's own sent
and received counts of that block.  Counting only (``marking: false``), nothing is
coloured: every block is counted in colour 0 and told from the next by time (the
trials follow each other), which is exact here and only here.

The other side of the loss trial: for the SUT as **ingress** node, the egress counter
``ebpf_xdp`` on the tester's rx port, through the tester's transport, in place of the
generator's XDP drop sink for the trial (the generator's ``rx_without_sink``; its received
count stays the port's rx_packets); for the SUT as
**egress** node, the generator itself (:class:`GeneratorNode`: coloured frames, counts
of what it sent).  A side that cannot be had is said in the trial's note, with no figure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from srperf.config.pm import NONE
from srperf.errors import SrperfError, UnsupportedBehavior
from srperf.pm.cases import PmCase
from srperf.pm.counters import CounterNode
from srperf.pm.model import BlockLoss, Flow, PmSettings
from srperf.pm.node import TC_PREF
from srperf.transports.base import Transport

log = logging.getLogger(__name__)


class PmStepError(SrperfError):
    """A command of the monitoring step failed on a node (its words in the message)."""


def runner_of(transport: Transport):  # type: ignore[no-untyped-def]
    """A :data:`srperf.pm.maps.Runner` over ``transport``: argv -> stdout, raising
    :class:`PmStepError` with the node's stderr on a non-zero exit."""
    def run(argv: list[str]) -> str:
        res = transport.run(argv, timeout=60.0)
        if not res.ok:
            words = (res.stderr or res.stdout).strip().replace("\n", " ")
            raise PmStepError(f"{transport.where}: {' '.join(argv)}: "
                              f"{words or f'exit {res.returncode}'}")
        return res.stdout
    return run


@functools.lru_cache(maxsize=1)
def _local_objects() -> tuple[Path, ...]:
    from srperf.pm.build import build_pm

    return tuple(build_pm())


def objects_on(transport: Transport) -> Path:
    """The PF-PLM objects pushed into ``transport``'s work directory; their directory."""
    remote = [transport.push(p) for p in _local_objects()]
    return Path(posixpath.dirname(remote[0]))


def sweep(run: Any, out_dev: str, in_dev: str) -> list[str]:
    """Remove what a killed run left on these ports: our tc filters (pref
    :data:`TC_PREF`) on ``out_dev`` and a ``pm_xdp_egress`` program on
    ``in_dev``; returns what was removed."""
    removed = []
    for direction in ("egress", "ingress"):
        try:
            if run(["tc", "filter", "show", "dev", out_dev, direction, "pref",
                    str(TC_PREF)]).strip():
                run(["tc", "filter", "del", "dev", out_dev, direction, "pref", str(TC_PREF)])
                removed.append(f"tc filter pref {TC_PREF} on {out_dev} {direction}")
        except PmStepError:
            pass   # no clsact qdisc: nothing of ours there
    links = json.loads(run(["ip", "-j", "link", "show", "dev", in_dev]) or "[]")
    prog = (links[0].get("xdp", {}).get("prog", {}) if links else {}) or {}
    if prog.get("name") == "pm_xdp_egress":
        run(["ip", "link", "set", "dev", in_dev, "xdp", "off"])
        removed.append(f"pm_xdp_egress on {in_dev}")
    if removed:
        log.warning("pm: removed what an earlier run left: %s", ", ".join(removed))
    return removed


def attach_case(case: PmCase, transport: Transport, out_dev: str, in_dev: str,
                flows: list[Flow]) -> CounterNode | None:
    """The case's implementation attached on the SUT (None for ``none``), its flows set
    and colour 0 marked (ingress); a node that refuses is UnsupportedBehavior with its
    own words."""
    if case.implementation == NONE:
        return None
    from srperf.pm.implementations import lookup

    impl = lookup(case.implementation, case.role, "<pm case>")
    run = runner_of(transport)
    sweep(run, out_dev, in_dev)
    dev = out_dev if case.role == "ingress" else in_dev
    try:
        node = impl.attach(run, case.role, dev, objects_on(transport))
    except (SrperfError, OSError) as exc:
        raise UnsupportedBehavior(case.name, f"{case.implementation} on {dev}: {exc}") from None
    try:
        node.set_flows(flows)
        if case.role == "ingress":
            node.set_colour(0, case.marking)
    except BaseException:
        node.detach()
        raise
    return node


@contextlib.contextmanager
def attached(case: PmCase, transport: Transport, out_dev: str, in_dev: str,
             flows: list[Flow]) -> Iterator[CounterNode | None]:
    """:func:`attach_case` for the ``with`` block; detached at its end, whatever happens."""
    node = attach_case(case, transport, out_dev, in_dev, flows)
    try:
        yield node
    finally:
        if node is not None:
            node.detach()


@dataclass
class LossTrial:
    """What a loss trial gave: its load, blocks and each flow's loss per block, with the
    generator's sent/received per block (all flows); ``note`` says why there is none."""

    rate_pps: float = 0.0
    role: str = ""
    """The SUT's role in the case (the other side is the tester's or the generator's)."""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    """One per block: index, colour, gen_sent, gen_received, losses (BlockLoss list)."""
    note: str = ""

    @property
    def measured(self) -> bool:
        return bool(self.blocks)


def loss_trial(case: PmCase, sut_node: CounterNode, flows: list[Flow], gen: Any,
               rate_pps: float, other: CounterNode,
               on_trial: Callable[[Any], None] | None = None) -> LossTrial:
    """``case.loss.blocks`` blocks at ``rate_pps``, one trial of ``case.period_s`` each.

    ``sut_node`` is the SUT's side; ``other`` the other side (the tester's egress counter,
    or a :class:`~srperf.pm.generator_node.GeneratorNode` that ``gen``'s trials are added
    to).  Between blocks the colour flips (the ingress side marks the next colour)."""
    from srperf.pm.generator_node import GeneratorNode
    from srperf.pm.monitor import LossMonitor

    ingress, egress = (sut_node, other) if case.role == "ingress" else (other, sut_node)
    monitor = LossMonitor(ingress, egress, flows,
                          PmSettings(period_s=case.period_s, marking=case.marking))
    monitor.start()
    monitor.zero()
    out = LossTrial(rate_pps, case.role)
    for _ in range(case.loss.blocks):
        trial = gen.trial(rate_pps, case.period_s)
        if on_trial is not None:
            on_trial(trial)
        if isinstance(other, GeneratorNode):
            other.add_trial(trial.sent)
        ended = monitor.flip()
        if not case.marking:   # nothing coloured: every block is in colour 0, told from
            ended = dataclasses.replace(ended, colour=0)   # the next by time (trials)
        block, losses = monitor.read(ended)
        out.blocks.append({"index": block.index, "colour": block.colour,
                           "gen_sent": trial.sent, "gen_received": trial.received,
                           "losses": losses})
    return out


def run_case_loss_trial(session: Any, behavior: Any, key: Any, result: Any,
                        node: CounterNode, flows: list[Flow], frame: bytes) -> LossTrial | None:
    """The loss trial of ``behavior``'s case after its search ``result`` (None when
    ``pm.loss.enabled`` is false); its trials are stored with the search (extra
    ``purpose: pm_loss``)."""
    from srperf.pm.generator_node import GeneratorNode
    from srperf.pm.implementations import lookup

    case: PmCase = behavior.case
    cfg = case.loss
    if cfg is None or not cfg.enabled:
        return None
    if not flows:
        return LossTrial(note="no monitored flow (pm.flows 0): nothing to count")
    tb = session.testbed.config
    if cfg.rate is not None:
        rate = cfg.rate.resolve(tb.tester.line_rate_pps)
    else:
        goal = max(result.goals, key=lambda g: g.threshold_pct)
        pdr = goal.lower_bound_pps if goal.status in ("ok", "at_max") else None
        if not pdr:
            return LossTrial(note=f"no PDR found ({goal.status}): no load for the loss trial")
        rate = cfg.fraction * pdr
    gen = session.generator(behavior, key.search_seq)
    other: CounterNode
    stack = contextlib.ExitStack()
    if case.role == "ingress":
        tester = session.testbed.node("tester")
        run = runner_of(tester)
        free_rx = getattr(gen, "rx_without_sink", None)
        if free_rx is None:
            return LossTrial(rate, case.role, note="the generator has no rx port srperf can "
                             "put an egress counter on (tester.driver linux has): not "
                             "measured")
        try:
            rx = stack.enter_context(free_rx())
            sweep(run, rx, rx)
            other = lookup("ebpf_xdp", "egress", "<pm loss trial>").attach(
                run, "egress", rx, objects_on(tester))
        except (SrperfError, OSError) as exc:
            stack.close()
            return LossTrial(rate, case.role, note=f"no egress counter on the tester's rx "
                             f"port ({exc}): not measured")
        except BaseException:
            stack.close()   # the generator's sink back on its port, then on up
            raise
    else:
        gen_flows = session.flows

        def prepare(f: bytes) -> None:
            if gen_flows is not None:
                gen.prepare_flows(f, gen_flows)
            else:
                gen.prepare(f)

        other = GeneratorNode(frame, prepare, len(flows))

    def store(trial: Any) -> None:
        if session.store is not None and session.run_id is not None:
            session.store.add_trial(session.run_id, key, dataclasses.replace(
                trial, extra={**trial.extra, "purpose": "pm_loss"}))

    with stack:
        # one attempt per block: a generator's retry of a limited trial would send packets
        # that the monitor counts and the block's truth (the last attempt) does not
        retries = getattr(gen, "retries", None)
        try:
            if retries is not None:
                gen.retries = 0
            session.testbed.keep_claim()
            return loss_trial(case, node, flows, gen, rate, other, on_trial=store)
        finally:
            if retries is not None:
                gen.retries = retries
            other.detach()


def block_rows(trial: LossTrial, flows: list[Flow]) -> list[dict[str, Any]]:
    """The rows of table ``pm_blocks`` for ``trial`` (one per flow and block)."""
    sids = {f.index: ",".join(f.sids) for f in flows}
    rows = []
    for b in trial.blocks:
        for loss in b["losses"]:
            assert isinstance(loss, BlockLoss)
            rows.append(dict(block=b["index"], colour=b["colour"], flow=loss.flow,
                             sids=sids.get(loss.flow, ""), sent=loss.sent.packets,
                             received=loss.received.packets, lost=loss.lost_packets,
                             sent_bytes=loss.sent.bytes, received_bytes=loss.received.bytes,
                             gen_sent=b["gen_sent"], gen_received=b["gen_received"]))
    return rows


__all__ = ["LossTrial", "PmStepError", "attach_case", "attached", "block_rows", "loss_trial",
           "objects_on", "run_case_loss_trial", "runner_of", "sweep"]
