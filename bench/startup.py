#!/usr/bin/env python3
"""Start-up time of the commands a user types most: seconds from exec to exit.

For each command, ``--runs`` runs (default 5) of this checkout's ``srperf`` and,
with ``--before DIR``, of the ``srperf`` installed in DIR's own venv (a checkout of
older code, say ``git worktree add ../before 4c2daba`` then ``make install``
there), interleaved run by run so that both see the same machine; the median
and the ratio are printed side by side.  Every command is run in its own
checkout, against a shipped experiment and an empty results store made here
(nothing is sent, no testbed is touched).  The issue asks for under 0.5 s.

Figures are wall time on whatever else the machine is doing: compare the two
columns of one sitting, not figures of different sittings.

    .venv/bin/python bench/startup.py [--runs 5] [--before /path/to/old/checkout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = (
    ("srperf --help", ["--help"]),
    ("srperf validate experiments/quick.yaml", ["validate", "experiments/quick.yaml"]),
    ("srperf validate testbed/virtual.yaml", ["validate", "testbed/virtual.yaml"]),
    ("srperf behaviors", ["behaviors"]),
    ("srperf runs", ["runs", "--results", "{results}"]),
)


def seconds(checkout: Path, argv: list[str], results: str) -> float:
    """Wall seconds of one run of ``checkout``'s srperf (its exit status must be 0)."""
    exe = checkout / ".venv" / "bin" / "srperf"
    args = [a.replace("{results}", results) for a in argv]
    env = dict(os.environ, SRPERF_BUILD_DIR=str(checkout / ".build"))
    start = time.perf_counter()
    proc = subprocess.run([str(exe), *args], cwd=checkout, env=env, capture_output=True,
                          text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{exe} {' '.join(args)} exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-300:]}")
    return took


def empty_store(checkout: Path, where: Path) -> str:
    """A results directory holding an empty store, made by ``checkout``'s own srperf."""
    code = ("import sys; from srperf.results.store import ResultStore; "
            "ResultStore(sys.argv[1] + '/srperf.sqlite').close()")
    subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", code, str(where)],
                   check=True, cwd=checkout)
    return str(where)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    ap.add_argument("--before", type=Path,
                    help="another checkout with its own .venv (make install) to compare with")
    args = ap.parse_args(argv)
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    sides = [("this", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    for name, checkout in sides:
        if not (checkout / ".venv" / "bin" / "srperf").exists():
            ap.error(f"{checkout}: no .venv/bin/srperf (run 'make install' there)")
    with tempfile.TemporaryDirectory(prefix="srperf-startup-") as tmp:
        stores = {}
        for name, checkout in sides:
            (Path(tmp) / name).mkdir()
            stores[name] = empty_store(checkout, Path(tmp) / name)
        head = f"{'command':<42} {'this (s)':>9}"
        if args.before:
            head += f" {'before (s)':>11} {'before/this':>12}"
        print(f"median of {args.runs} runs, wall time (load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: figures are noisy)")
        print(head)
        for label, cmd in COMMANDS:
            times: dict[str, list[float]] = {name: [] for name, _ in sides}
            for _ in range(args.runs):
                for name, checkout in sides:
                    times[name].append(seconds(checkout, cmd, stores[name]))
            this = statistics.median(times["this"])
            line = f"{label:<42} {this:>9.2f}"
            if args.before:
                before = statistics.median(times["before"])
                line += f" {before:>11.2f} {before / this:>11.1f}x"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
