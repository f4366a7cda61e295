#!/usr/bin/env python3
"""SRv6Pipes' evaluation shapes on namespaces: wrk against lighttpd through a chain
client - m1 - m2 - server, m1/m2 routers (End) or bytestream proxies.

Prints one table: requests/s and Mb/s per configuration, median of --repeats runs
interleaved across configurations.  Sections (the paper's figures):
  6   proxy (relay on m1) vs router, 1 KB and 100 KB objects
  9   XOR passes (xor:N on m1 = 2N passes), 1 MB objects
  11  two chained xormask proxies (function + inverse) vs two routers, 1 MB
  7   1 % loss per direction on links client-m1 and m2-server (bpf-drop where no netem),
      relay vs router, 1 MB; a delay is reported unsupported where netem is missing

    flock /tmp/srperf-heavy.lock .venv/bin/python bench/srv6pipes.py --duration 2
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

from srperf.stateful import impair
from srperf.stateful.http_load import HttpRunner
from srperf.stateful.pipes_chain import ROUTER, PipesChain
from srperf.config.stateful import HttpConfig, size_label

KB, MB = 1000, 1000 ** 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="s22b")
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per wrk run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--connections", type=int, default=20)
    ap.add_argument("--xor", default="1,4,16", help="XOR pass counts N (xor:N)")
    ap.add_argument("--loss-pct", type=float, default=1.0)
    ap.add_argument("--delay-ms", type=float, default=10.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    cases: list[tuple[str, list[str], int, bool]] = []   # (section, roles, size, lossy)
    for size in (KB, 100 * KB):
        cases += [("6", [ROUTER, ROUTER], size, False), ("6", ["relay", ROUTER], size, False)]
    cases += [("9", ["relay", ROUTER], MB, False)]
    cases += [("9", [f"xor:{n}", ROUTER], MB, False) for n in args.xor.split(",")]
    cases += [("11", [ROUTER, ROUTER], MB, False), ("11", ["xormask", "xormask"], MB, False)]
    cases += [("7", [ROUTER, ROUTER], MB, True), ("7", ["relay", ROUTER], MB, True)]

    cfg = HttpConfig(object_sizes=(KB, 100 * KB, MB), connections=args.connections,
                     threads=1, duration_s=args.duration, port=8080)
    results: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(cases))}
    methods: set[str] = set()
    chain = PipesChain(args.prefix, [ROUTER, ROUTER])
    runner = HttpRunner()
    try:
        endpoints = chain.up()
        runner.start(endpoints, cfg)
        variants = {v.params["object_size_bytes"]: v for v in runner.variants(cfg)}
        delay_note = ""
        try:
            probe = impair.apply(chain, impair.Impairment(0, "forward", delay_ms=args.delay_ms))
            impair.remove(probe)
            delay_note = f"delay {args.delay_ms} ms: {probe[0].method}"
        except impair.ImpairmentUnsupported as exc:
            delay_note = f"delay: unsupported ({exc})"
        for rep in range(args.repeats):
            for i, (_, roles, size, lossy) in enumerate(cases):
                chain.reconfigure(roles)
                applied = []
                if lossy:
                    for link in (0, 2):
                        applied += impair.apply(chain, impair.Impairment(
                            link, "both", loss_pct=args.loss_pct))
                    methods.update(a.method for a in applied)
                try:
                    s = runner.run(endpoints, cfg, args.duration, variants[size])
                finally:
                    impair.remove(applied)
                if s.ok:
                    results[i].append((s.metrics["requests_per_s"], s.metrics["transfer_mbps"]))
                else:
                    print(f"# {roles} {size_label(size)} rep {rep}: {s.status}: {s.reason}",
                          file=sys.stderr)
    finally:
        runner.stop(chain.endpoints()) if chain._nodes else None
        chain.down()

    print(f"# srv6pipes bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"wrk -c {args.connections} -d {args.duration:g}s, median of {args.repeats}, "
          "shared 2-vCPU machine")
    print(f"# loss by {', '.join(sorted(methods)) or '-'}; {delay_note}")
    print(f"{'fig':>3}  {'m1 / m2':<22} {'object':>6} {'loss':>6} {'req/s':>10} {'Mb/s':>9}")
    for i, (section, roles, size, lossy) in enumerate(cases):
        vals = results[i]
        loss = f"{args.loss_pct:g}%" if lossy else "-"
        if not vals:
            print(f"{section:>3}  {' / '.join(roles):<22} {size_label(size):>6} {loss:>6} "
                  f"{'failed':>10}")
            continue
        rps = statistics.median(v[0] for v in vals)
        mbps = statistics.median(v[1] for v in vals)
        print(f"{section:>3}  {' / '.join(roles):<22} {size_label(size):>6} {loss:>6} "
              f"{rps:>10.0f} {mbps:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
