"""Means over seeds and their 95% t-intervals: the t quantiles against the published
table, and the interval's meaning (coverage over repeated draws)."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.simulate.stats import estimate, t_quantile

#: t(0.975, df) from any statistics table.
TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 19: 2.093, 29: 2.045}


@pytest.mark.parametrize(("df", "t"), TABLE.items())
def test_t_quantiles_match_the_table(df: int, t: float) -> None:
    assert t_quantile(df) == pytest.approx(t, abs=5e-4)


def test_t_tends_to_the_normal_quantile() -> None:
    assert t_quantile(10_000) == pytest.approx(1.95996, abs=1e-3)
    assert t_quantile(4, level=0.90) == pytest.approx(2.132, abs=5e-4)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_the_interval_is_the_mean_plus_minus_t_times_the_standard_error(
    values: list[float],
) -> None:
    e = estimate(values)
    assert e.low is not None and e.high is not None
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    assert e.mean == pytest.approx(statistics.fmean(values))
    assert e.high - e.mean == pytest.approx(half, abs=1e-6)
    assert e.mean - e.low == pytest.approx(half, abs=1e-6)


def test_one_seed_has_no_interval() -> None:
    e = estimate([3.0])
    assert (e.mean, e.low, e.high) == (3.0, None, None)


def test_about_95_percent_of_intervals_hold_the_true_mean() -> None:
    rng = random.Random(7)
    hits = 0
    for _ in range(2000):
        e = estimate([rng.gauss(10.0, 3.0) for _ in range(5)])
        assert e.low is not None and e.high is not None
        hits += e.low <= 10.0 <= e.high
    assert 0.93 <= hits / 2000 <= 0.97
