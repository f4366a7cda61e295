#!/usr/bin/env python3
"""Do the two send engines give the same PDRs?  ``srperf run quick`` with engine packet
(srgen) and engine auto (or xdp: xdpgen), interleaved ABBA (issue 43's must-show).

    SRPERF_BUILD_DIR=... /work/bin/traffic .venv/bin/python bench/engine_agreement.py \\
        [--engines packet,auto] [--runs 1] [--prefix a5u] [--fifo PRIO] [--quantum-us US] \\
        [--under-load] [--keep DIR]
    .venv/bin/python bench/engine_agreement.py --summary DIR [--engines packet,auto]

Each run is ``srperf run experiments/quick.yaml`` on a copy of testbed/virtual.yaml with
``prefix`` PREFIX and ``tester.options.engine`` set (``--fifo``: and ``fifo_priority``),
into a results directory of its own.  ``--runs N`` makes N runs of each engine, in the
order A B, B A, A B, ... (ABBA), so a drift of the host's load over the sitting falls on
both engines alike.  ``--under-load`` runs each ``srperf run`` beside one busy loop per
CPU (scripts/under_load.sh, as ``make test-under-load`` does).

A whole sitting (3 runs each, about 2 min a run) is longer than one hold of the shared
traffic lock should be, so it can be made in pieces: ``--keep DIR --runs 1`` appends each
run to DIR/figures.jsonl, and ``--summary DIR`` prints them all together.  Give the pieces
alternate orders (``--engines packet,auto`` then ``--engines auto,packet``) to keep ABBA.

Per run it prints each behavior's PDR (kpps) or status, and which engine sent its trials
(``extra["engine"]`` of every trial).  The summary gives per behavior the median PDR of
each engine, the ratio of the medians (second engine over first), each engine's spread
((max - min) / median over its runs), the generator-limited and below-minimum statuses,
and the conformance: how many runs verified the behavior (outcome ``measured``) or did not
(``verify_failed``, ``error``).  Figures depend on the host's load, which is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from make_run import interleaved  # noqa: E402  (sibling bench scripts)
from trial_gap import testbed_file  # noqa: E402

ENGINE_CHOICES = ("packet", "auto", "xdp")
NOT_PDR = ("generator_limited", "below_min")
"""Search statuses the summary counts: no PDR of the SUT."""


@dataclass
class EngineRun:
    """One ``srperf run quick`` with one engine."""

    engine: str
    started_utc: str
    load_before: str
    load_after: str
    wall_s: float
    exit_code: int
    under_load: bool = False
    fifo: int = 0
    quantum_us: float = 0.0
    pdr_kpps: dict[str, float] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    """Per behavior: the search status (ok, at_max, generator_limited, below_min...), or
    the outcome when there was no search (unsupported, verify_failed, error)."""
    outcome: dict[str, str] = field(default_factory=dict)
    """Per behavior: measured (verified, then searched), unsupported, verify_failed..."""
    engines_used: dict[str, int] = field(default_factory=dict)
    """Trials per engine that sent them (extra["engine"])."""
    env_generator: dict[str, object] = field(default_factory=dict)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def read_store(store: Path, run: EngineRun) -> None:
    """Fill ``run`` from the one run in ``store``."""
    with sqlite3.connect(store) as db:
        for behavior, status, lower in db.execute(
                "SELECT behavior, status, lower_pps FROM searches ORDER BY search_seq"):
            run.status[behavior] = status
            if status in ("ok", "at_max") and lower is not None:
                run.pdr_kpps[behavior] = lower / 1e3
        for behavior, status in db.execute("SELECT behavior, status FROM outcomes"):
            run.outcome[behavior] = status
            run.status.setdefault(behavior, status)
        used = Counter(str(engine) for (engine,) in db.execute(
            "SELECT json_extract(extra, '$.engine') FROM trials"))
        run.engines_used = dict(used)
        row = db.execute("SELECT environment FROM runs").fetchone()
        if row and row[0]:
            run.env_generator = json.loads(row[0]).get("generator", {})


def one_run(engine: str, args: argparse.Namespace, work: Path) -> EngineRun:
    options: dict[str, object] = {"engine": engine}
    if args.fifo:
        options["fifo_priority"] = args.fifo
    if args.quantum_us:
        options["quantum_s"] = args.quantum_us / 1e6
    tb = testbed_file(ROOT / "testbed" / "virtual.yaml", args.prefix, options, work)
    results = work / f"results-{engine}-{time.monotonic_ns()}"
    argv = [str(Path(sys.executable).parent / "srperf"), "run",
            str(ROOT / "experiments" / "quick.yaml"), "-t", str(tb), "--results", str(results)]
    if args.under_load:
        argv = [str(ROOT / "scripts" / "under_load.sh"), *argv]
    run = EngineRun(engine, time.strftime("%H:%M:%S", time.gmtime()), loadavg(), "", 0.0, 0,
                    args.under_load, args.fifo, args.quantum_us)
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    run.wall_s = time.monotonic() - started
    run.load_after = loadavg()
    run.exit_code = proc.returncode
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    read_store(results / "srperf.sqlite", run)
    return run


def describe_run(run: EngineRun) -> str:
    cells = [f"{b} {run.pdr_kpps[b]:.1f}" if b in run.pdr_kpps else f"{b} {s}"
             for b, s in run.status.items()]
    return (f"{run.started_utc} UTC {run.engine:<6} exit {run.exit_code} "
            f"{run.wall_s:5.0f} s, load {run.load_before} -> {run.load_after}"
            f"{' under load' if run.under_load else ''}{f' fifo {run.fifo}' if run.fifo else ''}"
            f"{f' quantum {run.quantum_us:g} us' if run.quantum_us else ''}"
            f"; trials by engine {run.engines_used}\n    " + ", ".join(cells))


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return "-"
    return f"{(max(values) - min(values)) / statistics.median(values):.0%}"


def summarize(runs: list[EngineRun], engines: list[str]) -> int:
    by_engine: dict[str, list[EngineRun]] = defaultdict(list)
    for run in runs:
        by_engine[run.engine].append(run)
    engines = [e for e in engines if by_engine[e]]
    if not engines:
        print("no runs")
        return 1
    print(f"\nsrperf run quick, runs per engine: "
          + ", ".join(f"{e} {len(by_engine[e])}" for e in engines)
          + f"; first {runs[0].started_utc} UTC (load {runs[0].load_before}), last "
          f"{runs[-1].started_utc} UTC (load {runs[-1].load_after})")
    behaviors = list(dict.fromkeys(b for r in runs for b in r.status))
    a = engines[0]
    head = f"{'behavior':<9}"
    for e in engines:
        head += f" | {e + ' median':>13} {'spread':>6} {'GL/bm':>5} {'verified':>8}"
    if len(engines) > 1:
        head += " | " + " ".join(f"{e + '/' + a:>12}" for e in engines[1:])
    print(head)
    for b in behaviors:
        line = f"{b:<9}"
        medians: dict[str, float | None] = {}
        for e in engines:
            rs = by_engine[e]
            vals = [r.pdr_kpps[b] for r in rs if b in r.pdr_kpps]
            medians[e] = statistics.median(vals) if vals else None
            bad = sum(r.status.get(b) in NOT_PDR for r in rs)
            verified = sum(r.outcome.get(b) == "measured" for r in rs)
            statuses = Counter(r.status.get(b, "-") for r in rs if b not in r.pdr_kpps)
            med = f"{medians[e]:.1f}" if medians[e] is not None else \
                "/".join(sorted(statuses))[:13]
            line += (f" | {med:>13} {spread(vals):>6} {bad:>5} "
                     f"{f'{verified}/{len(rs)}':>8}")
        if len(engines) > 1:
            cells = []
            for e in engines[1:]:
                ma, me = medians[a], medians[e]
                cells.append(f"{me / ma:12.3f}" if ma and me is not None else f"{'-':>12}")
            line += " | " + " ".join(cells)
        print(line)
    print("(median of the runs' PDR@0.5 % in kpps, or the statuses where no run found one; "
          "spread = (max-min)/median; GL/bm = runs generator-limited or below_min; verified"
          " = runs whose outcome was measured, i.e. the behavior's verification passed)")
    for e in engines:
        used: Counter[str] = Counter()
        for r in by_engine[e]:
            used.update(r.engines_used)
        print(f"trials of engine {e} runs sent by: {dict(used)}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engines", default="packet,auto",
                   help="two (or more) of packet, auto, xdp; the first is the ratios' base")
    p.add_argument("--runs", type=int, default=3, help="runs of each engine, ABBA")
    p.add_argument("--prefix", default="a5u", help="testbed prefix (namespaces)")
    p.add_argument("--fifo", type=int, default=0, metavar="PRIO",
                   help="tester.options.fifo_priority for every run (0: the testbed's)")
    p.add_argument("--quantum-us", type=float, default=0.0, metavar="US",
                   help="tester.options.quantum_s for every run: srgen then sends what is due "
                   "every US as xdpgen does (its default 20 us); 0: the testbed's")
    p.add_argument("--under-load", action="store_true",
                   help="each run beside one busy loop per CPU (scripts/under_load.sh)")
    p.add_argument("--keep", help="keep results and append to DIR/figures.jsonl")
    p.add_argument("--summary", metavar="DIR", help="run nothing: summarize DIR/figures.jsonl")
    args = p.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or any(e not in ENGINE_CHOICES for e in engines):
        p.error(f"--engines: choose from {', '.join(ENGINE_CHOICES)}, not {args.engines!r}")
    if not 0 <= args.fifo <= 99:
        p.error(f"--fifo: a priority 0-99, not {args.fifo}")
    if not 0 <= args.quantum_us <= 500:
        p.error(f"--quantum-us: 0-500 us (at most half of max_lag_s), not {args.quantum_us}")
    if args.summary:
        lines = (Path(args.summary) / "figures.jsonl").read_text().splitlines()
        runs = [EngineRun(**json.loads(line)) for line in lines if line.strip()]
        for run in runs:
            print(describe_run(run))
        return summarize(runs, engines)
    if args.runs < 1:
        p.error("--runs: at least 1")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="srperf-engines-"))
    work.mkdir(parents=True, exist_ok=True)
    runs = interleaved(engines, args.runs, work, lambda e: one_run(e, args, work),
                       lambda _r, run: print(describe_run(run), flush=True))
    return summarize(runs, engines)


if __name__ == "__main__":
    sys.exit(main())
