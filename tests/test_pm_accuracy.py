"""The accuracy chain of the loss monitor, on real programs in namespaces of our own:

    p46-in (ingress node: pm_tc_ingress on i0's tc egress, counts + colours)
      i0 <-> l0  p46-lk (a bridge; vnf_drop on l0's tc ingress: the planted loss)  l1 <-> e0
    p46-eg (egress node: pm_xdp_egress on e0's XDP, counts; a packet socket is the sink)

Frames of known flows (distinct SID lists) and blocks are sent from p46-in; each frame
names its flow and block in its payload, so the sink's truth does not depend on the
monitor's colour.  Per flow and block the monitor's loss (ingress count - egress count)
must equal the truth (sent - the sink's count), packet for packet; 0 where nothing drops.
"""

from __future__ import annotations

import re
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.pm.build import build_pm
from srperf.pm.maps import find_prog
from srperf.pm.model import BlockLoss, PmSettings, make_flows
from srperf.pm.monitor import LossMonitor, PmNode
from srperf.pm.node import Attached, attach_egress, attach_ingress, detach
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.util.netns import netns_names, run

from pm_chain import plant_drop, runner_in

pytestmark = pytest.mark.netns

IN, LK, EG = "p46-in", "p46-lk", "p46-eg"
EG_MAC = "02:46:00:00:00:e0"
PER_BLOCK = 300        # packets per flow per block
BLOCKS = 3
SID_LISTS = [[f"fc00:46:{f + 1:x}::1", f"fc00:46:{f + 1:x}::2", "fc00:46:ff::d"]
             for f in range(4)]
MARK = re.compile(rb"p46 f(\d+) b(\d+) s\d+")


def _chain_up() -> None:
    for ns in (IN, LK, EG):
        run(["ip", "netns", "add", ns])
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"], ns=ns)
    run(["ip", "-n", IN, "link", "add", "i0", "type", "veth", "peer", "name", "l0",
         "netns", LK])
    run(["ip", "-n", EG, "link", "add", "e0", "address", EG_MAC, "type", "veth", "peer",
         "name", "l1", "netns", LK])
    run(["ip", "-n", LK, "link", "add", "br0", "type", "bridge"])
    for dev in ("l0", "l1"):
        run(["ip", "-n", LK, "link", "set", dev, "master", "br0", "up"])
    run(["ip", "-n", LK, "link", "set", "br0", "up"])
    run(["ip", "-n", IN, "link", "set", "i0", "up"])
    run(["ip", "-n", EG, "link", "set", "e0", "up"])


def _chain_down() -> None:
    for ns in (IN, LK, EG):
        run(["ip", "netns", "del", ns], check=False)


@dataclass
class Chain:
    ingress: Attached
    egress: Attached


@pytest.fixture
def chain() -> Iterator[Chain]:
    tc_obj, xdp_obj = build_pm()
    _chain_down()
    made: list[tuple[str, Attached]] = []
    ids: list[str] = []
    try:
        _chain_up()
        ing = attach_ingress(runner_in(IN), "i0", tc_obj)
        made.append((IN, ing))
        eg = attach_egress(runner_in(EG), "e0", xdp_obj)
        made.append((EG, eg))
        ids = [f"prog {a.maps.prog_id}" for _, a in made] + [
            f"map {m}" for _, a in made for m in (a.maps.flows, a.maps.counters, a.maps.state) if m is not None]
        yield Chain(ing, eg)
    finally:
        for ns, att in reversed(made):
            try:
                detach(runner_in(ns), att)
            except Exception:  # the namespace's removal below takes it anyway
                pass
        _chain_down()
    assert not [n for n in netns_names() if n in (IN, LK, EG)]
    _assert_gone(ids)


def _assert_gone(ids: list[str]) -> None:
    """Every program and map the chain had is freed (the kernel frees them soon after)."""
    deadline = time.monotonic() + 10
    left = ids
    while left and time.monotonic() < deadline:
        left = [i for i in left
                if run(["bpftool", i.split()[0], "show", "id", i.split()[1]], check=False).ok]
        if left:
            time.sleep(0.2)
    assert not left, f"left behind: {left}"


def _frames(flow: int, block: int, sids: list[str]) -> list[bytes]:
    base = (Ether(src="02:46:00:00:00:10", dst=EG_MAC) / IPv6(src="fc00:46::10", dst=sids[0])
            / IPv6ExtHdrSegmentRouting(addresses=list(reversed(sids)), segleft=len(sids) - 1)
            / IPv6(src="fc00:46::10", dst="fc00:46::20") / UDP(sport=4600 + flow, dport=4646))
    return [bytes(base / Raw(f"p46 f{flow} b{block} s{seq}".encode())) for seq in range(PER_BLOCK)]


def _sink_socket() -> socket.socket:
    sock = ns_packet_socket(EG, "e0")
    sock.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: a whole block fits
    return sock


def _colour(frame: bytes) -> int:
    tclass = ((frame[14] & 0x0F) << 4) | (frame[15] >> 4)
    return 1 if tclass & 0x04 else 0


def _run_chain(chain: Chain, marking: bool = True
               ) -> tuple[list[BlockLoss], Counter[tuple[int, int]], Counter[tuple[int, int]]]:
    """BLOCKS blocks of PER_BLOCK frames per flow; the monitor's losses, what was sent and
    what the sink saw, per (flow, block)."""
    flows = make_flows(SID_LISTS)
    mon = LossMonitor(PmNode(runner_in(IN), chain.ingress), PmNode(runner_in(EG), chain.egress),
                      flows, PmSettings(period_s=1.0, marking=marking))
    mon.start()
    tx, sink = ns_packet_socket(IN, "i0"), _sink_socket()
    sent: Counter[tuple[int, int]] = Counter()
    seen: Counter[tuple[int, int]] = Counter()
    losses: list[BlockLoss] = []
    try:
        for block in range(BLOCKS):
            for flow in flows:
                for frame in _frames(flow.index, block, list(flow.sids)):
                    tx.send(frame)
                    sent[(flow.index, block)] += 1
            ended = mon.flip()
            for frame in receive_frames(sink, timeout_s=0.5):
                match = MARK.search(frame)
                if match:
                    f, b = int(match.group(1)), int(match.group(2))
                    seen[(f, b)] += 1
                    assert _colour(frame) == (b % 2 if marking else 0), (f, b)
            _, block_losses = mon.read(ended)
            losses += block_losses
    finally:
        tx.close()
        sink.close()
    return losses, sent, seen


def test_no_drop_no_loss_and_colours_alternate(chain: Chain) -> None:
    losses, sent, seen = _run_chain(chain)
    assert len(losses) == len(SID_LISTS) * BLOCKS
    for loss in losses:
        key = (loss.flow, loss.block)
        assert loss.colour == loss.block % 2
        assert loss.sent.packets == sent[key] == PER_BLOCK, key
        assert loss.received.packets == seen[key] == PER_BLOCK, key
        assert loss.lost_packets == 0 and loss.sent.bytes == loss.received.bytes


def test_planted_drop_per_block_loss_equals_the_truth(chain: Chain) -> None:
    plant_drop(LK, 10_000)   # 1 %
    losses, sent, seen = _run_chain(chain)
    total_lost = 0
    for loss in losses:
        key = (loss.flow, loss.block)
        assert loss.sent.packets == sent[key], key
        assert loss.received.packets == seen[key], key
        assert loss.lost_packets == sent[key] - seen[key], key
        total_lost += loss.lost_packets
    # 1 % of 3600 frames: the chance that nothing at all is dropped is e^-36
    assert total_lost > 0


def test_counting_only_leaves_the_colour(chain: Chain) -> None:
    losses, sent, seen = _run_chain(chain, marking=False)
    # nothing coloured: every packet is colour 0, so colour-1 blocks count nothing and
    # colour-0 blocks count colour 0's packets of every block since the last read
    for loss in losses:
        if loss.colour == 1:
            assert loss.sent.packets == 0 and loss.received.packets == 0
        else:
            assert loss.sent.packets == loss.received.packets > 0


def test_detach_removes_filter_qdisc_and_xdp(chain: Chain) -> None:
    detach(runner_in(IN), chain.ingress)
    detach(runner_in(EG), chain.egress)
    assert "clsact" not in run(["tc", "qdisc", "show", "dev", "i0"], ns=IN).stdout
    assert "xdp" not in run(["ip", "link", "show", "dev", "e0"], ns=EG).stdout
    assert find_prog(runner_in(IN), "pm_tc_ingress") is None
    assert find_prog(runner_in(EG), "pm_xdp_egress") is None
    _assert_gone([f"prog {chain.ingress.maps.prog_id}", f"map {chain.egress.maps.counters}"])


def test_flips_while_traffic_flows_lose_nothing(chain: Chain) -> None:
    """Continuous traffic while run() flips every T and reads at T/2: no drop, so every
    block of every flow loses 0, and the blocks add up to what was sent and seen."""
    import threading

    flows = make_flows(SID_LISTS)
    mon = LossMonitor(PmNode(runner_in(IN), chain.ingress), PmNode(runner_in(EG), chain.egress),
                      flows, PmSettings(period_s=0.4))
    frames = {f.index: _frames(f.index, 0, list(f.sids))[0] for f in flows}
    tx, sink = ns_packet_socket(IN, "i0"), _sink_socket()
    stop = threading.Event()
    sent: Counter[int] = Counter()

    def send() -> None:
        while not stop.is_set():
            for f, frame in frames.items():
                tx.send(frame)
                sent[f] += 1
            time.sleep(0.001)

    mon.start()
    sender = threading.Thread(target=send, name="p46-send")
    sender.start()
    losses: list[BlockLoss] = []
    try:
        for _, block_losses in mon.run(4):
            losses += block_losses
    finally:
        stop.set()
        sender.join()
    try:
        time.sleep(0.2)
        _, last = mon.read(mon.flip())   # the block that was active when sending stopped
        losses += last
        seen: Counter[int] = Counter()
        for frame in receive_frames(sink, timeout_s=0.5):
            match = MARK.search(frame)
            if match:
                seen[int(match.group(1))] += 1
    finally:
        tx.close()
        sink.close()
    assert {x.block for x in losses} == set(range(5))
    for loss in losses:
        assert loss.lost_packets == 0, (loss.flow, loss.block)
    for block in range(4):   # each full period carried traffic of every flow
        assert all(x.sent.packets > 0 for x in losses if x.block == block)
    for f in sent:
        assert sum(x.sent.packets for x in losses if x.flow == f) == sent[f]
        assert sum(x.received.packets for x in losses if x.flow == f) == seen[f] == sent[f]
