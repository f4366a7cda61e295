"""Latency from the local generator (issue 37): srgen's probes.

Unit part (no namespace): probe frames keep every checksum whatever srgen writes into
them, the figures of a trial (and of a trial without any probe) and the HDR histogram's
round trip through the results store.  Namespace part (prefix ``l37``): probes counted
like every other frame, reordered / duplicate / lost probes counted by srgen's receiver,
a trial whose probes all vanish reported as such, and probe frames surviving every
SRv6 behavior of the linux forwarder on the virtual testbed.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.behaviors import catalogue
from srperf.config.model import TestbedConfig
from srperf.drivers.base import TrialResult
from srperf.drivers.latency import LatencyStats, from_probes, histogram, percentile_curve
from srperf.traffic.latency_probe import PROBE_MAGIC, TRAILER_LEN, probe_frame, read_trailer, stamp
from srperf.measure.orchestrator import describe_latency
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import LatencyPoint

from veth_pair import veth_pair_namespace

PREFIX = "l37"
FRAME = bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
              / IPv6(src="fc00::1", dst="fc00::2") / UDP(sport=1000, dport=2000)
              / Raw(bytes(20)))


def _udp_checksum_ok(frame: bytes) -> bool:
    pkt = Ether(frame)
    udp = [la for la in pkt.iterpayloads() if isinstance(la, UDP)][-1]
    sent = udp.chksum
    udp.chksum = None
    return Ether(bytes(pkt)).getlayer(UDP, nb=len(
        [la for la in pkt.iterpayloads() if isinstance(la, UDP)])).chksum == sent


@pytest.mark.parametrize("name", ["ipv6", "ipv4", "h_encaps", "h_encaps_l2", "end",
                                  "end_dx4", "end_dx2", "end_b6_encaps", "end_next_csid"])
def test_probe_frame_keeps_checksums_whatever_is_stamped(name: str) -> None:
    frame = bytes(catalogue.get(name).build_frame(TestbedConfig(name="x"), 64))
    probe = probe_frame(frame)
    assert probe.endswith(PROBE_MAGIC) and _udp_checksum_ok(probe)
    assert len(probe) >= len(frame)
    for trial, number, ts in ((1, 0, 0), (0xFFFFFFFF, 123456, 1_764_000_000_123_456_789)):
        stamped = stamp(probe, trial, number, ts)
        assert read_trailer(stamped) == (trial, number, ts)
        assert _udp_checksum_ok(stamped), "a stamped probe must keep its UDP checksum"


def test_probe_keeps_the_frame_length_when_the_payload_has_room() -> None:
    big = bytes(Ether() / IPv6() / UDP() / Raw(bytes(100)))
    assert len(probe_frame(big)) == len(big)
    assert len(probe_frame(FRAME)) == len(FRAME) - 20 + TRAILER_LEN


def test_figures_of_probes() -> None:
    lat = [10_000 + i for i in range(1000)] + [-5, 900_000]
    stats = from_probes({"offered": 1010, "received": 1002, "reordered": 3, "duplicates": 1,
                         "latency_ns": lat})
    assert stats.packets == 1001 and stats.sent == 1010 and stats.lost == 8
    assert (stats.reordered, stats.duplicates, stats.generator) == (3, 1, "linux")
    assert stats.min_us == 10.0 and stats.max_us == 900.0
    assert stats.p50_us == pytest.approx(10.5, rel=1e-3)
    assert stats.p9999_us == pytest.approx(900.0, rel=1e-3)
    assert "negative" in stats.note


def test_probes_the_receiver_dropped_are_not_path_loss() -> None:
    stats = from_probes({"offered": 100, "received": 90, "socket_drops": 10,
                         "latency_ns": [1000] * 90})
    assert stats.lost == 0 and stats.receiver_dropped == 10
    assert "receive buffer" in stats.note


def test_trial_without_probes_is_said_not_zero() -> None:
    stats = from_probes({"offered": 2000, "received": 0, "latency_ns": []})
    assert stats.packets == 0 and stats.lost == 2000 and not stats.received
    assert all(getattr(stats, f) is None for f in (
        "min_us", "avg_us", "max_us", "jitter_us", "p50_us", "p99_us", "p9999_us"))
    assert stats.hdrh is None and "no probe received (2000 sent)" in stats.note
    text = describe_latency(LatencyPoint(0.5, 1e5, stats.as_dict()))
    assert "no latency figure" in text and "no probe received" in text and " 0 us" not in text


def test_histogram_round_trips_through_the_store(tmp_path: Path) -> None:
    values = [5_000 + 37 * i for i in range(3000)]
    stats = from_probes({"offered": 3000, "received": 3000, "latency_ns": values})
    trial = TrialResult(1e5, 1.0, 100000, 100000, 0, 100000, 1.0,
                        extra={"latency": stats.as_dict(), "purpose": "latency"})
    with ResultStore(tmp_path / "s.sqlite") as store:
        run_id = store.begin_run("e", "tb", "linux", {})
        store.add_trial(run_id, TrialKey("end", "linux", 64, 1, 1), trial)
        extra = json.loads(store.frame("trials", run_id)["extra"].iloc[0])
    back = extra["latency"]
    assert LatencyStats(**back) == stats
    hist = histogram(back)
    assert hist.get_total_count() == 3000
    assert hist.get_value_at_percentile(99) / 1e3 == pytest.approx(stats.p99_us)
    curve = percentile_curve(back)
    assert curve[0][0] == 0.0 and curve[-1][0] == 100.0
    assert curve[-1][1] == pytest.approx(stats.max_us, rel=1e-3)


# -- namespaces ------------------------------------------------------------------------

@pytest.fixture
def pair(request):
    """(namespace, generator) over a plain veth pair t0 -> t1 with the XDP sink on t1; the
    generator's engine is the test's parameter (``packet`` unless parametrized)."""
    from srperf.drivers import linux_sink
    from srperf.drivers.linux import LinuxGenerator

    engine = getattr(request, "param", "packet")
    with veth_pair_namespace(PREFIX) as ns:
        linux_sink.attach_sink(ns, "t1")
        gen = LinuxGenerator(ns, "t0", "t1", cpu=None, retries=0, engine=engine)
        try:
            gen.prepare(FRAME)
            yield ns, gen
        finally:
            gen.close()


@pytest.mark.netns
@pytest.mark.parametrize("pair", ["packet", "xdp"], indirect=True)
def test_probes_are_counted_like_every_frame(pair) -> None:
    """On both engines: xdpgen's program stamps the same probes srgen sends, and srgen's
    receiver code (probe_rx.h) reads them."""
    ns, gen = pair
    t = gen.latency_trial(20_000, 0.5, 1000)
    assert t.extra["engine"] == gen.engine
    lat = t.extra["latency"]
    assert t.intended == 10_000 and t.received == t.sent   # probes inside the load
    assert lat["sent"] == 500 and lat["packets"] == 500 and lat["lost"] == 0
    assert 0 < lat["min_us"] <= lat["p50_us"] <= lat["p99_us"] <= lat["max_us"] < 1e5
    assert lat["hdrh"] and lat["hdrh_unit_ns"] == 1 and lat["reordered"] == 0
    plain = gen.trial(20_000, 0.2)   # later trials send no probe
    assert "probes" not in plain.extra and plain.received == plain.sent
    tc = json.loads(_tc(ns, "filter", "show", "dev", "t1", "ingress"))
    assert tc, "the probe drop is on t1 during latency trials"
    gen.close()
    assert not json.loads(_tc(ns, "filter", "show", "dev", "t1", "ingress"))


def _tc(ns: str, *args: str) -> str:
    from srperf.util.netns import run

    return run(["tc", "-j", *args], ns=ns).stdout or "[]"


@pytest.mark.netns
def test_reordered_and_duplicate_probes_are_counted(pair) -> None:
    """Probes of the running trial injected out of order: the last probe's number
    early, so every later one arrives below it (reordered) and its own copy is a
    duplicate."""
    import threading

    from srperf.traffic.packet_socket import ns_packet_socket

    ns, gen = pair
    gen.latency_trial(10_000, 0.1, 1000)          # trial 1: starts srgen with probes
    probe = probe_frame(FRAME)
    sock = ns_packet_socket(ns, "t0")

    def inject() -> None:
        time.sleep(0.3)
        sock.send(stamp(probe, 2, 999, time.clock_gettime_ns(time.CLOCK_REALTIME)))

    th = threading.Thread(target=inject)
    th.start()
    try:
        t = gen.latency_trial(10_000, 1.0, 1000)  # trial 2: probes 0..999
    finally:
        th.join()
        sock.close()
    lat = t.extra["latency"]
    assert lat["duplicates"] == 1
    assert 1 <= lat["reordered"] <= 998, lat["reordered"]   # those after the injected one
    assert lat["sent"] == 1000 and lat["lost"] == 0


@pytest.mark.netns
def test_lost_probes_are_counted(pair) -> None:
    """A slow sink on t1 (its ring overflows) and no hold queue in srgen: probes are
    lost with the other frames."""
    from srperf.drivers import linux_sink
    from srperf.drivers.linux import LinuxGenerator

    from srperf.util.netns import run

    ns, _ = pair
    run(["sh", "-c", "echo 1 > /sys/class/net/t1/threaded"], ns=ns)  # sink off srgen's CPU
    gen = LinuxGenerator(ns, "t0", "t1", cpu=None, retries=0, queue_pkts=0)
    try:
        gen.prepare(FRAME)
        gen.latency_trial(1000, 0.1, 100)          # the probe sink goes on t1 ...
        linux_sink.attach_sink(ns, "t1", slow=True)   # ... and the slow one (passes probes)
        # 300 kpps: well above what the slow sink takes (bpf_loop is inlined on 6.x, so
        # its 20000 spins cost ~20 us a frame: 50 kpps, the rate used before, was taken
        # whole when this test ran alone)
        t = gen.latency_trial(300_000, 0.2, 2000)
    finally:
        gen.close()
    lat = t.extra["latency"]
    assert t.lost > 0 and lat["lost"] > 0 and lat["lost"] == lat["sent"] - lat["packets"]
    assert t.lost >= lat["lost"]


@pytest.mark.netns
@pytest.mark.parametrize("engine", ["packet", "xdp"])
def test_trial_whose_probes_all_vanish_is_reported_as_such(pair, engine: str) -> None:
    """t1's MTU lets the test frames pass but not the (longer) probes: every probe is
    lost (refused at t0; srgen without a hold queue, which would retry a frame the path
    refuses forever), and the trial says so instead of a latency."""
    from srperf.drivers.linux import LinuxGenerator
    from srperf.util.netns import run

    ns, _ = pair
    gen = LinuxGenerator(ns, "t0", "t1", cpu=None, retries=0, queue_pkts=0, engine=engine)
    try:
        gen.prepare(FRAME)
        assert len(FRAME) - 14 == 68 < len(probe_frame(FRAME)) - 14   # 68: veth's least MTU
        run(["ip", "link", "set", "dev", "t1", "mtu", "68"], ns=ns)
        t = gen.latency_trial(10_000, 0.3, 1000)
    finally:
        gen.close()
    lat = t.extra["latency"]
    assert lat["sent"] == 300 and lat["packets"] == 0 and lat["lost"] == 300
    assert lat["p50_us"] is None and lat["min_us"] is None
    assert "no probe received (300 sent)" in t.note
    assert t.received == t.intended - 300   # every test frame arrived
