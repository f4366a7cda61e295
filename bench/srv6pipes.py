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

from srperf.config.stateful import HttpConfig, PipesCase, size_label
from srperf.stateful import impair
from srperf.stateful.base import StatefulSample, Variant
from srperf.stateful.pipes_chain import PipesChain
from srperf.stateful.pipes_plan import run_cases

KB, MB = 1000, 1000 ** 2
ROUTER = "router"


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

    small = (KB, 100 * KB)
    cases: list[tuple[str, PipesCase]] = [   # (section, configuration)
        ("6", PipesCase((ROUTER, ROUTER), small)), ("6", PipesCase(("relay", ROUTER), small)),
        ("9", PipesCase(("relay", ROUTER), (MB,)))]
    cases += [("9", PipesCase((f"xor:{n}", ROUTER), (MB,))) for n in args.xor.split(",")]
    cases += [("11", PipesCase((ROUTER, ROUTER), (MB,))),
              ("11", PipesCase(("xormask", "xormask"), (MB,))),
              ("7", PipesCase((ROUTER, ROUTER), (MB,), loss_pct=args.loss_pct)),
              ("7", PipesCase(("relay", ROUTER), (MB,), loss_pct=args.loss_pct))]

    cfg = HttpConfig(object_sizes=(KB, 100 * KB, MB), connections=args.connections,
                     threads=1, duration_s=args.duration, port=8080)
    # the bench lists a configuration in two sections: results keyed by identity
    results: dict[tuple[int, int], list[tuple[float, float]]] = {}
    index = {id(case): i for i, (_, case) in enumerate(cases)}

    def on_sample(case: PipesCase, variant: Variant, rep: int, s: StatefulSample) -> None:
        size = int(variant.params["object_size_bytes"])
        if s.ok:
            results.setdefault((index[id(case)], size), []).append(
                (s.metrics["requests_per_s"], s.metrics["transfer_mbps"]))
        else:
            print(f"# {case.label} {size_label(size)} rep {rep}: {s.status}: {s.reason}",
                  file=sys.stderr)

    note = delay_note(args.prefix, args.delay_ms)
    methods = run_cases(args.prefix, [c for _, c in cases], cfg, args.repeats, on_sample)

    print(f"# srv6pipes bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"wrk -c {args.connections} -d {args.duration:g}s, median of {args.repeats}, "
          "shared 2-vCPU machine")
    print(f"# loss by {', '.join(sorted(methods)) or '-'}; {note}")
    print(f"{'fig':>3}  {'m1 / m2':<22} {'object':>6} {'loss':>6} {'req/s':>10} {'Mb/s':>9}")
    for i, (section, case) in enumerate(cases):
        for size in case.object_sizes:
            vals = results.get((i, size), [])
            loss = f"{case.loss_pct:g}%" if case.loss_pct else "-"
            head = f"{section:>3}  {' / '.join(case.chain):<22} {size_label(size):>6} {loss:>6}"
            if not vals:
                print(f"{head} {'failed':>10}")
                continue
            rps = statistics.median(v[0] for v in vals)
            mbps = statistics.median(v[1] for v in vals)
            print(f"{head} {rps:>10.0f} {mbps:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
