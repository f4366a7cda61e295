"""SearchSettings validation, the algorithm registry and the shared trial helpers."""

from __future__ import annotations

import dataclasses

import pytest

from srperf.drivers.base import TrialResult
from srperf.search.registry import ALGORITHMS, DEFAULT_ALGORITHM, create
from srperf.search.base import SearchSettings
from srperf.search.base import GoalResult
from srperf.search.common import TrialLog, exceeds, is_near, measure_rate


def trial(rate: float, lost: int, duration: float = 1.0, usable: bool = True,
          intended: int = 100_000) -> TrialResult:
    return TrialResult(rate_pps=rate, duration_s=duration, intended=intended, sent=intended,
                       refused=0, received=intended - lost, elapsed_s=duration,
                       generator_limited=not usable)


@pytest.mark.parametrize("changes, message", [
    (dict(min_rate_pps=2e6), "min rate 2000000.0 pps must be below max rate"),
    (dict(min_rate_pps=1e6, max_rate_pps=1e6), "must be below max rate"),
    (dict(min_rate_pps=0.0), "min rate 0.0 pps must be > 0"),
    (dict(trial_duration_s=0.0), "trial_duration_s = 0.0 must be > 0 seconds"),
    (dict(initial_trial_duration_s=-1.0), "initial_trial_duration_s = -1.0 must be > 0"),
    (dict(duration_sum_s=0.0), "duration_sum_s = 0.0 must be > 0"),
    (dict(warmup_duration_s=-1.0), "warmup_duration_s = -1.0 must be >= 0"),
    (dict(thresholds_pct=(100.0,)), r"loss threshold 100.0 % is outside \[0, 100\)"),
    (dict(thresholds_pct=(-0.1,)), r"loss threshold -0.1 % is outside"),
    (dict(thresholds_pct=(float("nan"),)), "outside"),
    (dict(thresholds_pct=()), "at least one loss threshold"),
    (dict(thresholds_pct=(0.5, 0.5)), "duplicates"),
    (dict(accuracy_pps=0.0), "accuracy 0.0 pps must be > 0"),
    (dict(exceed_ratio=1.0), r"exceed_ratio 1.0 is outside \[0, 1\)"),
    (dict(relative_width=0.0), "relative_width 0.0 is outside"),
    (dict(repeat_near_threshold=0), "repeat_near_threshold = 0 must be an integer >= 1"),
    (dict(mrr_repeats=0), "mrr_repeats = 0"),
    (dict(validation_trials=-1), "validation_trials = -1"),
    (dict(mrr_rate_pps=0.0), "mrr_rate_pps = 0.0 must be > 0"),
    (dict(bisect_start="middle"), "bisect_start 'middle' is not one of range, mrr, short"),
])
def test_impossible_settings_are_refused_with_a_precise_message(changes: dict, message: str
                                                                 ) -> None:
    settings = dataclasses.replace(SearchSettings(), **changes)
    with pytest.raises(ValueError, match=message):
        settings.validate()
    for name in ALGORITHMS:
        with pytest.raises(ValueError):
            create(name, settings)


def test_defaults_are_valid_and_registry_is_complete() -> None:
    SearchSettings().validate()
    assert set(ALGORITHMS) == {"bisect", "multi", "mlr", "mlrsearch", "mrr", "lossfit"}
    assert DEFAULT_ALGORITHM == "mlr"
    for name, cls in ALGORITHMS.items():
        algo = create(name, SearchSettings())
        assert isinstance(algo, cls) and algo.name == name


def test_unknown_algorithm_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown search algorithm 'fast'.*bisect.*mlr"):
        create("fast", SearchSettings())


def test_goal_value_by_status() -> None:
    assert GoalResult(0.5, 10.0, 11.0).value_pps == 10.0
    assert GoalResult(0.5, 10.0, None, "at_max").value_pps == 10.0
    assert GoalResult(0.5, 9.0, None, "mrr", 9.0).value_pps == 9.0
    for status in ("below_min", "generator_limited", "undecided"):
        assert GoalResult(0.5, 10.0, 11.0, status).value_pps is None


def test_exceeds_and_near() -> None:
    assert not exceeds(trial(1, 500), 0.5) and exceeds(trial(1, 501), 0.5)
    assert exceeds(trial(1, 1), 0.0) and not exceeds(trial(1, 0), 0.0)
    # near = loss within a factor 4 of the threshold; no loss or far more is not near
    assert is_near(trial(1, 125), 0.5, 4.0) and is_near(trial(1, 2000), 0.5, 4.0)
    assert not is_near(trial(1, 0), 0.5, 4.0) and not is_near(trial(1, 2001), 0.5, 4.0)
    assert not is_near(trial(1, 124), 0.5, 4.0)
    # NDR: a handful of lost packets is near, none or many is not
    assert is_near(trial(1, 3), 0.0, 4.0) and not is_near(trial(1, 0), 0.0, 4.0)
    assert not is_near(trial(1, 100), 0.0, 4.0)


class Scripted:
    """A measure callable returning prepared trials in order."""

    def __init__(self, losses: list[int | None]) -> None:
        self.losses = list(losses)
        self.calls = 0

    def __call__(self, rate: float, duration: float) -> TrialResult:
        lost = self.losses[self.calls]
        self.calls += 1
        return trial(rate, 0 if lost is None else lost, duration, usable=lost is not None)


def run_rate(losses: list[int | None], repeats: int, thresholds=(0.5,)):
    measure = Scripted(losses)
    log = TrialLog(measure, SearchSettings(), "test")
    verdict = measure_rate(log, 1000.0, 1.0, thresholds, repeats, 4.0)
    return verdict, measure.calls


def test_one_trial_decides_far_from_the_threshold() -> None:
    verdict, calls = run_rate([0, 0, 0], repeats=3)
    assert calls == 1 and verdict.passed[0.5] is True
    verdict, calls = run_rate([50_000], repeats=3)
    assert calls == 1 and verdict.passed[0.5] is False


def test_near_threshold_repeats_and_majority_decides() -> None:
    verdict, calls = run_rate([600, 100, 300], repeats=3)  # bad(near), good, good
    assert calls == 3 and verdict.passed[0.5] is True
    verdict, calls = run_rate([600, 700, 0], repeats=3)  # two bad: majority reached
    assert calls == 2 and verdict.passed[0.5] is False
    verdict, calls = run_rate([400, 300, 0], repeats=3)  # two good near: majority reached
    assert calls == 2 and verdict.passed[0.5] is True
    verdict, calls = run_rate([600, 100, 700, 0], repeats=4)  # 2 bad of 4: at best a tie
    assert calls == 3 and verdict.passed[0.5] is False
    verdict, calls = run_rate([200, 600, 300, 700], repeats=4)  # 2-2 tie fails
    assert calls == 4 and verdict.passed[0.5] is False


def test_repeat_one_is_one_trial_per_rate() -> None:
    verdict, calls = run_rate([600, 0, 0], repeats=1)
    assert calls == 1 and verdict.passed[0.5] is False


def test_unusable_trials_are_retried_then_reported() -> None:
    verdict, calls = run_rate([None, 0], repeats=1)
    assert calls == 2 and verdict.passed[0.5] is True and not verdict.limited
    verdict, calls = run_rate([None, None, None, 0], repeats=1)
    assert calls == 3 and verdict.passed[0.5] is None and verdict.limited
