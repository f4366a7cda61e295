"""Plumbing shared by the eBPF proxy benchmarks (bench/ebpf_*.py).

A virtual testbed with prefix ``ebp`` (namespaces ebp-tester, ebp-sut,
ebp-vnf<i>), the paced Linux generator, and PDR searches through srperf's own
search algorithms.  Rates are pps, durations seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scapy.layers.l2 import Ether  # noqa: E402

from srperf import behaviors  # noqa: E402
from srperf.config.model import TestbedConfig  # noqa: E402
from srperf.drivers.base import TrialResult  # noqa: E402
from srperf.drivers.linux import LinuxGenerator  # noqa: E402
from srperf.forwarders.ebpf.counters import delta, read_counters  # noqa: E402
from srperf.errors import VerificationError  # noqa: E402
from srperf.proxy_behaviors import DEFAULT_SETTINGS, ProxySettings, configure  # noqa: E402
from srperf.search import SearchSettings, create  # noqa: E402
from srperf.search.base import SearchResult  # noqa: E402
from srperf.terminate import sigterm_as_interrupt  # noqa: E402
from srperf.testbeds.virtual import VirtualTestbed  # noqa: E402
from srperf.testbeds.vnf import VnfSet  # noqa: E402

TB = TestbedConfig(name="ebp", prefix="ebp")


def with_target(tb: TestbedConfig, target: int) -> TestbedConfig:
    """``tb`` whose proxy test frames go to VNF ``target``."""
    return dataclasses.replace(tb, addressing=dataclasses.replace(tb.addressing,
                                                                  vnf_target=target))


@contextlib.contextmanager
def testbed(tb: TestbedConfig = TB, keep: bool = False) -> Iterator[LinuxGenerator]:
    """The namespace testbed and its generator; everything removed afterwards,
    also on an error, Ctrl-C or SIGTERM (unless ``keep``)."""
    vt = VirtualTestbed(tb)
    with sigterm_as_interrupt():
        gen: LinuxGenerator | None = None
        try:
            vt.up()
            gen = LinuxGenerator(tb.tester_ns, tb.tester.tx.name, tb.tester.rx.name,
                                 cpu=tb.tester.cpu)
            yield gen
        finally:
            if gen is not None:
                gen.close()
            with contextlib.suppress(Exception):
                configure(tb, "clean")
            if not keep:
                VnfSet(tb).down()
                vt.down()


def setup(tb: TestbedConfig, gen: LinuxGenerator, behavior: str,
          settings: ProxySettings = DEFAULT_SETTINGS, size: int = 64) -> bytes:
    """Configure ``behavior``, verify a few frames, return the frame to send."""
    beh = behaviors.get(behavior)
    configure(tb, beh.cfg_function, settings)
    frame = beh.build_frame(tb, size)
    got = [Ether(f) for f in gen.capture([bytes(frame)] * 3, timeout_s=2.0)]
    result = beh.check(tb, frame, got)
    if not result.ok:
        raise VerificationError(f"{behavior}: {result}")
    gen.prepare(bytes(frame))
    return bytes(frame)


def measure_fn(tb: TestbedConfig, gen: LinuxGenerator, log: list[dict] | None = None):
    """gen.trial with the proxy's counter deltas in ``extra['dataplane']``."""
    def measure(rate_pps: float, duration_s: float) -> TrialResult:
        before = read_counters(tb.sut_ns)
        trial = gen.trial(rate_pps, duration_s)
        counts = delta(before, read_counters(tb.sut_ns)) if before else {}
        trial = dataclasses.replace(trial, extra={**trial.extra, "dataplane": counts})
        if log is not None:
            log.append({"rate_pps": rate_pps, "loss": trial.loss_ratio,
                        "limited": trial.generator_limited, **counts})
        return trial
    return measure


def pdr(tb: TestbedConfig, gen: LinuxGenerator, settings: SearchSettings,
        algorithm: str = "bisect") -> SearchResult:
    """One PDR search (srperf.search) on whatever is configured now."""
    return create(algorithm, settings).run(measure_fn(tb, gen))


def search_settings(args) -> SearchSettings:
    return SearchSettings(thresholds_pct=(args.loss,), min_rate_pps=args.min_rate,
                          max_rate_pps=args.max_rate, accuracy_pps=args.accuracy,
                          trial_duration_s=args.trial, initial_trial_duration_s=args.trial,
                          relative_width=0.02, repeat_near_threshold=args.repeat)


def add_search_args(parser) -> None:
    parser.add_argument("--loss", type=float, default=0.5, help="loss threshold, %%")
    parser.add_argument("--min-rate", type=float, default=20_000.0, help="pps")
    parser.add_argument("--max-rate", type=float, default=900_000.0, help="pps")
    parser.add_argument("--accuracy", type=float, default=10_000.0, help="bisection stop, pps")
    parser.add_argument("--trial", type=float, default=1.0, help="trial duration, s")
    parser.add_argument("--repeat", type=int, default=3,
                        help="trials near the threshold are repeated (majority)")
    parser.add_argument("--algorithm", default="bisect")


def value_kpps(result: SearchResult) -> tuple[float | None, str]:
    goal = result.goals[0]
    v = goal.value_pps
    return (v / 1e3 if v is not None else None), goal.status


def stats(values: Sequence[float]) -> str:
    """median [min, max] and CV % of ``values`` (kpps)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "no value"
    med = statistics.median(vals)
    cv = 100 * statistics.pstdev(vals) / statistics.mean(vals) if len(vals) > 1 else 0.0
    return f"{med:8.1f} [{min(vals):.1f}, {max(vals):.1f}] CV {cv:4.1f} %  n={len(vals)}"
