"""Statistics of repetitions against hand-computed values (srperf.results.stats)."""

from __future__ import annotations

import math

import pytest

from srperf.results.stats import (bootstrap_ratio, describe, t95, t_cdf, t_quantile,
                                  welch_diff)


def test_student_t_against_printed_tables() -> None:
    # Two-sided 95 % quantiles as printed in statistics textbooks.
    for df, q in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (10, 2.2281), (30, 2.0423),
                  (120, 1.9799)):
        assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-4)
    assert t_cdf(0.0, 4) == pytest.approx(0.5)
    assert t_cdf(-2.0, 5) == pytest.approx(0.050970, abs=1e-6)   # P(T5 < -2)
    assert t_quantile(0.025, 3) == pytest.approx(-3.1824, abs=1e-4)
    assert t95(3) == pytest.approx(4.3027, abs=1e-4) and math.isnan(t95(1))


def test_describe_by_hand() -> None:
    # 900, 1000, 1100 kpps: mean 1000, deviations -100, 0, 100, sample variance
    # 20000 / 2 = 10000, stdev 100, CV 10 %, CI95 4.3027 * 100 / sqrt(3) = 248.41.
    d = describe([900.0, 1000.0, 1100.0])
    assert (d.n, d.mean, d.std, d.minimum, d.maximum) == (3, 1000.0, 100.0, 900.0, 1100.0)
    assert d.cv_pct == pytest.approx(10.0)
    assert d.ci95 == pytest.approx(248.414, abs=1e-3)
    assert d.ci95_pct == pytest.approx(24.8414, abs=1e-4)


def test_one_repetition_has_no_spread_and_nan_is_dropped() -> None:
    d = describe([500.0, math.nan])
    assert d.n == 1 and d.mean == 500.0
    assert math.isnan(d.std) and math.isnan(d.cv_pct) and math.isnan(d.ci95)
    assert describe([]).n == 0 and math.isnan(describe([]).mean)


def test_welch_by_hand() -> None:
    # baseline 100, 102, 98: mean 100, var 4; current 90, 91, 89: mean 90, var 1.
    # se = sqrt(4/3 + 1/3) = 1.29099; Welch df = (5/3)^2 / ((4/3)^2/2 + (1/3)^2/2) = 2.9412;
    # t(0.975, 2.9412) = 3.2188 -> half-width 4.1554.
    d = welch_diff([100.0, 102.0, 98.0], [90.0, 91.0, 89.0])
    assert d.delta == pytest.approx(-10.0) and d.delta_pct == pytest.approx(-10.0)
    assert t_quantile(0.975, 2.9412) == pytest.approx(3.2188, abs=2e-4)
    assert d.low == pytest.approx(-14.1554, abs=2e-3)
    assert d.high == pytest.approx(-5.8446, abs=2e-3)
    assert d.low_pct == pytest.approx(d.low)  # baseline mean 100: kpps change = % change


def test_welch_without_spread_or_with_one_repetition() -> None:
    same = welch_diff([100.0, 100.0], [95.0, 95.0])
    assert (same.low, same.high) == (-5.0, -5.0)
    one = welch_diff([100.0], [95.0, 96.0])
    assert math.isnan(one.low) and one.delta == pytest.approx(-4.5)


def test_bootstrap_is_seeded_and_brackets_the_change() -> None:
    base = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    cur = [900.0, 905.0, 895.0, 910.0, 890.0]
    a, b = bootstrap_ratio(base, cur, seed=3), bootstrap_ratio(base, cur, seed=3)
    assert a == b
    assert a.delta_pct == pytest.approx(-10.0)
    assert a.low_pct < -10.0 < a.high_pct
    # A resampled mean lies within the samples' range: the ratio cannot leave
    # [min(cur)/max(base), max(cur)/min(base)] - 1.
    assert a.low_pct >= 100 * (890 / 1010 - 1) and a.high_pct <= 100 * (910 / 990 - 1)
