"""The caching proxy under a VNF that reorders, drops, duplicates, invents or
source-NATs packets (namespace testbed, prefix ``ebp``).

A "sink" VNF keeps every packet the proxy hands it; the test then plays the
VNF and sends the inner packets back in any order (VnfSet.inject) while
capturing at the tester.  Each test packet carries its own SRH tag (per-packet
metadata), so a header restored onto the wrong packet is seen.
"""

from __future__ import annotations

import shutil
from typing import Iterator

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.behaviors import catalogue as behaviors
from srperf.traffic import packets as P
from srperf.config.model import TestbedConfig
from srperf.drivers import linux_sink
from srperf.drivers.linux import LinuxGenerator
from srperf.forwarders.ebpf.counters import delta, read_counters
from srperf.errors import UnsupportedBehavior
from ebpf_helpers import configure, one_vnf, proxy_testbed, local_generator
from srperf.behaviors.proxies import target_sid
from srperf.forwarders.ebpf.forwarder import ProxySettings
from srperf.testbeds.virtual import VirtualTestbed
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.testbeds.vnf import VnfSet
from srperf.measure.verify import STATEFUL_GAP_S

pytestmark = pytest.mark.netns

ENGINES = ("packet", "xdp")
"""The local generator's send engines (tester.options.engine): srgen, xdpgen."""

TB = TestbedConfig(name="ebp", prefix="ebp")
A = TB.addressing
SUT, TESTER, RX = TB.sut_ns, TB.tester_ns, TB.tester.rx.name


@pytest.fixture(scope="module")
def testbed() -> Iterator[VirtualTestbed]:
    with proxy_testbed(TB) as vt:
        yield vt


@pytest.fixture(scope="module")
def gen(testbed: VirtualTestbed) -> Iterator[LinuxGenerator]:
    with local_generator(TB) as g:
        yield g


@pytest.fixture()
def sink_vnf(testbed: VirtualTestbed) -> Iterator[VnfSet]:
    with one_vnf(TB, "sink") as vnfs:
        yield vnfs


def inner(i: int, payload_byte: int | None = None) -> IPv6:
    """Test packet ``i``: flow label i + 1, payload marker + one byte (i by default)."""
    b = i if payload_byte is None else payload_byte
    return (IPv6(src=A.src6, dst=A.dst6, fl=i + 1, hlim=P.HOP_LIMIT)
            / UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT)
            / Raw(P.MARKER + bytes([b]) + bytes(3)))


def tagged_frame(i: int) -> Ether:
    """Packet ``i`` behind an SRH (VNF SID, sid_next) whose tag is 100 + i."""
    srh = P.srh([target_sid(TB), A.sid_next], 1, P.NH_IPV6)
    srh.tag = 100 + i
    outer = IPv6(src=A.tester_tx_ip6, dst=target_sid(TB), hlim=P.HOP_LIMIT,
                 nh=P.NH_ROUTING) / srh
    return P.to_sut(TB, outer / inner(i))


def forwarded(pkt: IPv6, hops: int) -> IPv6:
    """``pkt`` after ``hops`` routers (the VNF, then the proxy itself)."""
    back = pkt.copy()
    back.hlim -= hops
    return back


def from_vnf(vnfs: VnfSet, pkt: IPv6) -> bytes:
    """``pkt`` as the VNF would send it back (hop limit - 1)."""
    back = pkt.copy()
    back.hlim -= 1
    return vnfs.frame_to_sut(0, bytes(back))


def play_vnf(vnfs: VnfSet, packets: list[IPv6], expect: int) -> list[Ether]:
    """Send ``packets`` from the VNF; return the test frames the tester receives."""
    linux_sink.detach_sink(TESTER, RX)
    sock = ns_packet_socket(TESTER, RX)
    try:
        vnfs.inject(0, [from_vnf(vnfs, p) for p in packets])
        got = receive_frames(sock, timeout_s=2.0, count=expect)
        got += receive_frames(sock, timeout_s=0.3)  # anything beyond what is expected
    finally:
        sock.close()
        linux_sink.attach_sink(TESTER, RX)
    return [Ether(f) for f in got if P.is_test_frame(f)]


def send_tagged(gen: LinuxGenerator, n: int) -> None:
    got = gen.capture([bytes(tagged_frame(i)) for i in range(n)], timeout_s=0.5)
    assert [f for f in got if P.is_test_frame(f)] == [], "the sink VNF let a packet through"


def flow(frame: Ether) -> int:
    return frame[IPv6ExtHdrSegmentRouting][IPv6].fl - 1


def test_reordered_dropped_duplicated_invented_and_colliding(gen: LinuxGenerator,
                                                              sink_vnf: VnfSet) -> None:
    configure(TB, "end_cache")
    send_tagged(gen, 8)
    counts = read_counters(SUT)
    assert counts["in_cache"] == counts["cache_insert"] == 8
    assert sink_vnf.drop_counts() == {"passed": 0, "dropped": 8}

    returned = [5, 2, 7, 0, 3]          # 1, 4 and 6 never come back (dropped by the VNF)
    plan = [inner(i) for i in returned]
    plan.append(inner(5))               # 5 again: its entry is gone -> miss
    plan.append(inner(42))              # never sent -> miss
    plan.append(inner(4, payload_byte=200))  # fields of 4 (still cached), other payload -> miss
    before = read_counters(SUT)
    got = play_vnf(sink_vnf, plan, expect=len(returned))
    counts = delta(before, read_counters(SUT))

    assert [flow(f) for f in got] == returned, "one frame per returned packet, in VNF order"
    for f in got:
        i = flow(f)
        srh = f[IPv6ExtHdrSegmentRouting]
        assert srh.tag == 100 + i, f"packet {i} got the header of packet {srh.tag - 100}"
        assert (f[IPv6].dst, srh.segleft, srh.addresses) == \
            (A.sid_next, 0, [A.sid_next, target_sid(TB)])
        assert bytes(srh[IPv6]) == bytes(forwarded(inner(i), 2))
    assert counts["cache_hit"] == 5
    assert counts["cache_miss"] == 3 and counts["cache_race"] == 0
    assert counts["miss_drop"] == 3 and counts["err"] == 0


def test_identical_packets_in_flight_get_one_entry(gen: LinuxGenerator,
                                                   sink_vnf: VnfSet) -> None:
    """One entry per packet: identical packets behind the first are dropped while it is
    inside the VNF (the caching-proxy paper), never given its header."""
    configure(TB, "end_cache", ProxySettings(cache_stale_s=0))
    got = gen.capture([bytes(tagged_frame(3))] * 3, timeout_s=0.5)
    assert not [f for f in got if P.is_test_frame(f)]
    counts = read_counters(SUT)
    assert (counts["cache_insert"], counts["cache_dup"]) == (1, 2)
    assert sink_vnf.drop_counts()["dropped"] == 1
    got = play_vnf(sink_vnf, [inner(3)] * 4, expect=1)
    counts = read_counters(SUT)
    assert [flow(f) for f in got] == [3]
    assert counts["cache_hit"] == 1 and counts["cache_miss"] == 3


def test_lru_keeps_the_newest_entries(gen: LinuxGenerator, sink_vnf: VnfSet) -> None:
    size, n = 64, 200
    configure(TB, "end_cache", ProxySettings(cache_entries=size))
    send_tagged(gen, n)
    before = read_counters(SUT)
    got = play_vnf(sink_vnf, [inner(i) for i in range(n)], expect=size)
    counts = delta(before, read_counters(SUT))
    hits = [flow(f) for f in got]
    assert counts["cache_hit"] == len(hits) and counts["cache_hit"] + counts["cache_miss"] == n
    assert size // 2 <= len(hits) <= size, hits
    assert min(hits) >= n - size, f"an entry older than the last {size} survived: {hits}"
    assert all(f[IPv6ExtHdrSegmentRouting].tag == 100 + flow(f) for f in got)


def test_miss_policy_pass_forwards_the_bare_packet(sink_vnf: VnfSet) -> None:
    configure(TB, "end_cache", ProxySettings(cache_miss="pass"))
    got = play_vnf(sink_vnf, [inner(9)], expect=1)
    assert len(got) == 1 and IPv6ExtHdrSegmentRouting not in got[0]
    assert got[0][IPv6].dst == A.dst6 and got[0][IPv6].fl == 10
    counts = read_counters(SUT)
    assert counts["cache_miss"] == 1 and counts["miss_pass"] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_vnf_dropping_a_share(testbed: VirtualTestbed, engine: str) -> None:
    vnfs = VnfSet(TB, count=1, mode="drop", drop_share=0.3).up()
    # one attempt: exact sums; either send engine (issue 43)
    once = LinuxGenerator(TESTER, TB.tester.tx.name, RX, retries=0, engine=engine)
    try:
        # identical frames 0.5 ms apart: the entry of a packet the VNF dropped is stale
        # for the next one (it replaces it); one still inside the VNF is not
        once.prepare(bytes(behaviors.get("end_cache").build_frame(TB, 64)))
        once.start()    # xdpgen's start-up frame (no trial's) before the proxy counts
        configure(TB, "end_cache", ProxySettings(cache_stale_s=0.0002))
        trial = once.trial(2000, 0.25)
        counts = read_counters(SUT)
        vnf = vnfs.drop_counts()
    finally:
        once.close()
        configure(TB, "clean")
    assert trial.sent == trial.intended == 500 and trial.extra["engine"] == engine
    # every packet accounted once: into the VNF, or dropped behind an identical one still
    # inside it (the generator sends in small batches: identical frames back to back)
    assert counts["in_cache"] + counts["cache_dup"] == 500
    assert vnf["passed"] + vnf["dropped"] == counts["in_cache"] == counts["cache_insert"]
    assert 0.2 < vnf["dropped"] / counts["in_cache"] < 0.4
    assert counts["cache_hit"] == vnf["passed"] == trial.received
    # a dropped packet's entry is replaced by the next packet (not after the last one)
    assert vnf["dropped"] - 1 <= counts["cache_stale"] <= vnf["dropped"]
    assert counts["cache_miss"] == 0 and counts["cache_race"] == 0


@pytest.mark.parametrize(("name", "engine"), [("end_cache", "packet"), ("end_cache_v4", "packet"),
                                             ("end_cache", "xdp")])
def test_distinct_frames_are_not_dropped_as_duplicates(testbed: VirtualTestbed,
                                                       name: str, engine: str) -> None:
    """A benchmark trial of the caching proxy: every frame the generator (srgen, or
    xdpgen writing the counter in the program) sends carries its own counter
    (distinct_frames), so none is dropped behind an identical one."""
    beh = behaviors.get(name)
    frame = bytes(beh.build_frame(TB, 64))
    VnfSet(TB, count=1).up()
    g = LinuxGenerator(TESTER, TB.tester.tx.name, RX, retries=0, engine=engine)
    try:
        configure(TB, "end_cache")
        g.prepare_distinct(frame, P.counter_offset(frame))
        g.start()       # xdpgen's start-up frame (no trial's) before `before`
        before = read_counters(SUT)
        trial = g.trial(100_000, 0.5)
        counts = delta(before, read_counters(SUT))
    finally:
        g.close()
        configure(TB, "clean")
    assert trial.sent == trial.intended == 50_000 and trial.extra["engine"] == engine
    assert counts["cache_dup"] == 0
    # every packet that reached the proxy went into the VNF with an entry of its own,
    # and the proxy restored the header of every one that came back (the rx port may
    # also count a stray frame of the SUT's, neighbour discovery: not a test frame)
    assert counts["in_cache"] == counts["cache_insert"] > 0.95 * trial.sent
    assert 0 <= trial.received - counts["cache_hit"] <= 2
    assert counts["cache_miss"] == 0 and counts["cache_race"] == 0
    assert counts["cache_hit"] > 0.95 * trial.sent, f"restored {counts['cache_hit']}: {counts}"


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft (nftables) not installed")
def test_snat_vnf_needs_the_nat_key(gen: LinuxGenerator, testbed: VirtualTestbed) -> None:
    beh = behaviors.get("end_cache_v4")
    frame = beh.build_frame(TB, 64)
    VnfSet(TB, count=1, mode="snat").up()
    try:
        # the SNATed packet misses; its entry stays, and the identical packets behind
        # it are dropped (entries never stale here)
        configure(TB, "end_cache", ProxySettings(cache_stale_s=0))
        got = gen.capture([bytes(frame)] * 3, timeout_s=1.0)
        assert not [f for f in got if P.is_test_frame(f)]
        counts = read_counters(SUT)
        assert (counts["cache_insert"], counts["cache_dup"]) == (1, 2)
        assert counts["cache_miss"] == 1 and counts["cache_hit"] == 0

        configure(TB, "end_cache", ProxySettings(cache_nat_key=True))
        got = [Ether(f) for f in gen.capture([bytes(frame)] * 3, timeout_s=2.0,
                                             gap_s=STATEFUL_GAP_S)]
        result = beh.check(TB, frame, got)
        assert result.ok and "NATed" in result.expected, str(result)
        assert read_counters(SUT)["cache_hit"] == 3
    finally:
        configure(TB, "clean")


@pytest.mark.skipif(shutil.which("nft") is not None, reason="nft is installed")
def test_snat_without_nft_is_unsupported(testbed: VirtualTestbed) -> None:
    with pytest.raises(UnsupportedBehavior, match="nft"):
        VnfSet(TB, count=1, mode="snat").up()
