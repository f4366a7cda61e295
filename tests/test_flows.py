"""Many flows (srperf.traffic.flows, srgen -k) and the resident srgen (srgen -S).

Unit tests check every flow's frame with scapy (checksums, which fields differ,
errors named).  The namespace tests (prefix ``s24a``) capture what srgen really
sends with a packet socket and count the distinct flows scapy reads, and run
thousands of trials through one resident srgen while watching its descriptors
and memory.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether

from srperf.behaviors import catalogue as behaviors
from srperf.traffic import packets as P
from srperf.measure.bench_support import EBPF_TB as TB
from srperf.drivers.linux import LinuxGenerator
from srperf.errors import GeneratorError
from srperf.traffic.flows import Flows, flow_fields, flow_frames
from veth_pair import veth_pair_namespace

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
ALL = ("src_port", "src_addr", "dst_addr")


def checksums_ok(frame: bytes) -> bool:
    """Every IPv4 header and UDP checksum of ``frame`` is the one scapy computes."""
    pkt = Ether(frame)
    for layer in pkt.iterpayloads():
        if isinstance(layer, (IP, UDP)):
            layer.chksum = None
    return bytes(pkt) == frame


def flow_key(frame: bytes) -> tuple[int, str, str]:
    """(source port, source, destination) of the innermost UDP packet; behind an SRH
    the destination is its final segment."""
    pkt = Ether(frame)
    udp = [x for x in pkt.iterpayloads() if isinstance(x, UDP)][-1]
    ip = udp.underlayer
    while not isinstance(ip, (IP, IPv6)):
        ip = ip.underlayer
    srh = udp.underlayer if isinstance(udp.underlayer, IPv6ExtHdrSegmentRouting) else None
    return udp.sport, ip.src, srh.addresses[0] if srh is not None else ip.dst


@pytest.mark.parametrize("name", ["ipv6", "ipv4", "h_encaps", "h_encaps_v4", "end",
                                  "end_dt4", "end_am", "end_cache", "h_insert"])
def test_every_flow_is_one_distinct_valid_frame(name: str) -> None:
    frame = bytes(behaviors.get(name).build_frame(TB, 64))
    frames = flow_frames(frame, Flows(300, ALL))
    assert frames[0] == frame and len(frames) == 300
    assert all(len(f) == len(frame) for f in frames)
    assert all(checksums_ok(f) for f in frames), "a flow's checksum is wrong"
    keys = [flow_key(f) for f in frames]
    for i, part in enumerate(ALL):   # each varied field takes 300 values
        assert len({k[i] for k in keys}) == 300, part
    # what is not varied stays: the UDP destination port, the length, the payload
    assert all(bytes(Ether(f)[UDP].payload) == bytes(Ether(frame)[UDP].payload)
               for f in frames[::50])
    assert all(P.is_test_frame(f) for f in frames)


def test_only_the_named_field_varies() -> None:
    frame = bytes(behaviors.get("end").build_frame(TB, 64))
    frames = flow_frames(frame, Flows(16, ("src_port",)))
    keys = {flow_key(f) for f in frames}
    assert len(keys) == 16 and len({k[1:] for k in keys}) == 1
    outer = flow_frames(frame, Flows(16, ("outer_src_addr", "flow_label")))
    assert len({Ether(f)[IPv6].src for f in outer}) == 16
    assert len({Ether(f)[IPv6].fl for f in outer}) == 16
    assert len({flow_key(f) for f in outer}) == 1, "the inner packet must stay the same"
    assert all(checksums_ok(f) for f in outer)


def test_a_wrong_checksum_is_caught() -> None:
    """The check of flow_frames can fail: a frame whose own checksum is off."""
    frame = bytearray(bytes(behaviors.get("ipv6").build_frame(TB, 64)))
    place = flow_fields(bytes(frame), Flows(2, ("src_port",)))[0]
    frame[place.offset + 6] ^= 0xFF         # the UDP checksum
    with pytest.raises(ValueError, match="checksums"):
        flow_frames(bytes(frame), Flows(2, ("src_port",)))


@pytest.mark.parametrize("flows,words", [
    (dict(count=0), "count"), (dict(count=70000), "count"),
    (dict(count=4, vary=("ttl",)), "vary"), (dict(count=4, vary=()), "vary"),
    (dict(count=4, vary=("src_port", "src_port")), "twice")])
def test_bad_flows_are_named(flows: dict, words: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=words):
        Flows(**flows)


def test_a_range_beyond_16_bits_is_refused() -> None:
    frame = bytes(behaviors.get("ipv6").build_frame(TB, 64))
    with pytest.raises(ValueError, match="src_port starts at 21330"):
        flow_frames(frame, Flows(50000, ("src_port",)))
    with pytest.raises(ValueError, match="no IPv6 header"):
        flow_frames(bytes(behaviors.get("ipv4").build_frame(TB, 64)),
                    Flows(2, ("flow_label",)))


# --- on the wire ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pair() -> Iterator[str]:
    """Namespace s24a-<tag> with a veth pair t0 <-> t1 (no IPv6: no ND noise)."""
    with veth_pair_namespace("s24a") as ns:
        yield ns


def napi_for_xdpgen(ns: str, engine: str) -> None:
    """xdpgen sends through t0's ndo_xdp_xmit, which needs NAPI on the peer t1: GRO
    gives it that without an XDP program (so frames still reach a packet socket)."""
    if engine == "xdp":
        from srperf.util.netns import run

        run(["ethtool", "-K", "t1", "gro", "on"], ns=ns)


@needs_root
@pytest.mark.netns
@pytest.mark.parametrize("name,mode,vary,engine", [
    ("end", "mmsg", ALL, "packet"), ("end_dt4", "ring", ALL, "packet"),
    ("h_encaps", "mmsg", ("src_port",), "packet"), ("end_cache", "mmsg", ALL, "packet"),
    ("end_cache", "ring", ("dst_addr",), "packet"),
    ("end", "mmsg", ALL, "xdp"), ("end_cache", "mmsg", ("dst_addr",), "xdp")])
def test_flows_on_the_wire(pair: str, name: str, mode: str, vary: tuple[str, ...],
                           engine: str) -> None:
    """srgen (and xdpgen, engine xdp) sends packet i as flow i % count: captured, scapy
    reads ``count`` distinct values of the varied fields, each frame's checksums right
    (with distinct frames' counters too, for end_cache)."""
    from srperf.traffic.packet_socket import ns_packet_socket, receive_frames

    count, n = 256, 2000
    beh = behaviors.get(name)
    frame = bytes(beh.build_frame(TB, 64))
    napi_for_xdpgen(pair, engine)
    g = LinuxGenerator(pair, "t0", "t1", cpu=None, mode=mode, retries=0, engine=engine)
    sock = ns_packet_socket(pair, "t1")
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    try:
        if beh.distinct_frames:
            g.prepare_flows(frame, Flows(count, vary), P.counter_offset(frame))
        else:
            g.prepare_flows(frame, Flows(count, vary))
        rep = g.run_srgen(20_000, n, drain_s=0.1)
        got = [f for f in receive_frames(sock, timeout_s=1.0, count=n) if P.is_test_frame(f)]
    finally:
        sock.close()
        g.close()
    assert rep.raw["flows"] == count and rep.sent == rep.tx_packets_delta == n
    assert rep.raw.get("engine", "packet") == engine
    assert len(got) >= n * 0.9, f"captured {len(got)} of {n}"
    assert all(checksums_ok(f) for f in got)
    keys = [flow_key(f) for f in got]
    for i, part in enumerate(ALL):
        distinct = len({k[i] for k in keys})
        assert distinct == (count if part in vary else 1), (part, distinct)
    if beh.distinct_frames:
        assert len(set(got)) == len(got), "distinct frames repeated a frame"


# --- the resident srgen -----------------------------------------------------------------

def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@needs_root
@pytest.mark.netns
@pytest.mark.parametrize("mode", ["mmsg", "ring"])
def test_resident_srgen_survives_thousands_of_trials(pair: str, mode: str) -> None:
    """2000 tiny trials through one srgen process: the same PID throughout, its open
    descriptors and resident memory (and ours) the same after the last trial as after
    the 100th, and every trial's counts exact.  No rest between trials (``rest_s`` 0):
    the rest is for a loaded SUT, and 2000 rests of 40 ms would be 80 s of sleep."""
    frame = bytes(behaviors.get("end").build_frame(TB, 64))
    g = LinuxGenerator(pair, "t0", "t1", cpu=None, mode=mode, retries=0, tolerance=0.5,
                       rest_s=0.0)
    try:
        g.prepare_flows(frame, Flows(64))
        seen: dict[int, tuple[int, int, int]] = {}
        for i in range(1, 2001):
            r = g.trial(100_000, 0.0001)          # 10 packets
            assert r.intended == 10 and r.sent == 10 and r.received == 10, r
            assert r.counters_consistent, r.note
            if i in (100, 2000):
                pid = g.resident_pid
                assert pid is not None
                assert Path(f"/proc/{pid}/comm").read_text().strip() == "srgen"
                seen[i] = (pid, _fd_count(pid), _rss_kib(pid))
                seen[-i] = (os.getpid(), _fd_count(os.getpid()), 0)
        (pid_a, fd_a, rss_a), (pid_b, fd_b, rss_b) = seen[100], seen[2000]
        assert pid_a == pid_b, "srgen was restarted"
        assert fd_a == fd_b, f"srgen's descriptors went from {fd_a} to {fd_b}"
        assert rss_b - rss_a <= 64, f"srgen's memory grew from {rss_a} to {rss_b} KiB"
        assert seen[-100][1] == seen[-2000][1], "this process leaked descriptors"
    finally:
        g.close()
    assert g.resident_pid is None


@needs_root
@pytest.mark.netns
def test_resident_srgen_restarts_on_a_new_frame_and_after_dying(pair: str) -> None:
    """rest_s 0: the trial right after the kill starts at once and finds srgen dead
    (after a rest the dead process is already reaped, and simply started anew)."""
    frame = bytes(behaviors.get("ipv6").build_frame(TB, 64))
    g = LinuxGenerator(pair, "t0", "t1", cpu=None, retries=0, tolerance=0.5, rest_s=0.0)
    try:
        g.prepare(frame)
        g.trial(10_000, 0.001)
        first = g.resident_pid
        g.trial(10_000, 0.001)
        assert g.resident_pid == first, "a trial must not start a process"
        g.prepare(bytes(behaviors.get("ipv4").build_frame(TB, 64)))
        r = g.trial(10_000, 0.001)
        assert g.resident_pid not in (None, first) and r.received == 10
        os.kill(g.resident_pid, 9)
        with pytest.raises(GeneratorError, match="srgen -S"):
            g.trial(10_000, 0.001)
        r = g.trial(10_000, 0.001)             # the next trial starts a new one
        assert r.sent == r.received == 10 and r.counters_consistent
    finally:
        g.close()


@needs_root
@pytest.mark.netns
def test_one_process_per_trial_still_works(pair: str) -> None:
    """resident: false, settle_s: 0 (the former way, kept for bench/trial_gap.py)."""
    g = LinuxGenerator(pair, "t0", "t1", cpu=None, retries=0, tolerance=0.5,
                       resident=False, settle_s=0.0, drain_s=0.05)
    try:
        g.prepare(bytes(behaviors.get("ipv6").build_frame(TB, 64)))
        r = g.trial(10_000, 0.001)
        assert g.resident_pid is None and r.sent == r.received == 10
        assert r.extra["drained_ns"] >= 50e6, "settle_s 0 must wait the whole drain"
    finally:
        g.close()


def test_outer_and_inner_source_of_a_one_header_frame_are_one_field() -> None:
    frame = bytes(behaviors.get("ipv6").build_frame(TB, 64))
    frames = flow_frames(frame, Flows(8, ("src_addr", "outer_src_addr")))
    assert len({Ether(f)[IPv6].src for f in frames}) == 8
    assert all(checksums_ok(f) for f in frames)


@pytest.mark.parametrize("traffic,key", [
    ({"flows": {"count": 0}}, "traffic.flows.count"),
    ({"flows": {"count": 4, "vary": ["ttl"]}}, "traffic.flows.vary"),
    ({"flows": {"cont": 4}}, "traffic.flows")])
def test_bad_traffic_key_names_file_and_key(traffic: dict, key: str) -> None:  # type: ignore[type-arg]
    from srperf.config.loader import experiment_from_mapping
    from srperf.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        experiment_from_mapping({"name": "x", "behaviors": ["ipv6"], "traffic": traffic},
                                "exp.yaml")
    assert "exp.yaml" in str(e.value) and key in str(e.value)


def test_example_experiment_loads() -> None:
    from srperf.config.loader import load_experiment

    root = Path(__file__).resolve().parents[1]
    exp = load_experiment(root / "experiments" / "ssh_flows_cores.yaml")
    assert exp.traffic.flows.count == 256 and "outer_src_addr" in exp.traffic.flows.vary


def test_too_many_flow_bytes_are_refused_before_srgen() -> None:
    g = LinuxGenerator(None, "lo", "lo", cpu=None)
    try:
        frame = bytes(behaviors.get("ipv6").build_frame(TB, 1500))
        with pytest.raises(GeneratorError, match="srgen holds at most"):
            g.prepare_flows(frame, Flows(50000, ("src_addr",)))
    finally:
        g.close()
