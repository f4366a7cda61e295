"""Edge cases of the eBPF proxies against their specifications (prefix ``h17e``).

Real packets through srp_inbound / srp_from_vnf on a namespace testbed:
- a reduced SRH (Segments Left = Last Entry + 1: the first SID only in the DA, as
  H.Encaps.Red / Linux ``encap.red`` send) is valid (RFC 8754 4.3.1.1, RFC 8986 4.1 S09);
- extension headers before the SRH (hop-by-hop, destination options) are walked;
- on the way back the proxy acts as a router for the inner packet (proxy draft, static
  proxy pseudocode: "Decrement TTL and update checksum" / "Decrement Hop Limit"):
  inner hop limit/TTL - 1 (IPv4 checksum valid), a packet with hop limit <= 1 dropped
  and counted;
- an inner Ethernet frame (next header 143) is a counted drop (End.AD2/AS2 are not
  implemented);
- the caching proxy keys TCP on both ports, sequence and acknowledgment numbers, and
  keeps one entry per packet: identical inner packets carrying different SRHs never
  share an entry (the second is dropped while the first is inside the VNF, as in the
  caching-proxy paper);
- the caching proxy driven from both CPUs at once gives no packet another packet's
  header and deletes every entry once.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Iterator

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting, PadN)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from srperf.traffic import packets as P
from srperf.behaviors.proxies import target_sid
from srperf.config.model import TestbedConfig
from srperf.drivers import linux_sink
from srperf.drivers.linux import LinuxGenerator
from srperf.forwarders.ebpf.forwarder import ProxySettings
from srperf.forwarders.ebpf.counters import delta, read_counters
from srperf.util.netns import run
from srperf.testbeds.virtual import VirtualTestbed
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.testbeds.vnf import VnfSet
from ebpf_helpers import configure, one_vnf, proxy_testbed, local_generator

pytestmark = pytest.mark.netns

TB = TestbedConfig(name="h17e", prefix="h17e")
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
def fwd_vnf(testbed: VirtualTestbed) -> Iterator[VnfSet]:
    with one_vnf(TB, "forward") as vnfs:
        yield vnfs


@pytest.fixture()
def sink_vnf(testbed: VirtualTestbed) -> Iterator[VnfSet]:
    with one_vnf(TB, "sink") as vnfs:
        yield vnfs


# --- frames ----------------------------------------------------------------------------

def inner6(i: int = 0, hlim: int = P.HOP_LIMIT) -> Packet:
    return (IPv6(src=A.src6, dst=A.dst6, fl=i + 1, hlim=hlim)
            / UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT) / Raw(P.MARKER + bytes([i, 0, 0, 0])))


def inner4(i: int = 0, ttl: int = P.HOP_LIMIT) -> Packet:
    return (IP(src=A.src4, dst=A.dst4, id=i + 1, ttl=ttl)
            / UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT) / Raw(P.MARKER + bytes([i, 0, 0, 0])))


def encap(inner: Packet, tag: int = 0, reduced: bool = False,
          ext: Packet | None = None) -> Ether:
    """``inner`` behind an outer IPv6 to the VNF's SID and an SRH (VNF SID, sid_next).

    ``reduced``: the SRH leaves the VNF's SID out (SL = Last Entry + 1 = 1); ``ext``: an
    extension header (chain) between the IPv6 header and the SRH.
    """
    nh = {IPv6: P.NH_IPV6, IP: P.NH_IPV4, Ether: P.NH_ETHERNET}[type(inner)]
    if reduced:
        srh = IPv6ExtHdrSegmentRouting(addresses=[A.sid_next], segleft=1, lastentry=0, nh=nh)
    else:
        srh = P.srh([target_sid(TB), A.sid_next], 1, nh)
    srh.tag = tag
    outer = IPv6(src=A.tester_tx_ip6, dst=target_sid(TB), hlim=P.HOP_LIMIT)
    if ext is not None:
        outer = outer / ext
    return P.to_sut(TB, outer / srh / inner)


def srh_raw(frame: Packet) -> bytes:
    raw = bytes(Ether(bytes(frame))[IPv6ExtHdrSegmentRouting])
    return raw[:8 + 8 * raw[1]]


def outer_raw(frame: Packet) -> bytes:
    """Outer IPv6 header + extension headers up to the end of the SRH, as bytes."""
    f = Ether(bytes(frame))
    ip = bytes(f[IPv6])
    srh = bytes(f[IPv6ExtHdrSegmentRouting])
    return ip[:len(ip) - len(srh)] + srh[:8 + 8 * srh[1]]


def expected_back(sent: Ether, inner_hops: int) -> bytes:
    """What the tester must receive for ``sent``: outer with SL - 1, DA = next SID, hop
    limit - 1 (End at the proxy SID); inner hop limit/TTL - ``inner_hops``."""
    f = Ether(bytes(sent))
    ip = f[IPv6]
    srh = ip[IPv6ExtHdrSegmentRouting]
    srh.segleft -= 1
    ip.dst = srh.addresses[srh.segleft]
    ip.hlim -= 1
    inner = srh.payload
    if isinstance(inner, IPv6):
        inner.hlim -= inner_hops
    else:
        inner.ttl -= inner_hops
        inner.chksum = None
    return bytes(P.from_sut(TB, IPv6(bytes(ip))))


def capture(gen: LinuxGenerator, frames: list[Ether],
            keep: Callable[[bytes], bool] = P.is_test_frame,
            timeout_s: float = 2.0) -> list[Ether]:
    got = gen.capture([bytes(f) for f in frames], timeout_s=timeout_s)
    return [Ether(g) for g in got if keep(g)]


def play_vnf(vnfs: VnfSet, packets: list[Packet], expect: int,
             keep: Callable[[bytes], bool] = P.is_test_frame) -> list[Ether]:
    """Send ``packets`` from the VNF (as it forwards them: hop limit/TTL - 1); return the
    frames the tester receives."""
    frames = []
    for p in packets:
        back = p.copy()
        if isinstance(back, IPv6):
            back.hlim -= 1
        else:
            back.ttl -= 1
            back.chksum = None
        frames.append(vnfs.frame_to_sut(0, bytes(back)))
    linux_sink.detach_sink(TESTER, RX)
    sock = ns_packet_socket(TESTER, RX)
    try:
        vnfs.inject(0, frames)
        got = receive_frames(sock, timeout_s=2.0, count=expect)
        got += receive_frames(sock, timeout_s=0.3)
    finally:
        sock.close()
        linux_sink.attach_sink(TESTER, RX)
    return [Ether(f) for f in got if keep(f)]


def send_to_sink(gen: LinuxGenerator, frames: list[Ether]) -> None:
    got = gen.capture([bytes(f) for f in frames], timeout_s=0.5)
    assert not [g for g in got if P.is_test_frame(g)], "the sink VNF let a packet through"


# --- reduced SRH, extension headers --------------------------------------------------------

@pytest.mark.parametrize("function", ["end_ad", "end_cache"])
def test_reduced_srh_is_accepted(function: str, gen: LinuxGenerator, fwd_vnf: VnfSet) -> None:
    configure(TB, function)
    frame = encap(inner6(), reduced=True)
    got = capture(gen, [frame])
    assert len(got) == 1, "a reduced SRH (SL = Last Entry + 1) was dropped"
    rx = got[0]
    assert rx[IPv6].dst == A.sid_next
    assert rx[IPv6ExtHdrSegmentRouting].segleft == 0
    assert rx[IPv6ExtHdrSegmentRouting].addresses == [A.sid_next]
    assert bytes(rx) == expected_back(frame, 2)


@pytest.mark.parametrize("ext", ["hop_by_hop", "dest_opts", "both"])
def test_extension_headers_before_the_srh(ext: str, gen: LinuxGenerator,
                                          fwd_vnf: VnfSet) -> None:
    configure(TB, "end_ad")
    hbh = IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00" * 4)])
    dst = IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\x00" * 12)])
    chain = {"hop_by_hop": hbh, "dest_opts": dst, "both": hbh / dst}[ext]
    frame = encap(inner6(), ext=chain)
    got = capture(gen, [frame])
    assert len(got) == 1, f"an SRH after {ext} was dropped"
    # the outer header comes back whole: IPv6, the extension headers, the SRH
    assert outer_raw(got[0]) == outer_raw(Ether(expected_back(frame, 2)))
    assert bytes(got[0]) == expected_back(frame, 2)


def test_other_extension_headers_are_a_counted_drop(gen: LinuxGenerator,
                                                   fwd_vnf: VnfSet) -> None:
    configure(TB, "end_ad")
    frame = encap(inner6(), ext=IPv6ExtHdrFragment(id=7))
    assert capture(gen, [frame] * 2, timeout_s=1.0) == []
    counts = read_counters(SUT)
    assert counts["in_ext_unsupported"] == 2 and counts["in_bad"] == counts["in_ad"] == 0


def test_outer_hop_limit_1_is_left_to_the_kernel(gen: LinuxGenerator,
                                                 fwd_vnf: VnfSet) -> None:
    """RFC 8986 4.1 S05: hop limit <= 1 at the SID: ICMPv6 time exceeded (the kernel's)."""
    configure(TB, "end_ad")
    frame = encap(inner6())
    frame[IPv6].hlim = 1
    assert capture(gen, [frame] * 2, timeout_s=1.0) == []
    counts = read_counters(SUT)
    assert counts["in_hop_limit"] == 2 and counts["in_ad"] == 0
    assert counts["from_packets"] - counts["from_ignored"] == 0


# --- the inner packet on the way back -----------------------------------------------------

@pytest.mark.parametrize("function", ["end_ad", "end_as", "end_cache"])
@pytest.mark.parametrize("family", [6, 4])
def test_inner_hop_limit_is_decremented_by_the_proxy(function: str, family: int,
                                                     gen: LinuxGenerator,
                                                     fwd_vnf: VnfSet) -> None:
    configure(TB, function)
    frame = encap(inner6() if family == 6 else inner4())
    got = capture(gen, [frame])
    assert len(got) == 1
    inner = got[0][IPv6ExtHdrSegmentRouting].payload
    if family == 6:
        assert inner.hlim == P.HOP_LIMIT - 2, "VNF and proxy each forward the inner packet"
    else:
        assert inner.ttl == P.HOP_LIMIT - 2, "VNF and proxy each forward the inner packet"
        sent_chk = inner.chksum
        inner.chksum = None
        assert IP(bytes(inner)).chksum == sent_chk, "IPv4 header checksum not updated"
    assert got[0][IPv6].hlim == P.HOP_LIMIT - 1, "outer: End at the proxy SID, once"
    if function != "end_as":  # End.AS pushes its configured header
        assert bytes(got[0]) == expected_back(frame, 2)


@pytest.mark.parametrize("family", [6, 4])
def test_inner_hop_limit_expiring_at_the_proxy_is_dropped(family: int, gen: LinuxGenerator,
                                                          fwd_vnf: VnfSet) -> None:
    configure(TB, "end_ad")
    # the VNF forwards it with hop limit/TTL 1: the proxy, a router, must not
    frame = encap(inner6(hlim=2) if family == 6 else inner4(ttl=2))
    before = read_counters(SUT)
    assert capture(gen, [frame] * 2, timeout_s=1.0) == []
    counts = delta(before, read_counters(SUT))
    assert counts["from_hop_limit"] == 2 and counts["from_ad"] == 0
    assert counts["fib_redirect"] == counts["fib_fallback"] == 0


def test_inner_ethernet_is_a_counted_drop(gen: LinuxGenerator, fwd_vnf: VnfSet) -> None:
    configure(TB, "end_ad")
    l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / inner6()
    assert capture(gen, [encap(l2)] * 2, timeout_s=1.0) == []
    counts = read_counters(SUT)
    assert counts["in_l2_unsupported"] == 2 and counts["in_bad"] == 0
    assert counts["in_ad"] == 0 and counts["from_packets"] - counts["from_ignored"] == 0


# --- the caching proxy's key and entries --------------------------------------------------

def _tag(frame: Ether) -> int:
    return frame[IPv6ExtHdrSegmentRouting].tag


def _is_tcp_test(frame: bytes) -> bool:
    f = Ether(frame)
    return IPv6ExtHdrSegmentRouting in f and TCP in f


def tcp6(dport: int, seq: int, ack: int, payload: bytes = b"") -> Packet:
    flags = "PA" if payload else "A"
    return (IPv6(src=A.src6, dst=A.dst6, fl=7, hlim=P.HOP_LIMIT)
            / TCP(sport=P.UDP_SPORT, dport=dport, seq=seq, ack=ack, flags=flags, window=512)
            / Raw(payload))


def test_tcp_key_has_both_ports_with_the_nat_key(gen: LinuxGenerator,
                                                 sink_vnf: VnfSet) -> None:
    """Two TCP segments that differ only in the destination port are two entries."""
    configure(TB, "end_cache", ProxySettings(cache_nat_key=True))
    a = tcp6(P.UDP_DPORT, 1000, 0, P.MARKER)
    b = tcp6(P.UDP_DPORT + 1, 1000, 0, P.MARKER)
    send_to_sink(gen, [encap(a, tag=1), encap(b, tag=2)])
    assert sink_vnf.drop_counts()["dropped"] == 2
    got = play_vnf(sink_vnf, [b, a], expect=2, keep=_is_tcp_test)
    assert [(f[TCP].dport, _tag(f)) for f in got] == [(P.UDP_DPORT + 1, 2), (P.UDP_DPORT, 1)]


def test_tcp_key_has_the_ack_number(gen: LinuxGenerator, sink_vnf: VnfSet) -> None:
    """Pure ACKs of one connection differ only in their acknowledgment number."""
    configure(TB, "end_cache")
    acks = [tcp6(P.UDP_DPORT, 5000, 100 * (k + 1)) for k in range(3)]
    send_to_sink(gen, [encap(p, tag=10 + k) for k, p in enumerate(acks)])
    assert sink_vnf.drop_counts()["dropped"] == 3
    got = play_vnf(sink_vnf, list(reversed(acks)), expect=3, keep=_is_tcp_test)
    assert [(f[TCP].ack, _tag(f)) for f in got] == [(300, 12), (200, 11), (100, 10)]


def test_identical_inner_packets_never_share_an_entry(gen: LinuxGenerator,
                                                      sink_vnf: VnfSet) -> None:
    """Same inner packet, different SRHs (per-packet metadata): the first is cached, the
    second dropped while the first is inside the VNF; after it returned, the same inner
    packet is cached again with its own SRH."""
    configure(TB, "end_cache", ProxySettings(cache_stale_s=0))
    send_to_sink(gen, [encap(inner6(3), tag=100), encap(inner6(3), tag=101)])
    assert sink_vnf.drop_counts()["dropped"] == 1, "the second identical packet reached the VNF"
    counts = read_counters(SUT)
    assert (counts["cache_insert"], counts["cache_dup"]) == (1, 1)
    got = play_vnf(sink_vnf, [inner6(3)] * 2, expect=1)
    assert [_tag(f) for f in got] == [100]
    send_to_sink(gen, [encap(inner6(3), tag=102)])
    got = play_vnf(sink_vnf, [inner6(3)], expect=1)
    assert [_tag(f) for f in got] == [102]
    counts = read_counters(SUT)
    assert counts["cache_insert"] == 2 and counts["cache_hit"] == 2
    assert counts["cache_miss"] == 1 and counts["miss_drop"] == 1


def test_a_stale_entry_is_replaced(gen: LinuxGenerator, sink_vnf: VnfSet) -> None:
    """An entry older than cache_stale_s (its packet lost in the VNF) does not block the
    same inner packet for ever: the next one replaces it and gets its own header."""
    configure(TB, "end_cache", ProxySettings(cache_stale_s=0.05))
    send_to_sink(gen, [encap(inner6(5), tag=100)])
    time.sleep(0.2)
    send_to_sink(gen, [encap(inner6(5), tag=101)])
    counts = read_counters(SUT)
    assert (counts["cache_insert"], counts["cache_stale"], counts["cache_dup"]) == (2, 1, 0)
    got = play_vnf(sink_vnf, [inner6(5)] * 2, expect=1)
    assert [_tag(f) for f in got] == [101]
    assert read_counters(SUT)["cache_miss"] == 1


# --- GSO --------------------------------------------------------------------------------

GSO_SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", int(sys.argv[2])))
s.setsockopt(socket.SOL_UDP, 103, int(sys.argv[4]))  # UDP_SEGMENT: one GSO packet
s.sendto(bytes(sys.argv[5], "ascii") * int(sys.argv[6]), (sys.argv[1], int(sys.argv[3])))
"""


def test_gso_packet_from_the_vnf_is_segmented_after_the_push(gen: LinuxGenerator,
                                                              fwd_vnf: VnfSet) -> None:
    """A GSO packet from the VNF (here a UDP_SEGMENT send of 3 x 1000 bytes, which veth
    passes on unsegmented) gets the outer header and is still segmented on the SUT's
    out-port (offloads off): 3 frames, each with the outer IPv6 + SRH.  Without the
    encapsulation flag on bpf_skb_adjust_room the kernel cannot segment it."""
    configure(TB, "end_ad")
    assert len(capture(gen, [encap(inner6())])) == 1  # End.AD learns the header
    seg, n = 1000, 3
    linux_sink.detach_sink(TESTER, RX)
    sock = ns_packet_socket(TESTER, RX)
    before = read_counters(SUT)
    try:
        run([sys.executable, "-c", GSO_SENDER, A.dst6, str(P.UDP_SPORT), str(P.UDP_DPORT),
             str(seg), "G", str(seg * n)], ns=fwd_vnf.links[0].ns)
        got = [Ether(f) for f in receive_frames(sock, timeout_s=2.0, count=n)
               if P.is_test_frame(f)]
    finally:
        sock.close()
        linux_sink.attach_sink(TESTER, RX)
    counts = {k: v for k, v in delta(before, read_counters(SUT)).items() if v}
    assert [len(f[UDP].payload) for f in got] == [seg] * n, counts
    for f in got:
        assert (f[IPv6].dst, f[IPv6ExtHdrSegmentRouting].segleft) == (A.sid_next, 0)
        inner = f[IPv6ExtHdrSegmentRouting].payload
        assert inner.hlim == P.HOP_LIMIT - 1  # sent by the VNF, forwarded by the proxy
        chk = inner[UDP].chksum
        inner[UDP].chksum = None
        assert IPv6(bytes(inner))[UDP].chksum == chk, "segment with a bad UDP checksum"
