"""The interface shared by every search algorithm.

A search knows nothing about drivers or SUTs: it calls ``measure(rate_pps,
duration_s) -> TrialResult`` and returns bounds per goal plus every trial.
Loss thresholds are given in percent (0.5 means 0.5 %), rates in pps.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from srperf.drivers.base import TrialResult


def exceeds(trial: TrialResult, threshold_pct: float) -> bool:
    """True when the trial lost more than ``threshold_pct`` % of its intended packets."""
    return trial.lost * 100.0 > trial.intended * threshold_pct

BISECT_STARTS = ("range", "mrr", "short")
"""Values of :attr:`SearchSettings.bisect_start`."""

class Measure(Protocol):
    """``measure(rate_pps, duration_s) -> TrialResult``: one trial.

    ``stop_lost`` is passed only by searches with ``early_stop`` (see
    :meth:`srperf.drivers.base.TrafficGenerator.trial`); a measure callable for
    other searches may take the two positional arguments alone.
    """

    def __call__(self, rate_pps: float, duration_s: float, *,
                 stop_lost: int | None = None) -> TrialResult: ...


@dataclass(frozen=True)
class SearchSettings:
    """Everything a search needs besides the measure callable.

    Attributes:
        thresholds_pct: loss thresholds in percent, one goal each (0 = NDR).
        min_rate_pps: lowest rate the search may try, pps.
        max_rate_pps: highest rate the search may try, pps.
        accuracy_pps: width at which a bisection stops, pps (SRPerf epsilon).
        trial_duration_s: duration of a (final) trial, seconds.
        initial_trial_duration_s: first-phase trial duration for MLR-style searches.
        repeat_near_threshold: SRPerf paper's advice: trials whose loss is within
            ``near_factor`` of a threshold are repeated this many times in all and
            decided by majority.
        near_factor: relative closeness to a threshold that triggers repeats.
        warmup_duration_s: optional warm-up trial before the search (discarded).
        exceed_ratio: MLR-style share of failing trial time tolerated at a load.
        duration_sum_s: MLR-style trial time needed at a load before deciding,
            seconds.  The default, 10 s of 1 s trials (a load is a lower bound
            once 5 of 10 passed, an upper bound once 6 failed), is the shortest
            sum whose mean error on the model SUT stays within a 0.5 % width at
            2 % capacity noise per trial (bench/search_b1.py: 0.59 % with 5 s,
            0.48 % with 10 s); on the virtual testbed 3 s let one unlucky pair of
            trials make a wrong bound too often (bench/search_b2.py).
        relative_width: MLR-style stop width relative to the upper bound.
        seed: for algorithms that randomise anything.
        mrr_rate_pps: offered rate of max-receive-rate trials, pps (None: max rate).
        mrr_repeats: number of max-receive-rate trials (the median is reported).
        validation_trials: MLR-style: once the search has converged, each
            reported rate must stay a lower bound even if this many more
            final-duration trials failed; validation trials are run there until
            it does (or it falls and the search resumes).  0: no margin.
        preceding_phases: MLR-style coarser phases (shorter trials, wider
            width) run before the final phase.
        max_trials: safety limit on the number of trials of one search; goals
            not resolved by then are reported ``"undecided"``.
        bisect_start: where ``bisect`` starts: ``"range"`` bisects [min, max] from
            the midpoint (SRPerf's Algorithm 1); ``"mrr"`` runs one short trial
            (``initial_trial_duration_s``) at max, which only places the bracket,
            then measures around the rate it received and widens the bracket
            (doubling) until a passing and a failing trial bound the answer; the
            bisection then goes on as in Algorithm 1 (:mod:`srperf.search.bisect`);
            ``"short"`` bisects with short trials first (a fifth of the trial duration,
            never deciding) and finishes with full trials from that bracket.
        early_stop: ``bisect`` and ``multi``: each trial may end as soon as the
            packets it certainly lost decide it the way the whole trial would
            (failing every threshold, and not near one where that would make
            the rate be measured again: :func:`srperf.search.common.stop_lost`).
            Its verdict and the search's course are those of the whole trial;
            it costs only the part that ran.  Off here (a measure callable
            need not know ``stop_lost``); an experiment's ``search.early_stop``
            is on unless it says otherwise.
    """

    thresholds_pct: tuple[float, ...] = (0.5,)
    min_rate_pps: float = 10_000.0
    max_rate_pps: float = 1_500_000.0
    accuracy_pps: float = 5_000.0
    trial_duration_s: float = 1.0
    initial_trial_duration_s: float = 0.5
    repeat_near_threshold: int = 3
    near_factor: float = 4.0
    warmup_duration_s: float = 0.0
    exceed_ratio: float = 0.5
    duration_sum_s: float = 10.0
    relative_width: float = 0.01
    seed: int = 0
    mrr_rate_pps: float | None = None
    mrr_repeats: int = 3
    validation_trials: int = 1
    preceding_phases: int = 1
    max_trials: int = 1000
    bisect_start: str = "range"
    early_stop: bool = False

    def validate(self) -> None:
        """Raise ValueError with a precise message when a setting is impossible."""
        for t in self.thresholds_pct:
            if not (0.0 <= t < 100.0) or math.isnan(t):
                raise ValueError(f"loss threshold {t!r} % is outside [0, 100)")
        if not self.thresholds_pct:
            raise ValueError("at least one loss threshold is needed")
        if self.min_rate_pps <= 0:
            raise ValueError(f"min rate {self.min_rate_pps!r} pps must be > 0")
        if self.min_rate_pps >= self.max_rate_pps:
            raise ValueError(
                f"min rate {self.min_rate_pps!r} pps must be below max rate {self.max_rate_pps!r} pps")
        for name in ("trial_duration_s", "initial_trial_duration_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name} = {value!r} must be > 0 seconds")
        if self.accuracy_pps <= 0:
            raise ValueError(f"accuracy {self.accuracy_pps!r} pps must be > 0")
        if len(set(self.thresholds_pct)) != len(self.thresholds_pct):
            raise ValueError(f"loss thresholds {self.thresholds_pct!r} % contain duplicates")
        if not self.duration_sum_s > 0:
            raise ValueError(f"duration_sum_s = {self.duration_sum_s!r} must be > 0 seconds")
        if not self.warmup_duration_s >= 0:
            raise ValueError(
                f"warmup_duration_s = {self.warmup_duration_s!r} must be >= 0 seconds")
        if not 0.0 <= self.exceed_ratio < 1.0:
            raise ValueError(f"exceed_ratio {self.exceed_ratio!r} is outside [0, 1)")
        if not 0.0 < self.relative_width < 1.0:
            raise ValueError(f"relative_width {self.relative_width!r} is outside (0, 1)")
        if not self.near_factor >= 1.0:
            raise ValueError(f"near_factor {self.near_factor!r} must be >= 1")
        for name in ("repeat_near_threshold", "mrr_repeats", "max_trials"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} = {value!r} must be an integer >= 1")
        for name in ("validation_trials", "preceding_phases"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 0):
                raise ValueError(f"{name} = {value!r} must be an integer >= 0")
        if self.bisect_start not in BISECT_STARTS:
            raise ValueError(f"bisect_start {self.bisect_start!r} is not one of "
                             f"{', '.join(BISECT_STARTS)}")
        if self.mrr_rate_pps is not None and not self.mrr_rate_pps > 0:
            raise ValueError(f"mrr_rate_pps = {self.mrr_rate_pps!r} must be > 0 pps")


@dataclass(frozen=True)
class GoalResult:
    """The answer for one loss threshold.

    ``status`` is ``"ok"`` (bounds found), ``"below_min"`` (loss above the
    threshold even at the minimum rate: the PDR is below ``min_rate_pps``),
    ``"at_max"`` (no loss above threshold at the maximum rate: the SUT keeps up
    with everything tried; the bound is the generator's or the configured max,
    flagged), ``"generator_limited"`` (the generator could not offer the rates
    needed: ``upper_bound_pps`` is where the generator failed, not where the
    SUT lost packets, so there is no reported value), ``"mrr"`` (a max receive
    rate: ``lower_bound_pps`` and ``conditional_throughput_pps`` are the median
    received rate at the offered rate, ``upper_bound_pps`` is None) or
    ``"undecided"`` (not enough usable trials).
    """

    threshold_pct: float
    lower_bound_pps: float | None
    upper_bound_pps: float | None
    status: str = "ok"
    conditional_throughput_pps: float | None = None
    note: str = ""
    estimate_pps: float | None = None
    """Rate where the share of bad trial time crosses the exceed ratio, fitted to
    every usable trial of the search (:mod:`srperf.search.estimate`); None when
    the trials do not straddle the answer.  A point estimate, not a bound."""
    estimate_low_pps: float | None = None
    """Lower end of the estimate's 95 % profile-likelihood interval (None: open)."""
    estimate_high_pps: float | None = None
    """Upper end of the estimate's 95 % interval (None: open)."""

    @property
    def width_pps(self) -> float | None:
        if self.lower_bound_pps is None or self.upper_bound_pps is None:
            return None
        return self.upper_bound_pps - self.lower_bound_pps

    @property
    def value_pps(self) -> float | None:
        """The reported rate: the lower bound (the highest rate known to pass),
        or the median received rate for ``"mrr"``; None for other statuses."""
        return self.lower_bound_pps if self.status in ("ok", "at_max", "mrr") else None


@dataclass(frozen=True)
class LatencyPoint:
    """One latency trial after a search: the load, as a fraction of the PDR, and the
    figures (:class:`srperf.drivers.latency.LatencyStats` as a dict, us) or why none."""

    fraction: float
    rate_pps: float
    latency: dict[str, Any] | None
    note: str = ""
    calibration: dict[str, Any] | None = None
    """The generator's own latency at the same rate over a plain veth pair (the same
    dict shape as ``latency``), when it was measured."""


@dataclass
class SearchResult:
    """What a search returns: one GoalResult per threshold and every trial."""

    algorithm: str
    goals: list[GoalResult]
    trials: list[TrialResult] = field(default_factory=list)
    wall_s: float = 0.0
    note: str = ""
    latency: list["LatencyPoint"] = field(default_factory=list)
    """Latency measured after the search, one point per fraction of the PDR."""
    profile: Any = None
    """The profile trial after the search (:class:`srperf.profile.model.Profile`), or
    None when none was asked for."""
    pm_loss: Any = None
    """A loss-monitoring case's loss trial after the search
    (:class:`srperf.pm.step.LossTrial`), or None."""

    @property
    def trial_seconds(self) -> float:
        """Sum of intended durations of every trial, warm-up included, seconds (of a
        trial stopped early, the part that ran)."""
        return sum(t.duration_s for t in self.trials)

    @property
    def n_trials(self) -> int:
        return len(self.trials)

    @property
    def generator_limited_trials(self) -> int:
        return sum(1 for t in self.trials if t.generator_limited)

    @property
    def unusable_trials(self) -> int:
        """Trials excluded from decisions (generator-limited or inconsistent counters)."""
        return sum(1 for t in self.trials if not t.usable)

    def goal(self, threshold_pct: float) -> GoalResult:
        for g in self.goals:
            if g.threshold_pct == threshold_pct:
                return g
        raise KeyError(threshold_pct)


class SearchAlgorithm(abc.ABC):
    """One way to find the highest rate whose loss stays under each threshold."""

    name: str = "abstract"

    def __init__(self, settings: SearchSettings) -> None:
        settings.validate()
        self.settings = settings

    @abc.abstractmethod
    def run(self, measure: Measure) -> SearchResult:
        """Run the search, calling ``measure`` for every trial."""
