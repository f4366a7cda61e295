#!/usr/bin/env python3
"""Thirty real nights on the virtual testbed with a planted step: does the trend see it?

Each *night* is a real ``srperf nightly`` job (:func:`srperf.nightly.run_nightly`, the
trend verdict) of a small suite: one or two behaviors on the virtual testbed
(namespaces ``t6b-*``), short trials, a profile trial per search.  From night
``--step-night`` on, an nftables prerouting chain of ``--rules`` non-matching rules
sits in the SUT namespace (as ``bench/profile_nft.py`` plants it): every forwarded
packet walks it, a real slowdown of the SUT.  With ``--srh-only`` only SRv6 packets
walk it (a slowdown of SRv6 processing alone), and ``--reference BEHAVIOR`` measures
that behavior every night too, so that the trend also judges each behavior relative
to it (suite ``trend.reference``: a drift of the host's capacity cancels).

Nights run in chunks (``--nights A:B``) so that each command holds the traffic lock
for less than about 4 minutes; on a shared host run it in a session of high autogroup
priority (see docs/benchmarks.md)::

    setsid sh -c 'echo -20 > /proc/self/autogroup; exec flock /work/wt/traffic.lock \
        python bench/trend_nights.py --nights 1:5'
    ... --nights 6:10 ...

Dates: a night really runs now; once its nightly job has judged it, the run's
``started`` in the store is set to the night's date (``--first-date`` + night - 1
days, 02:00 UTC), so that ``srperf trend`` and the report show one run a night.
Night order is real order, so the verdict each job gave is the one it would give.
Each night's verdict (green/red and red tests) is appended to ``nights.tsv`` in
the results directory; ``--summary`` prints them and ``srperf trend`` of the store.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from srperf.config.loader import load_testbed
from srperf.nightly import load_suite, run_nightly
from srperf.measure.orchestrator import Orchestrator
from srperf.results.store import ResultStore
from srperf.testbeds.virtual import VirtualTestbed

PREFIX = "t6b"


def ruleset(rules: int, srh_only: bool = False) -> str:
    """A prerouting chain of ``rules`` rules that never match (documentation sources);
    ``srh_only``: only packets whose first extension header is a routing header (SRv6)
    walk them, the others pass one rule (a slowdown of SRv6 processing alone)."""
    body = "\n".join(f"    ip6 saddr 2001:db8::{i + 1:x} counter" for i in range(rules))
    hook = "    type filter hook prerouting priority 0; policy accept;\n"
    if srh_only:
        return ("table inet t6b_slow {\n  chain slow {\n" f"{body}\n  }}\n"
                "  chain pre {\n" f"{hook}    ip6 nexthdr 43 jump slow\n  }}\n}}\n")
    return ("table inet t6b_slow {\n  chain pre {\n" f"{hook}{body}\n  }}\n}}\n")


def write_files(results: Path, args: argparse.Namespace) -> Path:
    """The suite, testbed and experiment files of the nights (kept beside the store)."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "t36-testbed.yaml").write_text(
        f"name: t36-virtual\nkind: virtual\nprefix: {PREFIX}\n"
        # srgen at SCHED_FIFO: other work on the shared host must not slow its pacing
        f"tester: {{options: {{fifo_priority: {args.fifo}}}}}\n")
    experiments = []
    for algorithm in args.algorithm.split(","):
        exp = results / f"t36-experiment-{algorithm}.yaml"
        exp.write_text(f"""name: t36-nightly-{algorithm}
forwarder: linux
behaviors: [{behaviors(args)}]
packet_sizes: [64]
repetitions: {args.repetitions}
search:
  algorithm: {algorithm}
  warmup_s: {args.warmup}
  thresholds_pct: [0.5]
  trial_duration_s: {args.trial}
  accuracy: 1%
  min_rate: 5%
  max_rate: {args.max_rate}
profile: {{enabled: {'false' if args.no_profile else 'true'}, duration_s: 0.5, top: 10}}
""")
        experiments.append(str(exp))
    suite = results / "t36-suite.yaml"
    reference = f", reference: {args.reference}" if args.reference else ""
    suite.write_text(f"""name: t36-trend
testbed: {results / 't36-testbed.yaml'}
experiments: [{', '.join(experiments)}]
results: {results / 'local'}
reports: {results / 'reports'}
verdict: trend
trend: {{min_change_pct: {args.min_change}{reference}}}
""")
    return suite


def behaviors(args: argparse.Namespace) -> str:
    """The experiment's behaviors: ``--behaviors`` and the ``--reference``."""
    names = [b for b in args.behaviors.split(",") if b]
    return ", ".join(names + ([args.reference] if args.reference and args.reference
                              not in names else []))


def night_date(first: str, night: int) -> str:
    day = dt.date.fromisoformat(first) + dt.timedelta(days=night - 1)
    return f"{day.isoformat()}T02:00:00.000+00:00"


def redate(db: Path, run_id: str, when: str) -> None:
    """Set a run's ``started`` to the night's date (see the module docstring)."""
    import sqlalchemy as sa

    from srperf.results import schema

    with ResultStore(db) as store, store.engine.begin() as conn:
        conn.execute(schema.runs.update().where(schema.runs.c.run_id == run_id)
                     .values(started=when))


def plant(sut_ns: str, rules: int, srh_only: bool = False) -> None:
    subprocess.run(["ip", "netns", "exec", sut_ns, "nft", "-f", "-"],
                   input=ruleset(rules, srh_only), text=True, check=True)


def unplant(sut_ns: str) -> None:
    """Remove the planted chain (calibration alternates nights with and without it)."""
    subprocess.run(["ip", "netns", "exec", sut_ns, "nft", "delete", "table", "inet",
                    "t6b_slow"], check=True)


def night_values(db: Path, run_ids: list[str], reference: str = ""
                 ) -> dict[str, dict[str, float]]:
    """{test label: {run id: the night's sample mean}} of ``run_ids`` (what the trend
    groups: one mean of the night's repetitions per test)."""
    from srperf.results.trend import load_samples

    with ResultStore(db) as store:
        tests = load_samples(store, reference=reference)
    return {f"{k.test} ({k.unit})": {s.run_id: s.mean for s in v
                                      if s.run_id in run_ids and not s.is_gap}
            for k, v in tests.items()}


def calibrate(args: argparse.Namespace, suite: Any, sut_ns: str, runner: Any,
              db: Path) -> int:
    """``--calibrate PAIRS``: nights without and with the planted chain, alternating in
    one sitting (ABBA order, so that a drift hits both arms alike); prints each test's
    night-to-night CV per arm and the step the chain makes (ratio of the arms' medians)."""
    import statistics

    from srperf.measure.bench_support import cv_pct

    arms: dict[bool, list[str]] = {False: [], True: []}
    order = [False, True, True, False] * ((args.calibrate + 1) // 2)
    for i, with_rules in enumerate(order[:2 * args.calibrate]):
        if with_rules:
            plant(sut_ns, args.rules, args.srh_only)
        started = time.monotonic()
        try:
            results = run_nightly(suite, runner=runner).results
        finally:
            if with_rules:
                unplant(sut_ns)
        for r in results:
            if r.run_id and not r.error:
                arms[with_rules].append(r.run_id)
        print(f"calibration night {i + 1}: {'nft' if with_rules else '-'} runs "
              + " ".join(f"{r.run_id} {r.error or ''}" for r in results)
              + f" {time.monotonic() - started:.0f}s", flush=True)
    values = night_values(db, arms[False] + arms[True], args.reference)
    print(f"{'test':<28} {'arm':<8} {'n':>2} {'median':>9} {'CV %':>6}  nights")
    summary: dict[str, Any] = {"rules": args.rules, "tests": {}}
    for test, by_run in values.items():
        med, arm_values = {}, {}
        for with_rules in (False, True):
            xs = [by_run[r] for r in arms[with_rules] if r in by_run]
            arm_values[with_rules] = xs
            med[with_rules] = statistics.median(xs) if xs else float("nan")
            print(f"{test:<28} {('nft ' + str(args.rules)) if with_rules else 'none':<8} "
                  f"{len(xs):>2} {med[with_rules]:>9.1f} {cv_pct(xs):>6.1f}  "
                  + " ".join(f"{x:.0f}" for x in xs))
        step = 100.0 * (med[True] / med[False] - 1.0)
        print(f"{test:<28} step {step:+.1f} % (median with / median without - 1)")
        summary["tests"][test] = {"without": arm_values[False], "with": arm_values[True],
                                  "cv_without_pct": cv_pct(arm_values[False]),
                                  "cv_with_pct": cv_pct(arm_values[True]), "step_pct": step}
    (db.parent.parent / "calibration.json").write_text(json.dumps(summary, indent=1))
    return 0


def replay(db: Path, step_night: int, confirm: int = 2, reference: str = "") -> None:
    """The nights as the trend saw them, night by night (``--summary``): each night's mean,
    the groups jumpavg forms over nights 1..n and whether night n was red; then the
    night-to-night CV before and after the step, the step itself and the first night
    whose grouping has a regression group starting at ``step_night``."""
    import statistics

    from srperf.measure.bench_support import cv_pct
    from srperf.results.trend import group, load_samples, new_regression

    with ResultStore(db) as store:
        tests = load_samples(store, reference=reference)
    for key, samples in tests.items():
        pts = [s for s in sorted(samples, key=lambda s: (s.date, s.run_id)) if not s.is_gap]
        values, means = [list(s.values) for s in pts], [s.mean for s in pts]
        print(f"{key.label} ({key.unit}): night, mean, groups over nights 1..n, verdict")
        seen = 0
        for n in range(1, len(pts) + 1):
            now = group(values[:n], key.direction)
            red = n > 1 and new_regression(now, group(values[:n - 1], key.direction), n,
                                           confirm)
            if not seen and any(g.first + 1 == step_night and g.cls == "regression"
                                for g in now):
                seen = n
            print(f"  {n:>2} {pts[n - 1].date[:10]} {means[n - 1]:8.1f}  "
                  + " ".join(f"[{g.first + 1}-{g.last + 1} {g.avg:.1f} {g.cls}]" for g in now)
                  + ("  RED" if red else ""))
        before, after = means[:step_night - 1], means[step_night - 1:]
        if len(before) > 1 and after:
            print(f"  CV of the nightly means: nights 1-{step_night - 1} {cv_pct(before):.1f} %, "
                  f"nights {step_night}-{len(means)} {cv_pct(after):.1f} %; step of the "
                  f"means {100.0 * (statistics.mean(after) / statistics.mean(before) - 1):+.1f} "
                  "%; a regression group from night "
                  f"{step_night} first formed on night {seen or 'never'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", default="1:5", help="A:B, the nights this command runs")
    ap.add_argument("--step-night", type=int, default=20)
    ap.add_argument("--rules", type=int, default=60, help="nft rules planted")
    ap.add_argument("--behaviors", default="end_x")
    ap.add_argument("--reference", default="", metavar="BEHAVIOR",
                    help="also measure BEHAVIOR every night and trend the others relative "
                         "to it (suite trend.reference)")
    ap.add_argument("--srh-only", action="store_true", help="only SRv6 packets (a routing "
                    "header first) walk the planted rules: a step of SRv6 processing alone")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--trial", type=float, default=0.5, help="trial duration, s")
    ap.add_argument("--max-rate", default="60%", help="of the 1.5 Mpps line rate (mrr: the "
                    "rate offered, above the SUT's capacity)")
    ap.add_argument("--algorithm", default="bisect",
                    help="bisect: PDR@0.5%% searches; mrr: max receive rate (CSIT's daily "
                         "trending figure: 3 trials at --max-rate, the median received); "
                         "both (mrr,bisect): one experiment each, every night")
    ap.add_argument("--warmup", type=float, default=0.0, help="traffic before each trial, "
                    "not counted, s")
    ap.add_argument("--no-profile", action="store_true", help="no profile trial per search")
    ap.add_argument("--min-change", type=float, default=0.0)
    ap.add_argument("--fifo", type=int, default=20, help="srgen's SCHED_FIFO priority")
    ap.add_argument("--first-date", default="2026-10-01")
    ap.add_argument("--results", default="srperf-results/t6b-nights")
    ap.add_argument("--summary", action="store_true", help="print the nights' verdicts and "
                    "replay them night by night (groups, CV before and after the step)")
    ap.add_argument("--calibrate", type=int, default=0, metavar="PAIRS",
                    help="instead of nights: PAIRS nights without and PAIRS with the rules, "
                         "alternating (ABBA), into RESULTS/calibration; print each arm's "
                         "night-to-night CV and the step")
    ap.add_argument("--calibration-name", default="calibration", metavar="DIR",
                    help="--calibrate: the folder under RESULTS (its store and "
                         "calibration.json)")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    results = Path(args.results).resolve()
    if args.calibrate:
        results = results / args.calibration_name
    suite_file = write_files(results, args)
    db = results / "local" / "srperf.sqlite"
    log = results / "nights.tsv"
    if args.summary:
        print(log.read_text() if log.exists() else "(no nights yet)")
        if db.exists():
            replay(db, args.step_night, reference=args.reference)
        return 0
    a, b = (int(x) for x in args.nights.split(":"))
    suite = load_suite(suite_file)
    tb_cfg = load_testbed(results / "t36-testbed.yaml")
    testbed = VirtualTestbed(tb_cfg)
    planted = False

    def runner(exp: Any, tb: Any, results_dir: Path) -> Any:
        return Orchestrator(exp, tb, results_dir, keep_testbed=True).run()

    try:
        testbed.up()
        if args.calibrate:
            return calibrate(args, suite, tb_cfg.sut_ns, runner, db)
        for night in range(a, b + 1):
            if night >= args.step_night and not planted:
                plant(tb_cfg.sut_ns, args.rules, args.srh_only)
                planted = True
            started = time.monotonic()
            out = run_nightly(suite, runner=runner)
            for r in out.results:
                if r.run_id:
                    redate(db, r.run_id, night_date(args.first_date, night))
            red = ", ".join(f"{al.test} {al.change_pct:+.1f} %"
                            + (f" (suspect {al.suspect})" if al.suspect else "")
                            for r in out.results for al in (r.trend.alerts if r.trend else []))
            state = "; ".join("error: " + r.error if r.error else r.nothing_measured and
                              "nothing measured" or ("red" if r.trend and r.trend.alerts
                                                     else "green") for r in out.results)
            line = (f"{night}\t{','.join(str(r.run_id) for r in out.results)}\t"
                    f"{'nft' if planted else '-'}\t{state}\t{red}\t"
                    f"{time.monotonic() - started:.0f}s")
            print(line, flush=True)
            with log.open("a") as f:
                f.write(line + "\n")
    finally:
        testbed.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
