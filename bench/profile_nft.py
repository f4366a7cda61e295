#!/usr/bin/env python3
"""A planted slowdown named by `srperf compare`: an nft chain on the SUT's input path.

Runs the same experiment twice on a virtual testbed (namespaces ``s23n-*``), the
second time with an nftables prerouting chain of ``--rules`` non-matching rules in the
SUT namespace (every forwarded packet walks it), each search followed by a profile
trial.  Then it compares the two runs like ``srperf compare`` and prints the verdict
and the first suspects: the planted cost must appear as a regression whose first
suspect is ``nft_do_chain`` (judged on the rates, or, where the generator limited both
runs, on the time per packet of the profile trials).  Run it under the shared lock::

    flock /tmp/srperf-heavy.lock python bench/profile_nft.py --rules 200

Exit 0 when End regressed with nft_do_chain as its first suspect, 1 otherwise.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from srperf.config.loader import experiment_from_mapping
from srperf.config.model import TestbedConfig
from srperf.measure.orchestrator import Orchestrator
from srperf.results.compare import compare_runs, format_markdown
from srperf.results.profiles import format_profiles, profile_rows
from srperf.results.store import ResultStore
from srperf.testbeds.virtual import VirtualTestbed

PREFIX = "s23n"


def ruleset(rules: int) -> str:
    """A prerouting chain of ``rules`` rules that never match (documentation sources)."""
    body = "\n".join(f"    ip6 saddr 2001:db8::{i + 1:x} counter" for i in range(rules))
    return ("table inet srperf_slow {\n  chain pre {\n"
            "    type filter hook prerouting priority 0; policy accept;\n"
            f"{body}\n  }}\n}}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=int, default=200)
    ap.add_argument("--prefix", default=PREFIX, help="namespace prefix of the testbed")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--behaviors", default="end")
    ap.add_argument("--results", default="srperf-results/bench-profile-nft")
    ap.add_argument("--max-rate", default="30%",
                    help="highest rate tried (%% of the 1.5 Mpps nominal line rate)")
    args = ap.parse_args()
    from srperf.measure.bench_times import announce

    announce(__file__, lambda line: print(line, flush=True))
    # The testbed as `srperf run` makes it.  On a loaded VM the searches may end
    # generator_limited (no rate to compare); compare then judges the forwarding's time
    # per packet from the profile trials.
    tb = TestbedConfig(name=f"{args.prefix}-nft", prefix=args.prefix)
    exp = experiment_from_mapping({
        "name": "profile-nft", "forwarder": "linux",
        "behaviors": args.behaviors.split(","), "repetitions": args.repetitions,
        "search": {"algorithm": "bisect", "trial_duration_s": 0.5, "accuracy": "2%",
                   "min_rate": "3%", "max_rate": args.max_rate},
        "profile": {"enabled": True, "duration_s": 1.0, "top": 20}}, "<bench/profile_nft.py>")
    results = Path(args.results)
    try:
        base = Orchestrator(exp, tb, results, progress=print, keep_testbed=True).run()
        subprocess.run(["ip", "netns", "exec", tb.sut_ns, "nft", "-f", "-"],
                       input=ruleset(args.rules), text=True, check=True)
        print(f"planted: {args.rules} nft rules on prerouting in {tb.sut_ns}")
        cur = Orchestrator(exp, tb, results, progress=print, keep_testbed=True).run()
    finally:
        VirtualTestbed(tb).down()
    with ResultStore(results / "srperf.sqlite") as store:
        for name, run in (("baseline", base.run_id), ("with nft", cur.run_id)):
            print(f"\n{name} ({run}):\n{format_profiles(profile_rows(store, run))}")
        result = compare_runs(store, base.run_id, cur.run_id)
    print("\n" + format_markdown(result))
    named = [c for c in result.regressions if c.suspects
             and c.suspects[0].symbol == "nft_do_chain"]
    print(f"\nnft_do_chain named first suspect of a regression: {bool(named)}")
    grown = [c for c in named if c.stack_suspects
             and c.stack_suspects[0].group == "netfilter"]
    print(f"call chains through netfilter grew most (inclusive): {bool(grown)}")
    return 0 if named else 1


if __name__ == "__main__":
    sys.exit(main())
