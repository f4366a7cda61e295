"""Distinct test frames: the counter slot (srperf.traffic.packets) and srgen ``-V``.

A behavior with ``distinct_frames`` (the caching proxy, which drops a packet
identical to one it still holds) gets a frame whose innermost UDP payload starts
with a counter slot; srgen writes packet i's counter there, checksum-neutrally.
The unit tests check the arithmetic with scapy for any counter; the namespace
test (prefix ``hvary``) captures what srgen really sends, in both send modes.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from srperf.behaviors import catalogue as behaviors
from srperf.traffic import packets as P
from srperf.measure.bench_support import EBPF_TB as TB
from srperf.drivers.base import DistinctUnsupported, TrafficGenerator
from srperf.drivers.linux import LinuxGenerator, build_srgen
from srperf.errors import GeneratorError
from veth_pair import veth_pair_namespace

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
COUNTERS = (0, 1, 2, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF, 0x10000, 0x1234ABCD, 0xFFFF0000,
            0xFFFFFFFE, 0xFFFFFFFF)


def put_counter(frame: bytes, offset: int, c: int) -> bytes:
    """What srgen's put_counter writes: hi, ~hi, lo, ~lo (16-bit words, big endian)."""
    hi, lo = c >> 16, c & 0xFFFF
    slot = b"".join(w.to_bytes(2, "big") for w in (hi, 0xFFFF - hi, lo, 0xFFFF - lo))
    return frame[:offset] + slot + frame[offset + P.COUNTER_LEN:]


def counter_of(frame: bytes, offset: int) -> int:
    hi, _, lo, _ = (int.from_bytes(frame[offset + i:offset + i + 2], "big")
                    for i in range(0, 8, 2))
    return hi << 16 | lo


def udp_checksum_ok(frame: bytes) -> bool:
    """The innermost UDP checksum of ``frame`` equals the one scapy computes."""
    pkt = Ether(frame)
    udp = [layer for layer in pkt.iterpayloads() if isinstance(layer, UDP)][-1]
    sent = udp.chksum
    udp.chksum = None
    rebuilt = Ether(bytes(pkt))
    return sent == [la for la in rebuilt.iterpayloads() if isinstance(la, UDP)][-1].chksum


def ipv4_header_ok(frame: bytes) -> bool:
    pkt = Ether(frame)
    if IP not in pkt:
        return True
    sent = pkt[IP].chksum
    pkt[IP].chksum = None
    return sent == Ether(bytes(pkt))[IP].chksum


@pytest.mark.parametrize("name", ["end_cache", "end_cache_v4"])
@pytest.mark.parametrize("size", [56, 64, 128, 1500])
def test_counter_keeps_the_udp_checksum_valid(name: str, size: int) -> None:
    beh = behaviors.get(name)
    assert beh.distinct_frames
    frame = bytes(beh.build_frame(TB, size))
    off = P.counter_offset(frame)
    assert frame[off:off + P.COUNTER_LEN] == P.COUNTER_SLOT
    assert udp_checksum_ok(frame) and ipv4_header_ok(frame)
    # the slot sits inside the 16 payload bytes the caching proxy hashes
    assert off + P.COUNTER_LEN <= len(frame) and len(frame) - off >= P.COUNTER_LEN
    seen = set()
    for c in COUNTERS:
        f = put_counter(frame, off, c)
        assert len(f) == len(frame) and counter_of(f, off) == c
        assert udp_checksum_ok(f), f"counter {c:#x}: UDP checksum broken"
        assert ipv4_header_ok(f)
        seen.add(f)
    assert len(seen) == len(COUNTERS)


def test_a_broken_pair_breaks_the_checksum() -> None:
    """The check above can fail: a slot written without the complements is caught."""
    frame = bytes(behaviors.get("end_cache").build_frame(TB, 64))
    off = P.counter_offset(frame)
    bad = frame[:off] + bytes.fromhex("00010000") + frame[off + 4:]
    assert not udp_checksum_ok(bad)


def test_slot_comes_before_the_marker_and_keeps_the_size() -> None:
    beh = behaviors.get("end_cache")
    frame = bytes(beh.build_frame(TB, 64))
    plain = bytes(beh.frame_builder(TB, 64))
    assert len(frame) == len(plain)
    off = P.counter_offset(frame)
    assert frame[off + P.COUNTER_LEN:off + P.COUNTER_LEN + 8] == P.MARKER[:8]
    assert beh.min_packet_size == P.min_size("ipv6") + P.COUNTER_LEN
    with pytest.raises(ValueError, match="counter slot"):
        P.counter_offset(plain)
    with pytest.raises(ValueError, match="counter slot needs"):
        beh.build_frame(TB, P.min_size("ipv6") + 4)


def test_other_behaviors_send_one_frame() -> None:
    distinct = sorted(b.name for b in behaviors.all_behaviors() if b.distinct_frames)
    assert distinct == ["end_cache", "end_cache_v4"]


def test_a_driver_without_it_refuses() -> None:
    class OneFrame(TrafficGenerator):
        name = "oneframe"

        def prepare(self, frame: bytes) -> None:
            raise AssertionError("must not fall back to identical frames")

        def trial(self, rate_pps, duration_s):  # type: ignore[no-untyped-def]
            raise AssertionError

        def capture(self, frames, timeout_s=2.0, gap_s=0.0):  # type: ignore[no-untyped-def]
            raise AssertionError

    with pytest.raises(DistinctUnsupported, match="oneframe driver"):
        OneFrame().prepare_distinct(b"\x00" * 64, 20)


def test_srgen_refuses_a_frame_without_a_slot(tmp_path) -> None:  # type: ignore[no-untyped-def]
    frame = bytes(behaviors.get("end_cache").frame_builder(TB, 64))  # no slot
    path = tmp_path / "f.bin"
    path.write_bytes(frame)
    off = len(frame) - 16
    proc = subprocess.run([str(build_srgen()), "-f", str(path), "-r", "0", "-n", "1",
                           "-t", "lo", "-x", "lo", "-V", str(off)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "no counter slot" in proc.stderr
    proc = subprocess.run([str(build_srgen()), "-f", str(path), "-r", "0", "-n", "1",
                           "-t", "lo", "-x", "lo", "-V", str(len(frame) - 4)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "must lie in the frame" in proc.stderr


def test_linux_driver_checks_the_offset() -> None:
    g = LinuxGenerator(None, "lo", "lo", cpu=None)
    try:
        with pytest.raises(GeneratorError, match="outside the frame"):
            g.prepare_distinct(bytes(64), 60)
    finally:
        g.close()


# --- srgen -V in a namespace -----------------------------------------------------------

@pytest.fixture(scope="module")
def pair() -> Iterator[str]:
    """Namespace hvary-<tag> with a veth pair t0 <-> t1 (no IPv6: no ND noise)."""
    with veth_pair_namespace("hvary") as ns:
        yield ns


@needs_root
@pytest.mark.netns
@pytest.mark.parametrize("name", ["end_cache", "end_cache_v4"])
@pytest.mark.parametrize("mode,queue,engine", [("mmsg", 4096, "packet"), ("mmsg", 0, "packet"),
                                               ("ring", 0, "packet"), ("mmsg", 0, "xdp")])
def test_srgen_sends_distinct_frames_with_valid_checksums(pair: str, name: str, mode: str,
                                                          queue: int, engine: str) -> None:
    """srgen -V (and xdpgen, engine xdp, whose program writes the counter)."""
    from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
    from srperf.util.netns import run

    n = 3000
    frame = bytes(behaviors.get(name).build_frame(TB, 64))
    off = P.counter_offset(frame)
    if engine == "xdp":   # t0's ndo_xdp_xmit needs NAPI on t1: GRO, no XDP program
        run(["ethtool", "-K", "t1", "gro", "on"], ns=pair)
    g = LinuxGenerator(pair, "t0", "t1", cpu=None, mode=mode, queue_pkts=queue, retries=0,
                       engine=engine)
    sock = ns_packet_socket(pair, "t1")
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)  # hold every frame
    try:
        g.prepare_distinct(frame, off)
        rep = g.run_srgen(20_000, n, drain_s=0.1)
        got = [f for f in receive_frames(sock, timeout_s=1.0, count=n) if P.is_test_frame(f)]
    finally:
        sock.close()
        g.close()
    assert rep.raw["counter_offset"] == off and rep.raw.get("engine", "packet") == engine
    assert rep.sent == rep.tx_packets_delta and rep.offered == n
    # the capture may lose a few frames under load; the counters may not
    assert len(got) >= 0.95 * rep.sent, f"captured {len(got)} of {rep.sent}"
    counters = [counter_of(f, off) for f in got]
    assert len(set(got)) == len(got), "two frames were identical"
    assert len(set(counters)) == len(counters) and max(counters) < n + rep.refused
    assert counters == sorted(counters)  # sent in order
    for f in got:
        assert len(f) == len(frame)
        assert f[:off] == frame[:off] and f[off + 8:] == frame[off + 8:]
        assert udp_checksum_ok(f) and ipv4_header_ok(f)


# --- the session hands the generator what the behavior needs -----------------------------

class _Recorder(TrafficGenerator):
    """A generator double that records what it was given (it sends nothing)."""

    name = "recorder"
    bidirectional = False

    def __init__(self, distinct: bool) -> None:
        self.distinct, self.calls = distinct, []  # type: ignore[var-annotated]

    def prepare(self, frame: bytes) -> None:
        self.calls.append(("prepare", frame))

    def prepare_distinct(self, frame: bytes, counter_offset: int) -> None:
        if not self.distinct:
            super().prepare_distinct(frame, counter_offset)
        self.calls.append(("prepare_distinct", frame, counter_offset))

    def trial(self, rate_pps, duration_s):  # type: ignore[no-untyped-def]
        raise AssertionError

    def capture(self, frames, timeout_s=2.0, gap_s=0.0):  # type: ignore[no-untyped-def]
        raise AssertionError


def _session(gen: TrafficGenerator):  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from srperf.measure.session import MeasurementSession

    s = MeasurementSession.__new__(MeasurementSession)  # no testbed: prepare() only
    s.testbed = SimpleNamespace(config=TB, generator=lambda name, seed: gen)
    s.imix = ((64, 7), (128, 1))
    return s


def test_session_prepares_distinct_frames_or_says_unsupported() -> None:
    from srperf.errors import UnsupportedBehavior
    from srperf.traffic.imix import IMIX_SIZE

    ok = _Recorder(distinct=True)
    frame = _session(ok).prepare(behaviors.get("end_cache"), 64)
    assert ok.calls == [("prepare_distinct", frame, P.counter_offset(frame))]
    frame = _session(ok).prepare(behaviors.get("end_ad"), 64)
    assert ok.calls[-1] == ("prepare", frame)
    with pytest.raises(UnsupportedBehavior, match="recorder driver"):
        _session(_Recorder(distinct=False)).prepare(behaviors.get("end_cache_v4"), 64)
    with pytest.raises(UnsupportedBehavior, match="mix"):
        _session(ok).prepare(behaviors.get("end_cache"), IMIX_SIZE)
