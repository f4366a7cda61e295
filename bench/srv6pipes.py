#!/usr/bin/env python3
"""SRv6Pipes' evaluation shapes on namespaces: wrk against lighttpd through a chain
client - m1 - m2 - server, m1/m2 routers (End) or bytestream proxies.

Prints one table: requests/s and Mb/s per configuration, median of --repeats runs
interleaved across configurations (and across relay builds with --compare-relay).
Sections (the paper's figures):
  6   proxy (relay on m1) vs router, 1 KB, 100 KB and 1 MB objects
  9   XOR passes (xor:N on m1 = 2N passes), 1 MB objects
  11  two chained xormask proxies (function + inverse) vs two routers, 1 MB
  7   1 % loss and 5 ms delay per direction on links client-m1 and m2-server (bpf-drop and
      the delay line where no netem), relay vs router, 1 MB, with --tcp-congestion (e.g.
      reno, as experiments/srv6pipes.yaml: a loss-based control, as the paper's kernel had)
With --rate-mbit R (e.g. 10000, the paper's 10 Gb/s links) sections 6 and 9 are run again
with every link capped at R Mb/s, and section 11 at --chain-rate-mbit (1000: the paper ran
its chained proxies over 1 Gb/s links); the uncapped rows stay in the table.
With --compare-relay PATH every repetition also runs the cases with that pipes_relay
binary (e.g. an older build), and the table shows both and their ratio.  With
--compare-pinned NODE,ENDPOINT it also runs them with the middle nodes on CPU NODE and
client and server on CPU ENDPOINT (options node_cpu, endpoint_cpu); --pinned runs only so.

    flock /tmp/srperf-heavy.lock .venv/bin/python bench/srv6pipes.py --duration 2
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

from srperf.config.stateful import HttpConfig, PipesCase, size_label
from srperf.forwarders.pipes import PipesOptions
from srperf.stateful import impair
from srperf.stateful.base import StatefulSample, Variant
from srperf.stateful.pipes_chain import PipesChain
from srperf.stateful.pipes_plan import run_cases

KB, MB = 1000, 1000 ** 2
ROUTER = "router"
BUILT = "built"


def delay_note(prefix: str, delay_ms: float) -> str:
    """Whether this kernel can delay a link (netem), tried on a chain of its own."""
    chain = PipesChain(prefix, [ROUTER])
    try:
        chain.up()
        probe = impair.apply(chain, impair.Impairment(0, "forward", delay_ms=delay_ms))
        impair.remove(probe)
        return f"delay {delay_ms:g} ms: {probe[0].method}"
    except impair.ImpairmentUnsupported as exc:
        return f"delay: unsupported ({exc})"
    finally:
        chain.down()


def plan(args: argparse.Namespace) -> list[tuple[str, PipesCase]]:
    """(section, configuration) in the order they run."""
    sections = set(args.sections.split(","))
    rates = [0.0] + ([args.rate_mbit] if args.rate_mbit else [])
    cases: list[tuple[str, PipesCase]] = []
    for rate in rates:
        if "6" in sections:
            cases += [("6", PipesCase((role, ROUTER), (KB, 100 * KB, MB), rate_mbit=rate))
                      for role in (ROUTER, "relay")]
        if "9" in sections:
            cases += [("9", PipesCase((f"xor:{n}", ROUTER), (MB,), rate_mbit=rate))
                      for n in args.xor.split(",")]
    for rate in [0.0] + ([args.chain_rate_mbit] if args.rate_mbit else []):
        if "11" in sections:
            cases += [("11", PipesCase((ROUTER, ROUTER), (MB,), rate_mbit=rate)),
                      ("11", PipesCase(("xormask", "xormask"), (MB,), rate_mbit=rate))]
    if "7" in sections:
        cases += [("7", PipesCase((role, ROUTER), (MB,), loss_pct=args.loss_pct,
                                  delay_ms=args.delay_ms,
                                  tcp_congestion=args.tcp_congestion or None))
                  for role in (ROUTER, "relay")]
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="s22b")
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per wrk run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--connections", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1, help="relay worker threads")
    ap.add_argument("--sections", default="6,9,11,7")
    ap.add_argument("--xor", default="1,4,16", help="XOR pass counts N (xor:N)")
    ap.add_argument("--loss-pct", type=float, default=1.0)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--tcp-congestion", default="",
                    help="section 7: TCP congestion control of the chain's namespaces "
                    "(default: their own, BBR on this host)")
    ap.add_argument("--rate-mbit", type=float, default=0.0,
                    help="also run sections 6 and 9 with every link at this rate (Mb/s)")
    ap.add_argument("--chain-rate-mbit", type=float, default=1000.0,
                    help="section 11's link rate when --rate-mbit is set (Mb/s)")
    ap.add_argument("--compare-relay", type=Path, metavar="PATH",
                    help="another pipes_relay binary, run beside the built one")
    ap.add_argument("--compare-pinned", metavar="NODE,ENDPOINT",
                    help="also run with the middle nodes and the endpoints on these CPUs")
    ap.add_argument("--pinned", metavar="NODE,ENDPOINT",
                    help="run only with the middle nodes and the endpoints on these CPUs")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    logging.basicConfig(level=logging.WARNING)

    cases = plan(args)
    plain = PipesOptions(threads=args.threads)

    def pinned(spec: str) -> PipesOptions:
        node, endpoint = (int(x) for x in spec.split(","))
        return PipesOptions(threads=args.threads, node_cpu=node, endpoint_cpu=endpoint)

    builds: list[tuple[str, Path | None, PipesOptions]] = [
        (BUILT, None, pinned(args.pinned) if args.pinned else plain)]
    if args.compare_relay:
        builds.append(("other", args.compare_relay.resolve(), builds[0][2]))
    if args.compare_pinned:
        builds.append(("pinned", None, pinned(args.compare_pinned)))
    cfg = HttpConfig(object_sizes=(KB, 100 * KB, MB), connections=args.connections,
                     threads=1, duration_s=args.duration, port=8080)
    index = {id(case): i for i, (_, case) in enumerate(cases)}
    results: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
    build = BUILT

    def on_sample(case: PipesCase, variant: Variant, rep: int, s: StatefulSample) -> None:
        size = int(variant.params["object_size_bytes"])
        if s.ok:
            results.setdefault((build, index[id(case)], size), []).append(
                (s.metrics["requests_per_s"], s.metrics["transfer_mbps"]))
        else:
            print(f"# {build} {case.label} {size_label(size)}: {s.status}: {s.reason}",
                  file=sys.stderr)

    note = delay_note(args.prefix, args.delay_ms) if "7" in args.sections.split(",") else ""
    methods: set[str] = set()
    for _ in range(args.repeats):   # builds interleaved per repetition
        for build, relay, options in builds:
            methods |= run_cases(args.prefix, [c for _, c in cases], cfg, 1, on_sample,
                                 options=options, relay=relay)

    print(f"# srv6pipes bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"wrk -c {args.connections} -d {args.duration:g}s, median of {args.repeats}, "
          f"relay threads {args.threads}, {builds[0][0]}: {builds[0][2]}, "
          "shared 2-vCPU machine")
    print(f"# loss by {', '.join(sorted(methods)) or '-'}; {note or 'no delay probe'}")
    if args.compare_relay:
        print(f"# other = {args.compare_relay}")
    head = f"{'fig':>3}  {'m1 / m2':<18} {'object':>6} {'loss':>5} {'rate':>7}"
    cols = "".join(f" {b + ' req/s':>13} {'Mb/s':>8}" for b, _, _ in builds)
    print(head + cols + (f" {builds[0][0] + '/' + builds[1][0]:>11}" if len(builds) > 1
                         else ""))
    for i, (section, case) in enumerate(cases):
        for size in case.object_sizes:
            loss = f"{case.loss_pct:g}%" if case.loss_pct else "-"
            rate = f"{case.rate_mbit:g}M" if case.rate_mbit else "-"
            line = (f"{section:>3}  {' / '.join(case.chain):<18} {size_label(size):>6} "
                    f"{loss:>5} {rate:>7}")
            med = []
            for b, _, _ in builds:
                vals = results.get((b, i, size), [])
                if not vals:
                    line += f" {'failed':>13} {'':>8}"
                    med.append(None)
                    continue
                rps = statistics.median(v[0] for v in vals)
                med.append(rps)
                line += f" {rps:>13.0f} {statistics.median(v[1] for v in vals):>8.1f}"
            if len(builds) > 1:
                line += (f" {med[0] / med[1]:>10.2f}x" if med[0] and med[1] else
                         f" {'-':>11}")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
