#!/usr/bin/env python3
"""``make run`` before and after issue 24, side by side in one sitting.

``make run`` is ``scripts/install.sh`` (a no-op on an installed machine) then
``srperf run experiments/quick.yaml``.  This bench runs exactly those two steps
per mode, on a virtual testbed of its own prefix (``make run`` itself would use
the shipped ``srp`` one), each run into a results directory of its own, the
modes interleaved ``--rounds`` times, and prints per run:

- the wall time of the whole, of install.sh and of ``srperf run``;
- searches, trials, trial-seconds (the searches' own sum) and the seconds spent
  sending (every attempt of every trial, generator retries included), from the
  store;
- per behavior: the PDR found (the search's lower bound, kpps) or its status,
  and the trials of its search;

then the ratio of the median wall times, and the PDRs of the modes side by side
(median over rounds) so a reader can see whether they agree within the
testbed's noise (about 5-25 % here from one search to the next: see
/work/shared notes and bench/search_b2.py).

Modes:

- ``former``: as before issue 24: one srgen process per trial with a fixed
  drain (``tester.options: {resident: false, settle_s: 0}``) and SRPerf's plain
  bisection from the middle of [min, max] (``search.bisect_start=range``);
- ``new``: the shipped ``make run``: the resident generator, quick's own search;
- ``informed``: as ``new`` with ``search.bisect_start=mrr`` (a short probe at max
  places the bisection's bracket, :mod:`srperf.search.bisect`);
- ``rested``: as ``new`` but every drain lasts the full ``drain_s`` (200 ms, as
  before issue 24), so the SUT idles between trials as it did then; ``rest50``
  the same with a 50 ms drain;
- ``short``: as ``new`` with ``search.bisect_start=short`` (short trials bisect
  first, full trials finish from their bracket);
- ``whole``: as ``new`` with ``search.early_stop=false`` (every trial runs its whole
  duration, however certain its failure); ``rest200``: as ``new`` with
  ``tester.options.rest_s`` 200 ms (the SUT idles that long after a lossy trial);
- ``checkout``: the real before: ``make run`` of another checkout of srperf
  (``--checkout DIR``, e.g. the commit before issue 24, ``a5cd631``), its own
  install.sh, venv, build directory (``DIR/.bench-build``) and quick.yaml (refused
  unless it is the same plan as this tree's), on a testbed of the same prefix.
  ``former`` only emulates the old generator and search with today's code; every
  other change since (the in-process verification capture, for one) is in it.
  Make the checkout with ``git worktree add --detach ../before a5cd631``, then
  ``python3 -m venv ../before/.venv`` (or a copy whose scripts point at its own
  python) and ``../before/scripts/install.sh``.

    .venv/bin/python bench/make_run.py [--modes former,new] [--rounds 1]
                                       [--prefix srpmr] [--keep DIR] [--gen-fifo PRIO]
                                       [--checkout DIR (mode checkout)]
    .venv/bin/python bench/make_run.py --summary DIR [--modes former,new]

Each run is also appended to DIR/figures.jsonl (with ``--keep DIR``), so a sitting
can be run in pieces (one mode per call, each under the shared lock) and printed
together with ``--summary DIR``.

Needs root (install.sh and the testbed).  The machine's load moves the figures:
compare the modes of one sitting only.
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
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from trial_gap import testbed_file  # noqa: E402  (a sibling bench script)

from srperf.search.base import SearchSettings  # noqa: E402

MODES: dict[str, tuple[dict[str, object], list[str]]] = {
    "former": ({"resident": False, "settle_s": 0.0}, ["search.bisect_start=range"]),
    "new": ({}, []),
    "informed": ({}, ["search.bisect_start=mrr"]),
    "short": ({}, ["search.bisect_start=short"]),
    "rested": ({"settle_s": 0.0}, []),
    "rest50": ({"settle_s": 0.0, "drain_s": 0.05}, []),
    "whole": ({}, ["search.early_stop=false"]),
    "rest200": ({"rest_s": 0.2}, []),
    "checkout": ({}, []),
}
"""Per mode: tester.options (on top of the testbed's) and ``--set`` overrides."""
NEAR_LOSS = (0.005 / SearchSettings.near_factor, 0.005 * SearchSettings.near_factor)
"""quick's threshold (0.5 %) divided and multiplied by bisect's near_factor."""


@dataclass
class RunFigures:
    """One ``make run`` of one mode (seconds, pps)."""

    mode: str
    wall_s: float
    install_s: float
    run_s: float
    searches: int = 0
    trials: int = 0
    trial_s: float = 0.0
    sending_s: float = 0.0
    pdr: dict[str, str] = field(default_factory=dict)
    """Per behavior: the PDR in kpps, or the status (unsupported, generator_limited...)."""
    pdr_kpps: dict[str, float] = field(default_factory=dict)
    trials_per_search: dict[str, int] = field(default_factory=dict)
    near: int = 0
    """Trials whose loss was near the 0.5 % threshold (1/4 to 4 times it): the ones
    bisect repeats."""
    stopped: int = 0
    """Trials stopped early (``search.early_stop``)."""


def store_figures(store: Path, fig: RunFigures) -> None:
    """Fill ``fig`` from the one run in ``store``."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT behavior, status, lower_pps, n_trials, trial_seconds "
                          "FROM searches ORDER BY search_seq").fetchall()
        for behavior, status, lower, n, trial_s in rows:
            fig.searches += 1
            fig.trials += int(n)
            fig.trial_s += float(trial_s)
            fig.trials_per_search[behavior] = int(n)
            if status in ("ok", "at_max") and lower is not None:
                fig.pdr_kpps[behavior] = lower / 1e3
                fig.pdr[behavior] = f"{lower / 1e3:.1f}" + ("" if status == "ok" else f" {status}")
            else:
                fig.pdr[behavior] = status
        for behavior, status in db.execute("SELECT behavior, status FROM outcomes"):
            fig.pdr.setdefault(behavior, status)
        for elapsed, per_attempt, loss, stopped in db.execute(
                "SELECT elapsed_s, json_extract(extra, '$.elapsed_s_per_attempt'), loss_ratio, "
                "json_extract(extra, '$.stopped') FROM trials"):
            fig.sending_s += sum(json.loads(per_attempt)) if per_attempt else float(elapsed)
            fig.near += NEAR_LOSS[0] <= float(loss) <= NEAR_LOSS[1]
            fig.stopped += stopped is not None


def same_plan(checkout: Path) -> None:
    """Exit unless ``checkout`` runs the same plan: its quick.yaml and virtual.yaml are
    this tree's, byte for byte."""
    for rel in ("experiments/quick.yaml", "testbed/virtual.yaml"):
        theirs, ours = checkout / rel, ROOT / rel
        if not theirs.is_file() or theirs.read_bytes() != ours.read_bytes():
            sys.exit(f"--checkout {checkout}: its {rel} is not this tree's: not the same plan")
    if not (checkout / ".venv" / "bin" / "srperf").is_file():
        sys.exit(f"--checkout {checkout}: no .venv/bin/srperf (run its scripts/install.sh)")


def run_mode(mode: str, args: argparse.Namespace, work: Path) -> RunFigures:
    options, sets = MODES[mode]
    if args.gen_fifo:
        options = {**options, "fifo_priority": args.gen_fifo}
    tree = Path(args.checkout).resolve() if mode == "checkout" else ROOT
    env = dict(os.environ)
    if mode == "checkout":
        env["SRPERF_BUILD_DIR"] = str(tree / ".bench-build")
    tb = testbed_file(tree / "testbed" / "virtual.yaml", args.prefix, options, work)
    results = work / f"results-{mode}-{time.monotonic_ns()}"
    srperf = str(tree / ".venv" / "bin" / "srperf")
    run = [srperf, "run", str(tree / "experiments" / "quick.yaml"), "-t", str(tb),
           "--results", str(results)]
    for item in sets:
        run += ["--set", item]
    started = time.monotonic()
    install = subprocess.run([str(tree / "scripts" / "install.sh")], capture_output=True,
                             text=True, cwd=tree, env=env)
    installed = time.monotonic()
    if install.returncode != 0:
        sys.exit(f"install.sh failed ({install.returncode}):\n{install.stderr[-2000:]}")
    proc = subprocess.run(run, capture_output=True, text=True, cwd=tree, env=env)
    ended = time.monotonic()
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"{' '.join(run)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    fig = RunFigures(mode, ended - started, installed - started, ended - installed)
    store_figures(results / "srperf.sqlite", fig)
    return fig


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="former,new",
                   help=f"comma-separated, run in this order ({', '.join(MODES)})")
    p.add_argument("--rounds", type=int, default=1, help="runs of each mode, interleaved")
    p.add_argument("--prefix", default="srpmr", help="testbed prefix (namespaces)")
    p.add_argument("--keep", help="keep the results directories (and figures.jsonl) here")
    p.add_argument("--checkout", metavar="DIR",
                   help="mode checkout: the srperf checkout whose make run is the before "
                   "(e.g. a worktree of a5cd631, installed)")
    p.add_argument("--summary", metavar="DIR",
                   help="run nothing: print the runs of DIR/figures.jsonl (its --modes)")
    p.add_argument("--gen-fifo", type=int, default=0, metavar="PRIO",
                   help="srgen at SCHED_FIFO PRIO in every mode (tester.options.fifo_priority;"
                   " 0: the testbed's normal scheduling). On a host where other work runs "
                   "at nice 19 on the generator's CPU, a normal-priority srgen slips ~30 %% "
                   "even at 75 kpps (bench/generator.py --gen-fifo 0 vs 1) and every search "
                   "ends generator_limited")
    args = p.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        p.error(f"--modes: unknown {bad} (choose from {', '.join(MODES)})")
    if "checkout" in modes and not args.summary:
        if not args.checkout:
            p.error("--modes checkout needs --checkout DIR")
        same_plan(Path(args.checkout).resolve())
    if args.summary:
        lines = (Path(args.summary) / "figures.jsonl").read_text().splitlines()
        figures = [RunFigures(**json.loads(line)) for line in lines if line.strip()]
        figures = [f for f in figures if f.mode in modes]
        args.rounds = max((sum(f.mode == m for f in figures) for m in modes), default=0)
        return summarize(figures, modes, args.rounds)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="srperf-makerun-"))
    work.mkdir(parents=True, exist_ok=True)

    def report(r: int, fig: RunFigures) -> None:
        per = ", ".join(f"{b} {n}" for b, n in fig.trials_per_search.items())
        print(f"round {r + 1} {fig.mode:<8} wall {fig.wall_s:6.1f} s (install "
              f"{fig.install_s:4.1f} s, srperf run {fig.run_s:6.1f} s); {fig.searches} "
              f"searches, {fig.trials} trials, {fig.trial_s:.1f} trial-s, {fig.sending_s:.1f} s "
              f"sending, {fig.near} near, {fig.stopped} stopped; trials per search: {per}",
              flush=True)

    figures = interleaved(modes, args.rounds, work, lambda m: run_mode(m, args, work), report)
    return summarize(figures, modes, args.rounds)


R = TypeVar("R")


def interleaved(modes: list[str], rounds: int, work: Path, run_one: Callable[[str], R],
                report: Callable[[int, R], None]) -> list[R]:
    """``run_one(mode)`` for every mode, ``rounds`` times, in ABBA order (the modes
    reversed in odd rounds); each result (a dataclass) is appended to
    WORK/figures.jsonl, so a sitting can be made in pieces, and given to ``report``
    with its round (bench/engine_agreement.py uses it too)."""
    done: list[R] = []
    for r in range(rounds):
        for mode in (modes if r % 2 == 0 else list(reversed(modes))):
            fig = run_one(mode)
            done.append(fig)
            with open(work / "figures.jsonl", "a") as out:
                out.write(json.dumps(asdict(fig)) + "\n")   # type: ignore[call-overload]
            report(r, fig)
    return done


def summarize(figures: list[RunFigures], modes: list[str], rounds: int) -> int:
    """Print the medians per mode, the wall-time ratios and the PDRs side by side."""
    by_mode: dict[str, list[RunFigures]] = defaultdict(list)
    for fig in figures:
        by_mode[fig.mode].append(fig)
    print(f"\nmake run (install.sh + srperf run quick), {rounds} round(s), medians:")
    print(f"{'mode':<9} {'wall s':>7} {'install':>7} {'run s':>7} {'trials':>7} "
          f"{'trial-s':>8} {'sending':>8} {'near':>5} {'stopped':>7}")
    wall: dict[str, float] = {}
    modes = [m for m in modes if by_mode[m]]
    for mode in modes:
        fs = by_mode[mode]
        wall[mode] = statistics.median(f.wall_s for f in fs)
        print(f"{mode:<9} {wall[mode]:7.1f} {statistics.median(f.install_s for f in fs):7.1f} "
              f"{statistics.median(f.run_s for f in fs):7.1f} "
              f"{statistics.median(f.trials for f in fs):7.0f} "
              f"{statistics.median(f.trial_s for f in fs):8.1f} "
              f"{statistics.median(f.sending_s for f in fs):8.1f} "
              f"{statistics.median(f.near for f in fs):5.0f} "
              f"{statistics.median(f.stopped for f in fs):7.0f}")
    for mode in modes[1:]:
        print(f"wall time {mode}/{modes[0]}: {wall[mode] / wall[modes[0]]:.2f}")
    behaviors = list(dict.fromkeys(b for f in figures for b in f.pdr))
    print("\nPDR@0.5 % per behavior, kpps (each round's value; status where none); "
          "trials per search in ()")
    print(f"{'behavior':<10} " + " ".join(f"{m:>28}" for m in modes))
    for b in behaviors:
        cells = []
        for mode in modes:
            vals = [f"{f.pdr.get(b, '-')}({f.trials_per_search.get(b, 0)})"
                    for f in by_mode[mode]]
            cells.append(f"{' '.join(vals):>28}")
        print(f"{b:<10} " + " ".join(cells))
    first = modes[0]
    for mode in modes[1:]:
        ratios = []
        for b in behaviors:
            a = [f.pdr_kpps[b] for f in by_mode[first] if b in f.pdr_kpps]
            c = [f.pdr_kpps[b] for f in by_mode[mode] if b in f.pdr_kpps]
            if a and c:
                ratios.append(f"{b} {statistics.median(c) / statistics.median(a):.3f}")
        print(f"median PDR ratio {mode}/{first}: "
              f"{', '.join(ratios) or 'no behavior measured both ways'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
