#!/usr/bin/env python3
"""The time between two trials of one search, from the store of fresh runs (issue 24).

Runs ``srperf run EXPERIMENT`` (default ``quick``, the plan of ``make run``) on a
virtual testbed of its own prefix, once per mode, in one sitting, each into a
results directory of its own, and prints per mode:

- the median (and 90th percentile) *gap* between consecutive trials of one
  search beyond the later trial's own duration: ``time[i] - time[i-1] -
  duration_s[i]``, from the trials' end times in the store (a trial is stored
  the moment it ends), over every search of the run;
- the time *not sending*: the same interval less the time srgen spent offering
  the trial's packets, in every attempt (a generator-limited trial is run again,
  ``tester.options.retries``, and a late one is stretched: on a loaded machine
  that time, up to a whole trial duration more, is part of the gap above but says
  nothing of the cost between trials); and the share of trials run more than once;
- the run's wall time (the whole ``srperf run`` command).

Modes (``tester.options`` of the testbed's driver):

- ``former``: the linux driver with ``resident: false, settle_s: 0``: one srgen
  process per trial and a fixed drain, as before issue 24; the trex driver with
  ``settle_s: 0``: a fixed drain (``drain_s``) after every trial;
- ``resident``: the defaults: one srgen per search, trials as commands (trex: one
  request per trial, the streams loaded once), the drain ended when the rx port
  has counted every frame or stopped counting.

    .venv/bin/python bench/trial_gap.py [--experiment quick] [--modes former,resident]
                                        [--prefix srpgap] [--rounds 1] [--keep DIR]
                                        [--testbed FILE]

``--testbed`` names the virtual testbed file to copy: one whose tester is TRex
(``tester.driver: trex`` with a ``release``) measures the trex driver.

Needs root (it brings the testbed up and down).  The machine's load moves the
figures: compare the modes of one sitting only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODES_BY_DRIVER: dict[str, dict[str, dict[str, object]]] = {
    "linux": {"former": {"resident": False, "settle_s": 0.0}, "resident": {}},
    "trex": {"former": {"settle_s": 0.0}, "resident": {}},
}
"""tester.options of each mode (on top of the testbed's own), by the tester's driver."""
MODES = MODES_BY_DRIVER["linux"]


@dataclass
class RunFigures:
    """What one run of one mode gave (seconds)."""

    mode: str
    gaps_s: list[float]
    """Gap before each trial (but a search's first) beyond its duration."""
    overheads_s: list[float]
    """The interval less the time spent offering packets, all attempts."""
    rerun: int
    """Trials run more than once (generator limited, then retried)."""
    wall_s: float
    trials: int
    searches: int


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def trial_gaps(store: Path) -> tuple[list[float], list[float], int, int, int]:
    """Gaps between consecutive trials of each search of the one run in ``store``
    (seconds), the time not sending, and the numbers of re-run trials, trials and
    searches."""
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT search_seq, time, duration_s, "
                          "COALESCE(json_extract(extra, '$.attempts'), 1), elapsed_s, "
                          "json_extract(extra, '$.elapsed_s_per_attempt') FROM trials "
                          "ORDER BY search_seq, id").fetchall()
    gaps: list[float] = []
    overheads: list[float] = []
    previous: dict[int, datetime] = {}
    for seq, stamp, duration, attempts, elapsed, per_attempt in rows:
        t = datetime.fromisoformat(stamp)
        if per_attempt:
            sending = sum(json.loads(per_attempt))
        else:   # one attempt (or a driver that does not say): its own elapsed time
            sending = float(elapsed) if int(attempts) == 1 else int(attempts) * float(duration)
        if seq in previous:
            interval = (t - previous[seq]).total_seconds()
            gaps.append(interval - float(duration))
            overheads.append(interval - sending)
        previous[seq] = t
    rerun = sum(1 for r in rows if int(r[3]) > 1)
    return gaps, overheads, rerun, len(rows), len(previous)


def testbed_file(base: Path, prefix: str, options: dict[str, object], where: Path) -> Path:
    """A copy of testbed ``base`` with ``prefix`` and the mode's tester options."""
    data = yaml.safe_load(base.read_text())
    data["prefix"] = prefix
    data.setdefault("tester", {})
    data["tester"]["options"] = {**(data["tester"].get("options") or {}), **options}
    path = where / f"testbed-{prefix}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def driver_of(testbed: Path) -> str:
    """The tester's driver the testbed file names (linux when it names none)."""
    data = yaml.safe_load(testbed.read_text()) or {}
    return str((data.get("tester") or {}).get("driver", "linux"))


def run_mode(mode: str, args: argparse.Namespace, work: Path) -> RunFigures:
    modes = MODES_BY_DRIVER[driver_of(Path(args.testbed))]
    tb = testbed_file(Path(args.testbed), args.prefix, modes[mode], work)
    results = work / f"results-{mode}-{time.monotonic_ns()}"
    argv = [str(Path(sys.executable).parent / "srperf"), "run", args.experiment, "-t", str(tb),
            "--results", str(results)]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    gaps, overheads, rerun, trials, searches = trial_gaps(results / "srperf.sqlite")
    return RunFigures(mode, gaps, overheads, rerun, wall, trials, searches)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--experiment", default="quick", help="experiment file or name (quick)")
    p.add_argument("--testbed", default=str(ROOT / "testbed" / "virtual.yaml"),
                   help="virtual testbed file to copy (its prefix and options changed)")
    p.add_argument("--prefix", default="srpgap", help="testbed prefix (namespaces)")
    p.add_argument("--modes", default="former,resident",
                   help=f"comma-separated, run in this order ({', '.join(MODES)})")
    p.add_argument("--rounds", type=int, default=1, help="runs of each mode, interleaved")
    p.add_argument("--keep", help="keep the results directories here")
    args = p.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    driver = driver_of(Path(args.testbed))
    if driver not in MODES_BY_DRIVER:
        p.error(f"--testbed: tester.driver {driver!r} has no modes here "
                f"({', '.join(MODES_BY_DRIVER)})")
    known = MODES_BY_DRIVER[driver]
    bad = [m for m in modes if m not in known]
    if bad:
        p.error(f"--modes: unknown {bad} (choose from {', '.join(known)})")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="srperf-gap-"))
    work.mkdir(parents=True, exist_ok=True)
    figures: list[RunFigures] = []
    try:
        for r in range(args.rounds):
            for mode in modes:
                fig = run_mode(mode, args, work)
                figures.append(fig)
                print(f"round {r + 1} {mode}: median gap {1000 * quantile(fig.gaps_s, 0.5):.0f} "
                      f"ms, not sending {1000 * quantile(fig.overheads_s, 0.5):.1f} ms, "
                      f"wall {fig.wall_s:.1f} s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nexperiment {args.experiment}, driver {driver}, "
          f"{datetime.now().isoformat(timespec='minutes')} "
          "(gap: time between two trials of one search beyond the trial's duration; "
          "not sending: that time less the generator's sending, every attempt)")
    print(f"{'mode':10} {'runs':>4} {'gaps':>5} {'gap median ms':>14} {'p90':>7} "
          f"{'not sending median ms':>23} {'p90':>7} {'re-run':>7} {'wall s':>7} "
          f"{'trials':>7}")
    for mode in modes:
        runs = [f for f in figures if f.mode == mode]
        gaps = [g for f in runs for g in f.gaps_s]
        over = [g for f in runs for g in f.overheads_s]
        trials = sum(f.trials for f in runs)
        rerun = sum(f.rerun for f in runs)
        print(f"{mode:10} {len(runs):>4} {len(gaps):>5} {1000 * quantile(gaps, 0.5):>14.1f} "
              f"{1000 * quantile(gaps, 0.9):>7.1f} {1000 * quantile(over, 0.5):>23.1f} "
              f"{1000 * quantile(over, 0.9):>7.1f} {rerun:>3}/{trials:<3} "
              f"{statistics.median(f.wall_s for f in runs):>7.1f} {trials:>7}")
    if {"former", "resident"} <= set(modes):
        a, b = (statistics.median(f.wall_s for f in figures if f.mode == m)
                for m in ("former", "resident"))
        print(f"wall time resident / former: {b / a:.2f} (generator-limited re-runs, which "
              "the machine's load decides, weigh on it: compare the re-run column)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
