#!/usr/bin/env python3
"""How much the SUT's capacity moves from one trial to the next, and what that costs.

On the virtual testbed (real kernel): rounds of max-receive-rate trials (1 s
at a rate above every behavior's capacity, the generator's default queue), the
behaviors taking turns trial by trial (the SUT is reconfigured before every
trial, in alternating order), so that slow drift of the VM hits them alike.
The received rate of a usable trial (pps, received / intended duration) is one
sample of the behavior's capacity in that second.

Printed, per behavior: usable samples, mean (kpps), CV (%), lag-1
autocorrelation of consecutive samples, and the CV of means over ``--block`` consecutive samples
beside what independent samples would give (CV / sqrt(block)): equal figures
mean the noise is white, a larger block CV means slow drift; then the
unusable trials (generator-limited) and the trials that kept up with the
offered rate (lost < 0.1 %: a censored sample, so ``--rate`` was too low).

Per pair of behaviors: the correlation of their samples in the same round
(common-mode noise, which pairing trials would cancel), the median ratio, the
share of rounds where the first received more, and the seconds of trials per
behavior needed to order the pair right with 99 % probability in one repeat
(so 5 of 5 repeats with 95 %), for separate searches (as bench/search_b2.py
runs them) and for trials paired round by round, and the CV of block means of the
per-round ratio a/b (what ``srperf trend --reference`` trends: beside each
behavior's own block CV, how much of the drift the pairing cancels)::

    n = (z_0.99 * sd / |mean|)^2,  of d = ln(a / b) per sample (unpaired:
    sd^2 = var ln a + var ln b; paired: sd of the per-round d)

These are figures for max receive rate samples, which use each second's
received count.  A PDR search only learns pass or fail from each trial, which
carries less information (for normal noise, a share 2/pi of it at best), so a
PDR ranking needs at least these seconds.  They also assume independent
samples: where the block CV is above the white figure, slow drift makes them
optimistic, and only interleaving (or pairing) trials across behaviors helps.

    .venv/bin/python bench/capacity_noise.py [--behaviors ipv6,end,h_encaps]
        [--rounds 60] [--rate 1300000] [--duration 1.0] [--block 10]
        [--samples-json FILE]

Needs root; builds a virtual testbed with prefix ``srpcn`` and removes it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np


from srperf.measure.bench_support import bench_session, cv_pct
from srperf.behaviors import catalogue
from srperf.config.model import TestbedConfig
from srperf.traffic.generators import create_generator

Z_99 = 2.3263478740408408
"""One-sided 99 % quantile of the standard normal distribution."""
KEPT_UP_LOSS = 0.001
"""A trial that lost less than this share shows the offered rate, not the
capacity (the sample is censored): the "kept up" column counts them, and
``--rate`` should be raised until it is 0."""


@dataclass(frozen=True)
class Sample:
    """One max-receive-rate trial of one behavior."""

    round: int
    behavior: str
    received_pps: float | None
    """Received packets / intended duration, pps; None when the trial was unusable."""
    loss_ratio: float
    setup_s: float
    """Time to reconfigure the SUT and the generator before the trial, seconds."""
    note: str


def measure(names: list[str], rounds: int, rate_pps: float, duration_s: float,
            tb: TestbedConfig) -> list[Sample]:
    """Run the interleaved rounds on a fresh virtual testbed; remove it afterwards."""
    samples: list[Sample] = []
    behaviors = {n: catalogue.get(n) for n in names}
    frames = {n: bytes(b.build_frame(tb, 64)) for n, b in behaviors.items()}
    with bench_session("capacity_noise", tb, "linux") as s:
        gen = create_generator(tb, tb.tester_ns)
        try:
            for r in range(rounds):
                for name in names if r % 2 == 0 else list(reversed(names)):
                    t0 = time.monotonic()
                    s.configure(behaviors[name])
                    gen.prepare(frames[name])
                    setup = time.monotonic() - t0
                    t = gen.trial(rate_pps, duration_s)
                    samples.append(Sample(r, name, t.received_rate_pps if t.usable else None,
                                          t.loss_ratio, setup, t.note))
                    s.unconfigure(behaviors[name])
                print(f"round {r + 1:3d}: " + "  ".join(
                    f"{s.behavior} {s.received_pps / 1e3:6.0f}" if s.received_pps is not None
                    else f"{s.behavior} unusable" for s in samples[-len(names):]), flush=True)
        finally:
            gen.close()
    return samples


def series(samples: list[Sample], name: str) -> dict[int, float]:
    """Round -> received rate (kpps) of one behavior's usable samples."""
    return {s.round: s.received_pps / 1e3 for s in samples
            if s.behavior == name and s.received_pps is not None}


def lag1_autocorrelation(values: dict[int, float]) -> float:
    """Correlation of each round's sample with the next round's (both usable)."""
    pairs = [(v, values[r + 1]) for r, v in values.items() if r + 1 in values]
    if len(pairs) < 3:
        return float("nan")
    first, second = zip(*pairs)
    return float(np.corrcoef(first, second)[0, 1])


def seconds_to_order(d: np.ndarray, sd: float, duration_s: float) -> float:
    """Trial seconds per behavior for a 99 % right order, from log-ratio samples ``d``."""
    mean = float(d.mean())
    if mean == 0.0:
        return float("inf")
    return (Z_99 * sd / abs(mean)) ** 2 * duration_s


def summarize(samples: list[Sample], names: list[str], block: int, duration_s: float) -> None:
    by = {n: series(samples, n) for n in names}
    print(f"\n{'behavior':<9} {'n':>3} {'mean kpps':>9} {'CV %':>6} {'lag-1 ac':>8} "
          f"{'CV of ' + str(block) + '-means %':>16} {'(white: %)':>10} {'unusable':>8} "
          f"{'kept up':>7}")
    for name in names:
        rounds = sorted(by[name])
        x = np.array([by[name][r] for r in rounds])
        ac = lag1_autocorrelation(by[name])
        m = len(x) // block
        means = x[:m * block].reshape(m, block).mean(axis=1) if m else np.array([])
        unusable = sum(1 for s in samples if s.behavior == name and s.received_pps is None)
        kept_up = sum(1 for s in samples if s.behavior == name and s.received_pps is not None
                      and s.loss_ratio < KEPT_UP_LOSS)
        print(f"{name:<9} {len(x):>3} {x.mean() if len(x) else float('nan'):9.1f} "
              f"{cv_pct(x):6.1f} {ac:+8.2f} {cv_pct(means):16.1f} "
              f"{cv_pct(x) / math.sqrt(block):10.1f} {unusable:>8} {kept_up:>7}")
    print(f"\n{'pair':<20} {'rounds':>6} {'corr':>6} {'median ratio':>12} {'a>b':>5} "
          f"{'s for a 99 % order: separate':>28} {'paired':>7} "
          f"{'CV of ' + str(block) + '-means of a/b %':>22}")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(by[a]) & set(by[b]))
            if len(common) < 3:
                print(f"{a + '/' + b:<20} too few rounds with both samples")
                continue
            xa = np.log(np.array([by[a][r] for r in common]))
            xb = np.log(np.array([by[b][r] for r in common]))
            d = xa - xb
            corr = float(np.corrcoef(xa, xb)[0, 1])
            ratio = np.exp(d)
            m = len(ratio) // block
            ratio_means = ratio[:m * block].reshape(m, block).mean(axis=1) if m else ratio[:0]
            unpaired = math.sqrt(float(xa.var(ddof=1) + xb.var(ddof=1)))
            print(f"{a + '/' + b:<20} {len(common):>6} {corr:+6.2f} "
                  f"{math.exp(float(np.median(d))):12.3f} {100 * float(np.mean(d > 0)):4.0f}% "
                  f"{seconds_to_order(d, unpaired, duration_s):28.0f} "
                  f"{seconds_to_order(d, float(d.std(ddof=1)), duration_s):7.0f} "
                  f"{cv_pct(ratio_means):22.1f}")
    setup = [s.setup_s for s in samples]
    print(f"\nreconfiguring before a trial took {1e3 * statistics.median(setup):.0f} ms "
          f"(median of {len(setup)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--behaviors", default="ipv6,end,h_encaps")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--rate", type=float, default=1_300_000.0,
                    help="offered rate, pps: above every behavior's capacity")
    ap.add_argument("--duration", type=float, default=1.0, help="trial duration, s")
    ap.add_argument("--block", type=int, default=10, help="samples per block mean")
    ap.add_argument("--samples-json", metavar="FILE",
                    help="also write every sample to FILE (JSON)")
    ap.add_argument("--summary-from", metavar="FILE",
                    help="print the summary of samples saved with --samples-json, run nothing")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    names = args.behaviors.split(",")
    if args.summary_from:
        samples = [Sample(**s) for s in json.loads(Path(args.summary_from).read_text())]
        summarize(samples, names, args.block, args.duration)
        return 0
    if args.rounds < 3 or args.block < 1 or not args.duration > 0 or not args.rate > 0:
        ap.error("--rounds must be >= 3, --block >= 1, --duration and --rate > 0")
    started = time.monotonic()
    print(f"{args.rounds} rounds of {args.duration:g} s trials at {args.rate / 1e3:.0f} kpps "
          f"offered; behaviors {', '.join(names)} taking turns")
    samples = measure(names, args.rounds, args.rate, args.duration,
                      TestbedConfig(name="cn", prefix="srpcn"))
    if args.samples_json:
        Path(args.samples_json).write_text(json.dumps([asdict(s) for s in samples], indent=1))
    summarize(samples, names, args.block, args.duration)
    print(f"(wall time {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
