"""The smallest step the trend sees (srperf.results.trend_power): computed from the
detector itself at the noise of a test's history.  Synthetic histories (fast)."""

from __future__ import annotations

import random

import pytest

from srperf.results import trend_power as tp
from srperf.results.trend import TrendSettings, analyse
from srperf.results.trend_samples import Sample, TestKey

KEY = TestKey("tb", "linux", "end 64B PDR@0.5%", "kpps", 1)


def history(cv: float, nights: int = 30, reps: int = 3, seed: int = 1,
            key: TestKey = KEY) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(nights):
        night = 1000.0 * (1 + rng.gauss(0, cv))
        out.append(Sample(f"r{i:03d}", f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00",
                          tuple(night * (1 + rng.gauss(0, cv / 2)) for _ in range(reps))))
    return out


def test_the_step_found_is_red_and_a_smaller_one_is_not() -> None:
    t = analyse(KEY, history(0.03), TrendSettings())
    v = tp.visibility(t)
    assert v.known and v.own_night_pct is not None and v.within_pct is not None
    assert v.within_pct <= v.own_night_pct
    cur = t.current
    values = [list(p.values) for p in t.points]
    means = [sum(p.values) / len(p.values) for p in t.points[cur.first:cur.last + 1]]
    import statistics

    mean, sd = statistics.fmean(means), statistics.stdev(means)

    def red(step: float, k: int) -> bool:
        level = mean * (1 - step / 100)
        nights = [tp._stepped(values[-1], level + sd * z) for z in tp.night_offsets(k)]
        return tp.red_within(values, nights, 1, t.settings)

    assert red(v.own_night_pct, 1) and not red(v.own_night_pct - 2 * tp.RESOLUTION_PCT, 1)
    assert red(v.within_pct, v.k) and not red(v.within_pct - 2 * tp.RESOLUTION_PCT, v.k)


def test_noisier_history_sees_only_larger_steps() -> None:
    quiet = tp.visibility(analyse(KEY, history(0.01), TrendSettings()))
    noisy = tp.visibility(analyse(KEY, history(0.08), TrendSettings()))
    assert quiet.cv_pct < noisy.cv_pct
    assert quiet.own_night_pct < noisy.own_night_pct   # measured-ok: synthetic, seeded
    assert "not seen" in noisy.describe() and "CV" in noisy.describe()


def test_stepped_nights_are_spread_and_their_mean_is_on_the_better_side() -> None:
    import math

    assert tp.night_offsets(1) == [pytest.approx(tp.Z_80)]
    z3 = tp.night_offsets(3)
    assert z3 == sorted(z3, reverse=True) and len(set(z3)) == 3
    assert sum(z3) / 3 == pytest.approx(tp.Z_80 / math.sqrt(3))


def test_k_follows_the_detectors_confirm_rule() -> None:
    v = analyse(KEY, history(0.03), TrendSettings(confirm=4))
    v = tp.visibility(v)
    assert v.k == 5


def test_a_time_figure_steps_upwards() -> None:
    key = TestKey("tb", "linux", "end 64B ns/pkt", "ns", -1)
    v = analyse(key, history(0.03, key=key), TrendSettings())
    v = tp.visibility(v)
    assert v.known and v.own_night_pct is not None


@pytest.mark.parametrize("samples, why", [
    (history(0.03, nights=2), "fewer than 3"),
    ([Sample(f"r{i}", f"2026-01-0{i + 1}", (5.0, 5.0)) for i in range(5)], "identical"),
])
def test_no_noise_seen_is_not_enough_evidence(samples: list[Sample], why: str) -> None:
    v = analyse(KEY, samples, TrendSettings())
    v = tp.visibility(v)
    assert not v.known and why in v.reason and v.short() == "n/a"
    assert "not known" in v.describe()


def test_the_trend_table_has_the_column() -> None:
    from srperf.results.trend import format_table

    t = analyse(KEY, history(0.03), TrendSettings())
    text = format_table([t], tp.visibility)
    head, row = text.splitlines()[:2]
    assert "step seen 1/3 nights" in head
    assert tp.visibility(t).short() in row
    assert "step seen" not in format_table([t])   # without it, the table as before
