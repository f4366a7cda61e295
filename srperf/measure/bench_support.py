"""What the benchmark commands in ``bench/`` share: a measurement session whose trials
go to the results store as a bench run, and the figures they print.

Benches measure through :class:`srperf.measure.session.MeasurementSession` like
``srperf run`` does (configure -> verify -> search -> store); they differ only in
what they vary and print.  Rates are pps, durations seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from srperf.config.numbers import flag_float, flag_int
from srperf.behaviors import catalogue as behaviors
from srperf.forwarders import registry as forwarders
from srperf.testbeds import registry as testbeds
from srperf.measure import environment
from srperf.config.model import TestbedConfig
from srperf.config.settings import Settings
from srperf.forwarders.ebpf.forwarder import EbpfOptions, ProxySettings
from srperf.results.store import ResultStore, TrialKey
from srperf.search.base import SearchSettings
from srperf.search.base import SearchResult
from srperf.measure.session import MeasurementSession
from srperf.util.terminate import run_end, sigterm_as_interrupt

EBPF_TB = TestbedConfig(name="ebp", prefix="ebp")
"""The eBPF benches' virtual testbed (namespaces ebp-tester, ebp-sut, ebp-vnf<i>)."""


def results_dir() -> Path:
    """Where bench runs are stored (``$SRPERF_RESULTS`` or ./srperf-results)."""
    return Path(os.environ.get("SRPERF_RESULTS", "srperf-results"))


class BenchSession(MeasurementSession):
    """A session whose searches are stored as one bench run (``experiment = bench:NAME``,
    ``purpose = bench``)."""

    def __init__(self, bench: str, tb: TestbedConfig, forwarder: str,
                 options: Settings | None = None, keep_testbed: bool = False) -> None:
        fwd = forwarders.get(forwarder)
        super().__init__(testbeds.create(tb), fwd, options, keep_testbed=keep_testbed)
        self.bench, self.tb = bench, tb
        self._seq = 0
        self._ending: BaseException | None = None
        """What ended the bench (None: nothing went wrong), for its run's status."""

    def open(self) -> "BenchSession":
        super().open()
        self.store = ResultStore(results_dir() / "srperf.sqlite")
        env = {**environment.collect(), **self.environment()}
        self.run_id = self.store.begin_run(f"bench:{self.bench}", self.tb.name,
                                           self.forwarder.name, env, purpose="bench")
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._ending = exc
        self.close()

    def close(self) -> None:
        if self.store is not None and self.run_id is not None:
            status, reason, signame = run_end(self._ending)
            self.store.end_run(self.run_id, status, reason, signame)
            self.store.close()
            self.store = None
        super().close()

    def key(self, behavior: str, repetition: int = 1, packet_size: int = 64) -> TrialKey:
        """The next search's key in this bench run."""
        self._seq += 1
        return TrialKey(behavior, self.forwarder.name, packet_size, repetition, self._seq)

    def setup(self, name: str, options: Settings | None = None, size: int = 64) -> bytes:
        """Configure ``name`` (with new forwarder ``options`` if given), verify, prepare."""
        beh = behaviors.get(name)
        if options is not None and options != self.options:
            self.options = options
            self.sut.install(options)  # type: ignore[attr-defined]
        self.configure(beh)
        self._verified.discard((name, size))
        self.verify(beh, size)
        return self.prepare(beh, size)

    def retarget(self, tb: TestbedConfig) -> None:
        """Build frames (and verify) for ``tb`` from now on: the same nodes, other
        addressing knobs (e.g. ``vnf_target``)."""
        self.tb = self.testbed.config = tb
        self.sut.tb = tb  # type: ignore[attr-defined]

    def pdr(self, name: str, settings: SearchSettings, algorithm: str = "bisect",
            repetition: int = 1) -> SearchResult:
        """One stored search of what is configured now."""
        return self.search(behaviors.get(name), settings, algorithm,
                           self.key(name, repetition))


@contextlib.contextmanager
def bench_session(bench: str, tb: TestbedConfig, forwarder: str,
                  options: Settings | None = None, keep: bool = False
                  ) -> Iterator[BenchSession]:
    """An open :class:`BenchSession`; everything removed afterwards, also on an error,
    Ctrl-C or SIGTERM (unless ``keep``)."""
    with sigterm_as_interrupt():
        session = BenchSession(bench, tb, forwarder, options, keep_testbed=keep)
        with session:
            yield session


def proxy_options(settings: ProxySettings = ProxySettings(), vnf_count: int = 1,
                  vnf_mode: str = "forward") -> EbpfOptions:
    """The eBPF forwarder's options for these proxy settings and VNFs."""
    return EbpfOptions(vnf_count=vnf_count, vnf_mode=vnf_mode, proxy=settings)


def with_target(tb: TestbedConfig, target: int) -> TestbedConfig:
    """``tb`` whose proxy test frames go to VNF ``target``."""
    return dataclasses.replace(tb, addressing=dataclasses.replace(tb.addressing,
                                                                  vnf_target=target))


def search_settings(args: Any) -> SearchSettings:
    return SearchSettings(thresholds_pct=(args.loss,), min_rate_pps=args.min_rate,
                          max_rate_pps=args.max_rate, accuracy_pps=args.accuracy,
                          trial_duration_s=args.trial, initial_trial_duration_s=args.trial,
                          relative_width=0.02, repeat_near_threshold=args.repeat)


def add_search_args(parser: Any) -> None:
    parser.add_argument("--loss", type=flag_float, default=0.5, help="loss threshold, %%")
    parser.add_argument("--min-rate", type=flag_float, default=20_000.0, help="pps")
    parser.add_argument("--max-rate", type=flag_float, default=900_000.0, help="pps")
    parser.add_argument("--accuracy", type=flag_float, default=10_000.0, help="bisection stop, pps")
    parser.add_argument("--trial", type=flag_float, default=1.0, help="trial duration, s")
    parser.add_argument("--repeat", type=flag_int, default=3,
                        help="trials near the threshold are repeated (majority)")
    parser.add_argument("--algorithm", default="bisect")


def value_kpps(result: SearchResult) -> tuple[float | None, str]:
    goal = result.goals[0]
    v = goal.value_pps
    return (v / 1e3 if v is not None else None), goal.status


def stats(values: Sequence[float | None]) -> str:
    """median [min, max] and CV % of ``values`` (kpps)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "no value"
    med = statistics.median(vals)
    cv = 100 * statistics.pstdev(vals) / statistics.mean(vals) if len(vals) > 1 else 0.0
    return f"{med:8.1f} [{min(vals):.1f}, {max(vals):.1f}] CV {cv:4.1f} %  n={len(vals)}"


def cv_pct(values: Iterable[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean), %; nan below
    two values."""
    x = [float(v) for v in values]
    return 100.0 * statistics.stdev(x) / statistics.mean(x) if len(x) > 1 else float("nan")
