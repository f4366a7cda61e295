#!/usr/bin/env python3
"""Benchmark: the caching SRv6 proxy, hit ratio and PDR against cache size.

1. Hit ratio vs cache size and packets in flight.  The caching-proxy paper
   (Haerberle et al.) lost packets when the LRU cache was smaller than the
   number of packets inside the VNF (rate x VNF delay, Little's law).  This
   kernel has no netem, so the VNF delay is played exactly: a "sink" VNF keeps
   the K distinct packets the proxy hands it (K packets in flight), then they
   come back from the VNF in FIFO order (a delaying VNF) and the proxy restores
   what its cache still holds.  hit ratio = cache hits / K (every restored frame
   is checked against its own per-packet SRH tag).

2. PDR vs cache size.  The caching proxy drops a packet identical to one
   still inside the VNF (cache_dup, as in the paper), so its test frames are
   distinct (the behavior's ``distinct_frames``: srgen writes a per-packet
   counter into the payload); with ``--frames identical`` every packet is the
   same frame (as before distinct frames), and the PDR then measures how often
   the generator's batches put two identical packets in the proxy at once.  The
   cache size only changes the map the proxy works on (the paper saw larger
   maps get slower).  PDR@0.5 % per size.

3. Fixed-rate trials (``--rates``), identical and distinct frames side by side:
   loss and the share of packets dropped as duplicates (cache_dup / sent).

Run (root): /work/main/.venv/bin/python bench/ebpf_cache.py [--sizes 64,256,1024,4096]
            [--inflight 256,1024] [--pdr-sizes 256,4096,65536] [--repetitions 2]
            [--frames distinct,identical] [--rates 100000,300000] [--trial 1]
"""

from __future__ import annotations

import argparse
import time

from srperf.measure.bench_support import (EBPF_TB as TB, add_search_args, bench_session, proxy_options,
                                  search_settings, stats,
                         value_kpps)
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from srperf.behaviors import catalogue as behaviors
from srperf.traffic import packets as P
from srperf.drivers import linux_sink
from srperf.forwarders.ebpf.counters import delta, read_counters
from srperf.behaviors.proxies import target_sid
from srperf.forwarders.ebpf.forwarder import ProxySettings
from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
from srperf.testbeds.vnf import VnfSet

A = TB.addressing


def inner(i: int) -> IPv6:
    """Distinct packet i: flow label i + 1 (20 bits), payload carries i."""
    return (IPv6(src=A.src6, dst=A.dst6, fl=i + 1, hlim=P.HOP_LIMIT)
            / UDP(sport=P.UDP_SPORT, dport=P.UDP_DPORT)
            / Raw(P.MARKER + i.to_bytes(4, "big")))


def tagged(i: int) -> bytes:
    srh = P.srh([target_sid(TB), A.sid_next], 1, P.NH_IPV6)
    srh.tag = i & 0xffff
    return bytes(P.to_sut(TB, IPv6(src=A.tester_tx_ip6, dst=target_sid(TB),
                                   hlim=P.HOP_LIMIT, nh=P.NH_ROUTING) / srh / inner(i)))


def hit_ratio(session, gen, vnfs: VnfSet, size: int, inflight: int) -> tuple[float, int, float]:
    """(hit ratio, frames whose tag was wrong, seconds) for one cache size."""
    session.sut.install(proxy_options(ProxySettings(cache_entries=size), vnf_mode="sink"))
    session.sut.call("end_cache")
    t0 = time.monotonic()
    gen.capture([tagged(i) for i in range(inflight)], timeout_s=0.2)
    before = read_counters(TB.sut_ns)
    back = []
    for i in range(inflight):
        pkt = inner(i)
        pkt.hlim -= 1
        back.append(vnfs.frame_to_sut(0, bytes(pkt)))
    linux_sink.detach_sink(TB.tester_ns, TB.tester.rx.name)
    sock = ns_packet_socket(TB.tester_ns, TB.tester.rx.name)
    try:
        vnfs.inject(0, back)
        got = receive_frames(sock, timeout_s=1.0)
    finally:
        sock.close()
        linux_sink.attach_sink(TB.tester_ns, TB.tester.rx.name)
    counts = delta(before, read_counters(TB.sut_ns))
    wrong = 0
    for raw in got:
        if not P.is_test_frame(raw):
            continue
        f = Ether(raw)
        i = f[IPv6ExtHdrSegmentRouting][IPv6].fl - 1
        if f[IPv6ExtHdrSegmentRouting].tag != i & 0xffff:
            wrong += 1
    return counts["cache_hit"] / inflight, wrong, time.monotonic() - t0


def frames(session, gen, kind: str, size: int | None) -> None:
    """Configure end_cache (cache of ``size`` entries, None: the default) and hand the
    generator its frame: distinct per packet (as srperf runs it) or all identical."""
    settings = ProxySettings() if size is None else ProxySettings(cache_entries=size)
    frame = session.setup("end_cache", proxy_options(settings))
    if kind == "identical":
        gen.prepare(frame)  # the same frame over and over (counter slot left at 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--sizes", default="64,256,1024,4096", help="cache entries (part 1)")
    parser.add_argument("--inflight", default="256,1024", help="packets in flight (part 1)")
    parser.add_argument("--pdr-sizes", default="256,4096,65536", help="cache entries (part 2)")
    parser.add_argument("--repetitions", type=int, default=2, help="PDR searches per size")
    parser.add_argument("--frames", default="distinct",
                        help="test frames of part 2 (and 3): distinct, identical or both")
    parser.add_argument("--rates", default="", help="pps of the fixed-rate trials (part 3)")
    add_search_args(parser)
    args = parser.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    sizes = [int(s) for s in args.sizes.split(",") if s]
    inflight = [int(k) for k in args.inflight.split(",") if k]
    pdr_sizes = [int(s) for s in args.pdr_sizes.split(",") if s]
    kinds = [k for k in args.frames.split(",") if k]
    if not kinds or set(kinds) - {"distinct", "identical"}:
        parser.error(f"--frames {args.frames!r}: distinct, identical or both")
    rates = [float(r) for r in args.rates.split(",") if r]
    started = time.monotonic()
    with bench_session("ebpf_cache", TB, "ebpf", proxy_options()) as s:
        gen = s.generator(behaviors.get("end_cache"))
        if sizes and inflight:
            vnfs = VnfSet(TB, count=1, mode="sink").up()
            print("part 1: cache hit ratio, K distinct packets in flight, FIFO return")
            print("  entries " + " ".join(f"{f'K={k}':>16}" for k in inflight))
            for size in sizes:
                cells = []
                for k in inflight:
                    ratio, wrong, secs = hit_ratio(s, gen, vnfs, size, k)
                    cells.append(f"{ratio:7.3f}{f' ({wrong} bad)' if wrong else '':>9}")
                print(f"  {size:7d} " + " ".join(f"{c:>16}" for c in cells), flush=True)
        if pdr_sizes:
            VnfSet(TB).down()
            settings = search_settings(args)
            values: dict[tuple[int, str], list[float | None]] = {
                (s, k): [] for s in pdr_sizes for k in kinds}
            for rep in range(args.repetitions):
                order = pdr_sizes if rep % 2 == 0 else list(reversed(pdr_sizes))
                for size in order:
                    for kind in kinds if rep % 2 == 0 else list(reversed(kinds)):
                        frames(s, gen, kind, size)
                        kpps, status = value_kpps(s.pdr("end_cache", settings,
                                                        args.algorithm, rep + 1))
                        values[(size, kind)].append(kpps)
                        print(f"  cache {size:7d} {kind:9s}: PDR@{args.loss:g}% "
                              f"{'-' if kpps is None else f'{kpps:.1f}'} kpps ({status})",
                              flush=True)
            print(f"\npart 2: caching proxy PDR@{args.loss:g}% in kpps vs cache entries")
            for size in pdr_sizes:
                for kind in kinds:
                    print(f"  {size:7d} {kind:9s} {stats(values[(size, kind)])}")
        if rates:
            print(f"\npart 3: fixed-rate trials of {args.trial:g} s (default cache)")
            print(f"  {'rate kpps':>9} {'frames':9s} {'loss %':>7} {'cache_dup %':>11} "
                  f"{'received':>9}")
            for rep in range(args.repetitions):
                for rate in rates:
                    for kind in kinds if rep % 2 == 0 else list(reversed(kinds)):
                        frames(s, gen, kind, None)
                        before = read_counters(TB.sut_ns)
                        t = gen.trial(rate, args.trial)
                        dup = delta(before, read_counters(TB.sut_ns))["cache_dup"]
                        print(f"  {rate / 1e3:9.0f} {kind:9s} {100 * t.loss_ratio:7.2f} "
                              f"{100 * dup / max(t.sent, 1):11.2f} {t.received:9d}"
                              f"{' (generator limited)' if t.generator_limited else ''}",
                              flush=True)
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
