#!/usr/bin/env python3
"""Thirty real nights on the virtual testbed with a planted step: does the trend see it?

Each *night* is a real ``srperf nightly`` job (:func:`srperf.nightly.run_nightly`, the
trend verdict) of a small suite: one or two behaviors on the virtual testbed
(namespaces ``t36-*``), short trials, a profile trial per search.  From night
``--step-night`` on, an nftables prerouting chain of ``--rules`` non-matching rules
sits in the SUT namespace (as ``bench/profile_nft.py`` plants it): every forwarded
packet walks it, a real slowdown of the SUT.

Nights run in chunks (``--nights A:B``) so that each command holds the traffic lock
for less than about 4 minutes; on a shared host run it in a session of high autogroup
priority (see README, Benchmarks)::

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
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from srperf.config.loader import load_testbed
from srperf.nightly import load_suite, run_nightly
from srperf.orchestrator import Orchestrator
from srperf.results.store import ResultStore
from srperf.testbeds.virtual import VirtualTestbed

PREFIX = "t36"


def ruleset(rules: int) -> str:
    """A prerouting chain of ``rules`` rules that never match (documentation sources)."""
    body = "\n".join(f"    ip6 saddr 2001:db8::{i + 1:x} counter" for i in range(rules))
    return ("table inet t36_slow {\n  chain pre {\n"
            "    type filter hook prerouting priority 0; policy accept;\n"
            f"{body}\n  }}\n}}\n")


def write_files(results: Path, args: argparse.Namespace) -> Path:
    """The suite, testbed and experiment files of the nights (kept beside the store)."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "t36-testbed.yaml").write_text(
        f"name: t36-virtual\nkind: virtual\nprefix: {PREFIX}\n"
        # srgen at SCHED_FIFO: other work on the shared host must not slow its pacing
        f"tester: {{options: {{fifo_priority: {args.fifo}}}}}\n")
    (results / "t36-experiment.yaml").write_text(f"""name: t36-nightly
forwarder: linux
behaviors: [{args.behaviors}]
packet_sizes: [64]
repetitions: {args.repetitions}
search:
  algorithm: {args.algorithm}
  thresholds_pct: [0.5]
  trial_duration_s: {args.trial}
  accuracy: 1%
  min_rate: 5%
  max_rate: {args.max_rate}
profile: {{enabled: true, duration_s: 0.5, top: 10}}
""")
    suite = results / "t36-suite.yaml"
    suite.write_text(f"""name: t36-trend
testbed: {results / 't36-testbed.yaml'}
experiments: [{results / 't36-experiment.yaml'}]
results: {results / 'local'}
reports: {results / 'reports'}
verdict: trend
trend: {{min_change_pct: {args.min_change}}}
""")
    return suite


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


def plant(sut_ns: str, rules: int) -> None:
    subprocess.run(["ip", "netns", "exec", sut_ns, "nft", "-f", "-"], input=ruleset(rules),
                   text=True, check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", default="1:5", help="A:B, the nights this command runs")
    ap.add_argument("--step-night", type=int, default=20)
    ap.add_argument("--rules", type=int, default=60, help="nft rules planted")
    ap.add_argument("--behaviors", default="end_x")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--trial", type=float, default=0.5, help="trial duration, s")
    ap.add_argument("--max-rate", default="60%", help="of the 1.5 Mpps line rate (mrr: the "
                    "rate offered, above the SUT's capacity)")
    ap.add_argument("--algorithm", default="bisect", choices=["bisect", "mrr"],
                    help="bisect: PDR@0.5%% searches; mrr: max receive rate (CSIT's daily "
                         "trending figure: 3 trials at --max-rate, the median received)")
    ap.add_argument("--min-change", type=float, default=0.0)
    ap.add_argument("--fifo", type=int, default=20, help="srgen's SCHED_FIFO priority")
    ap.add_argument("--first-date", default="2026-10-01")
    ap.add_argument("--results", default="srperf-results/t36-nights")
    ap.add_argument("--summary", action="store_true", help="print the nights' verdicts")
    args = ap.parse_args()
    results = Path(args.results).resolve()
    suite_file = write_files(results, args)
    db = results / "local" / "srperf.sqlite"
    log = results / "nights.tsv"
    if args.summary:
        print(log.read_text() if log.exists() else "(no nights yet)")
        return 0
    a, b = (int(x) for x in args.nights.split(":"))
    suite = load_suite(suite_file)
    tb_cfg = load_testbed(results / "t36-testbed.yaml")
    testbed = VirtualTestbed(tb_cfg)
    night = a
    planted = False

    def runner(exp: Any, tb: Any, results_dir: Path) -> Any:
        return Orchestrator(exp, tb, results_dir, keep_testbed=True).run()

    try:
        testbed.up()
        for night in range(a, b + 1):
            if night >= args.step_night and not planted:
                plant(tb_cfg.sut_ns, args.rules)
                planted = True
            started = time.monotonic()
            out = run_nightly(suite, runner=runner)
            r = out.results[0]
            if r.run_id:
                redate(db, r.run_id, night_date(args.first_date, night))
            red = ", ".join(f"{al.test} {al.change_pct:+.1f} %"
                            + (f" (suspect {al.suspect})" if al.suspect else "")
                            for al in (r.trend.alerts if r.trend else []))
            state = ("error: " + r.error if r.error else r.nothing_measured and
                     "nothing measured" or ("red" if out.regression else "green"))
            line = (f"{night}\t{r.run_id}\t{'nft' if planted else '-'}\t{state}\t{red}\t"
                    f"{time.monotonic() - started:.0f}s")
            print(line, flush=True)
            with log.open("a") as f:
                f.write(line + "\n")
    finally:
        testbed.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
