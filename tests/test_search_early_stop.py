"""``early_stop``: a bisect/multi trial may end once its certain losses decide it.

The claim to test: the search takes exactly the course it takes with whole trials
(the same rates, verdicts, repeats and bounds) and spends fewer trial-seconds.
The model SUT refuses frames (the losses a generator counts during a trial), and
may refuse a burst at the start of a trial, so that the part of a trial that ran
before a stop can look worse than the whole trial.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from srperf.drivers.base import TrialResult
from srperf.search.base import SearchSettings
from srperf.search.registry import create
from srperf.search.base import exceeds
from srperf.search.common import NDR_NEAR_LOSS, stop_lost


class RefusingSut:
    """Each trial: capacity ``capacity_pps`` x (1 + ``jitter`` x N(0, 1)); a frame
    above capacity is refused, spread evenly over the trial; with probability
    ``burst_p`` the trial also starts with a burst of refusals (``burst_share``
    of its frames).  Random draws happen once per trial, in call order."""

    def __init__(self, seed: int, capacity_pps: float = 800_000.0, jitter: float = 0.01,
                 burst_p: float = 0.3, burst_share: float = 0.003) -> None:
        self.rng = random.Random(seed)
        self.capacity_pps = capacity_pps
        self.jitter = jitter
        self.burst_p = burst_p
        self.burst_share = burst_share
        self.asked: list[int | None] = []

    def __call__(self, rate: float, duration: float, *,
                 stop_lost: int | None = None) -> TrialResult:
        self.asked.append(stop_lost)
        capacity = self.capacity_pps * (1.0 + self.jitter * self.rng.gauss(0.0, 1.0))
        burst_on = self.rng.random() < self.burst_p
        planned = round(rate * duration)
        burst = round(self.burst_share * planned) if burst_on else 0
        share = max(0.0, 1.0 - capacity / rate)

        def refused_after(n: int) -> int:
            """Refusals among the first n frames."""
            return min(n, burst) + math.floor(share * max(0, n - burst))

        ran = planned
        if stop_lost is not None and refused_after(planned) > stop_lost:
            ran = self._first_over(refused_after, stop_lost, planned)
        refused = refused_after(ran)
        extra = {}
        if ran < planned:
            extra["stopped"] = {"planned_s": duration, "planned_frames": planned,
                                "stop_lost": stop_lost}
        return TrialResult(rate, ran / rate, ran, ran - refused, refused, ran - refused,
                           ran / rate, extra=extra)

    @staticmethod
    def _first_over(refused_after, bound: int, planned: int) -> int:  # type: ignore[no-untyped-def]
        """Smallest n with refused_after(n) > bound (it grows with n)."""
        lo, hi = 0, planned
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if refused_after(mid) > bound:
                hi = mid
            else:
                lo = mid
        return hi


SETTINGS = SearchSettings(thresholds_pct=(0.5,), min_rate_pps=50_000,
                          max_rate_pps=1_500_000, accuracy_pps=5_000, trial_duration_s=0.1)


def course(result) -> list[tuple[float, tuple[bool, ...]]]:  # type: ignore[no-untyped-def]
    """Every trial's rate and verdict at each threshold."""
    return [(t.rate_pps, tuple(exceeds(t, th) for th in result_thresholds(result)))
            for t in result.trials]


def result_thresholds(result) -> tuple[float, ...]:  # type: ignore[no-untyped-def]
    return tuple(g.threshold_pct for g in result.goals)


@pytest.mark.parametrize("algorithm,thresholds,repeats", [
    ("bisect", (0.5,), 3), ("bisect", (0.5,), 1), ("bisect", (0.0,), 3),
    ("multi", (0.0, 0.5), 3), ("multi", (0.1, 2.0), 1)])
@pytest.mark.parametrize("seed", range(6))
def test_the_search_takes_the_course_of_whole_trials(algorithm: str, thresholds: tuple,
                                                      repeats: int, seed: int) -> None:
    settings = dataclasses.replace(SETTINGS, thresholds_pct=thresholds,
                                   repeat_near_threshold=repeats)
    whole_sut, stop_sut = RefusingSut(seed), RefusingSut(seed)
    whole = create(algorithm, settings).run(whole_sut)
    stopped = create(algorithm, dataclasses.replace(settings, early_stop=True)).run(stop_sut)
    assert set(whole_sut.asked) == {None} and None not in stop_sut.asked
    assert course(stopped) == course(whole)
    assert [(g.lower_bound_pps, g.upper_bound_pps, g.status) for g in stopped.goals] == \
        [(g.lower_bound_pps, g.upper_bound_pps, g.status) for g in whole.goals]
    n_stopped = sum(t.stopped_early for t in stopped.trials)
    assert n_stopped > 0
    assert stopped.trial_seconds < whole.trial_seconds
    for t in stopped.trials:
        if t.stopped_early:
            assert t.planned_duration_s == settings.trial_duration_s
            assert t.duration_s < t.planned_duration_s and t.refused > t.extra["stopped"][
                "stop_lost"]


def test_a_bound_that_ignores_near_would_change_the_course() -> None:
    """The test above can fail: stopping at the plain threshold (no near margin) lets
    a trial whose burst came first look far from the threshold, so the rate is not
    measured again where the whole trial would have been repeated."""
    import srperf.search.common as common

    def plain(intended, thresholds_pct, near_factor, repeats, near):  # type: ignore[no-untyped-def]
        return math.floor(max(thresholds_pct) / 100.0 * intended)

    settings = dataclasses.replace(SETTINGS, repeat_near_threshold=3)
    differs = 0
    for seed in range(6):
        whole = create("bisect", settings).run(RefusingSut(seed, burst_share=0.008))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(common, "stop_lost", plain)
            stopped = create("bisect", dataclasses.replace(settings, early_stop=True)).run(
                RefusingSut(seed, burst_share=0.008))
        differs += course(stopped) != course(whole)
    assert differs > 0


def test_stop_lost_bounds() -> None:
    # one threshold, repeats: beyond near (4 x 0.5 % of 200,000 = 4,000)
    assert stop_lost(200_000, (0.5,), 4.0, 3, set()) == 4_000
    # once the rate is being repeated for that threshold, failing it is enough
    assert stop_lost(200_000, (0.5,), 4.0, 3, {0.5}) == 1_000
    # one trial per rate: failing is enough
    assert stop_lost(200_000, (0.5,), 4.0, 1, set()) == 1_000
    # NDR: near is an absolute loss ratio
    assert stop_lost(1_000_000, (0.0,), 4.0, 3, set()) == round(4 * NDR_NEAR_LOSS * 1e6)
    assert stop_lost(1_000_000, (0.0,), 4.0, 1, set()) == 0
    # several thresholds: the largest share of them all
    assert stop_lost(100_000, (0.0, 0.5), 4.0, 3, {0.5}) == 500
    assert stop_lost(100_000, (0.0, 0.5), 4.0, 3, set()) == 2_000


def test_searches_without_early_stop_never_pass_stop_lost() -> None:
    """A measure callable of two arguments still serves every search by default."""
    def measure(rate: float, duration: float) -> TrialResult:
        n = round(rate * duration)
        lost = round(n * max(0.0, 1.0 - 700_000 / rate))
        return TrialResult(rate, duration, n, n - lost, lost, n - lost, duration)

    for algorithm in ("bisect", "multi"):
        result = create(algorithm, SETTINGS).run(measure)
        assert result.goals[0].status == "ok"


def test_the_experiment_key_reaches_the_search_and_the_generator() -> None:
    """search.early_stop (on unless set) becomes SearchSettings.early_stop, and a
    session's trial hands the bound to the generator."""
    from srperf.config.loader import load_experiment, load_testbed
    from srperf.measure.orchestrator import search_settings
    from srperf.resources import experiments_dir, testbed_dir
    from srperf.measure.session import MeasurementSession

    tb = load_testbed(testbed_dir() / "virtual.yaml")
    quick = experiments_dir() / "quick.yaml"
    assert search_settings(load_experiment(quick), tb).early_stop
    off = load_experiment(quick, ["search.early_stop=false"])
    assert not search_settings(off, tb).early_stop

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple[float, float, int | None]] = []

        def trial(self, rate_pps: float, duration_s: float, *,
                  stop_lost: int | None = None) -> TrialResult:
            self.calls.append((rate_pps, duration_s, stop_lost))
            n = round(rate_pps * duration_s)
            return TrialResult(rate_pps, duration_s, n, n, 0, n, duration_s)

    gen = Recorder()
    MeasurementSession._trial(gen, "end", 1000.0, 1.0, 7)  # type: ignore[arg-type]
    MeasurementSession._trial(gen, "end", 1000.0, 1.0)      # type: ignore[arg-type]
    assert gen.calls == [(1000.0, 1.0, 7), (1000.0, 1.0, None)]
