"""The caching proxy driven from both CPUs at once (namespace testbed, prefix ``h17ec``).

Two senders, pinned with taskset to CPU 0 and CPU 1, send tagged frames through the
proxy and a forwarding VNF at the same time.  The SUT in-port runs without GRO and
threaded NAPI here, so each frame is processed (srp_inbound, the VNF, srp_from_vnf) in
the softirq of the CPU that sent it: both programs run on both CPUs concurrently, on
one LRU map.  Every packet carries its own SRH tag and the same number in its payload;
a fifth of them are the same inner packet from both senders (the same key at once).

Checked: no received frame carries another packet's SRH; every counter adds up
(each packet counted once on the way in and once on the way out); every entry is
deleted once: insertions = entries taken by their packet + stale ones deleted + the
entries left in the map.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.traffic import packets as P
from srperf.behaviors.proxies import target_sid
from srperf.config.model import TestbedConfig
from srperf.drivers import linux_sink
from srperf.forwarders.ebpf.counters import counter_names, delta, read_counters
from srperf.util.netns import run
from srperf.resources import cfg_script
from srperf.testbeds.virtual import VirtualTestbed
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.testbeds.vnf import VnfSet
from ebpf_helpers import configure

pytestmark = pytest.mark.netns

TB = TestbedConfig(name="h17ec", prefix="h17ec")
A = TB.addressing
SUT, TESTER = TB.sut_ns, TB.tester_ns
N = 5000            # frames per sender
SHARED_EVERY = 5    # every 5th frame: the same inner packet from both senders

SENDER = r"""
import socket, struct, sys, time
dev, path, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = open(path, "rb").read()
frames, off = [], 0
while off < len(data):
    (n,) = struct.unpack_from("!H", data, off)
    frames.append(data[off + 2:off + 2 + n])
    off += 2 + n
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
while time.time() < start:
    pass
for f in frames:
    while True:
        try:
            s.send(f)
            break
        except OSError:      # ENOBUFS: the first hop is full; not a measurement here
            time.sleep(0.0001)
"""


@pytest.fixture(scope="module")
def testbed() -> Iterator[VirtualTestbed]:
    vt = VirtualTestbed(TB)
    try:
        vt.up()
        # process every frame on the CPU that sent it (no NAPI: netif_rx backlog)
        port = TB.sut.in_port.name
        run(["sh", "-c", f"echo 0 > /sys/class/net/{port}/threaded"], ns=SUT)
        run(["ethtool", "-K", port, "gro", "off"], ns=SUT)
        VnfSet(TB, count=1, mode="forward").up()
        yield vt
    finally:
        configure(TB, "clean")
        VnfSet(TB).down()
        vt.down()


def inner(sender: int, i: int) -> IPv6:
    """Packet i of ``sender``; a shared one (i % SHARED_EVERY == 0) is the same for both."""
    who = 2 if i % SHARED_EVERY == 0 else sender
    return (IPv6(src=A.src6, dst=A.dst6, fl=i + 1, hlim=P.HOP_LIMIT)
            / UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT)
            / Raw(P.MARKER + struct.pack("!BH", who, i)))


def tag(sender: int, i: int) -> int:
    return sender * N + i


def frame(sender: int, i: int) -> bytes:
    srh = P.srh([target_sid(TB), A.sid_next], 1, P.NH_IPV6)
    srh.tag = tag(sender, i)
    outer = IPv6(src=A.tester_tx_ip6, dst=target_sid(TB), hlim=P.HOP_LIMIT,
                 nh=P.NH_ROUTING) / srh
    return bytes(P.to_sut(TB, outer / inner(sender, i)))


def per_cpu(name: str) -> list[int]:
    """Counter ``name`` of srp_stats, per CPU."""
    out = run(["bash", str(cfg_script("ebpf")), "counters"], ns=SUT).stdout
    key = counter_names().index(name)
    for entry in json.loads(out):
        if int(entry["formatted"]["key"]) == key:
            return [int(v["value"]) for v in entry["formatted"]["values"]]
    raise AssertionError(f"no counter {name}")


def cache_entries() -> int:
    """Entries left in srp_cache of the proxy attached in the SUT."""
    progs = [line.split() for line in run(["bpftool", "net", "show"], ns=SUT).stdout
             .splitlines() if "srp_inbound" in line]
    prog_id = progs[0][4]
    info = json.loads(run(["bpftool", "-j", "prog", "show", "id", prog_id]).stdout)
    for map_id in info["map_ids"]:
        m = json.loads(run(["bpftool", "-j", "map", "show", "id", str(map_id)]).stdout)
        if m["name"] == "srp_cache":
            return len(json.loads(run(["bpftool", "-j", "map", "dump", "id",
                                       str(map_id)]).stdout))
    raise AssertionError("no srp_cache map on srp_inbound")


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_both_cpus_at_once(testbed: VirtualTestbed, tmp_path: Path) -> None:
    configure(TB, "end_cache")
    paths = []
    for sender in (0, 1):
        path = tmp_path / f"frames{sender}.bin"
        path.write_bytes(b"".join(struct.pack("!H", len(f)) + f
                                  for f in (frame(sender, i) for i in range(N))))
        paths.append(path)
    script = tmp_path / "sender.py"
    script.write_text(SENDER)

    rx = TB.tester.rx.name
    linux_sink.detach_sink(TESTER, rx)
    sock = ns_packet_socket(TESTER, rx)
    sock.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE
    before = read_counters(SUT)
    try:
        start = time.time() + 1.0
        procs = [subprocess.Popen(["taskset", "-c", str(cpu), "ip", "netns", "exec", TESTER,
                                   sys.executable, str(script), TB.tester.tx.name,
                                   str(paths[cpu]), f"{start:.3f}"])
                 for cpu in (0, 1)]
        for p in procs:
            assert p.wait(timeout=120) == 0
        got = receive_frames(sock, timeout_s=3.0)
    finally:
        sock.close()
        linux_sink.attach_sink(TESTER, rx)
    counts = delta(before, read_counters(SUT))

    # both CPUs ran the proxy
    cpus = per_cpu("in_cache")
    print(f"in_cache per CPU {cpus}; frames back {len(got)}; counters "
          f"{ {k: v for k, v in counts.items() if v} }")
    assert all(n > 0 for n in cpus[:2]), cpus

    # no packet got another packet's header
    seen: Counter[tuple[int, int]] = Counter()
    for raw in got:
        if not P.is_test_frame(raw):
            continue
        f = Ether(raw)
        who, i = struct.unpack("!BH", bytes(f[Raw])[len(P.MARKER):len(P.MARKER) + 3])
        t = f[IPv6ExtHdrSegmentRouting].tag
        owners = (tag(0, i), tag(1, i)) if who == 2 else (tag(who, i),)
        assert t in owners, f"packet {(who, i)} came back with the SRH of tag {t}"
        seen[(i, t)] += 1
    assert seen, "no frame came back"
    assert max(seen.values()) == 1, "one SRH restored on two packets"

    # every packet counted once on the way in ...
    assert counts["in_cache"] + counts["cache_dup"] + counts["in_not_sid"] == \
        counts["in_packets"]
    assert counts["in_packets"] - counts["in_not_sid"] <= 2 * N
    assert counts["cache_insert"] == counts["in_cache"]
    # ... and once on the way back (the VNF never duplicates)
    returned = counts["from_packets"] - counts["from_ignored"]
    assert counts["cache_hit"] + counts["cache_miss"] + counts["cache_race"] == returned
    assert counts["cache_race"] == 0
    assert counts["fib_redirect"] == counts["cache_hit"] - counts["from_hop_limit"]
    assert len(seen) <= counts["cache_hit"]
    for bad in ("in_bad", "err", "from_hop_limit"):
        assert counts[bad] == 0, (bad, counts)
    # every entry deleted once: by its packet, as stale, or still there (packet lost)
    assert counts["cache_insert"] == \
        counts["cache_hit"] + counts["cache_stale"] + cache_entries()
