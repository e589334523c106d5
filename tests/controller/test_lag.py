"""LagPipeline: a change is visible only after delay + jitter, in order, coalesced."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.controller.lag import LagPipeline


def test_delay_zero_is_immediate_and_draws_no_jitter() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    lag: LagPipeline[str] = LagPipeline(delay=0, jitter=5, rng=rng)
    assert lag.push(10.0, "s1") == 10.0
    assert lag.pop_due(10.0) == "s1"
    assert rng.getstate() == state


def test_nothing_before_the_delay_then_the_newest_due_snapshot() -> None:
    lag: LagPipeline[str] = LagPipeline(delay=2, jitter=0, rng=random.Random(0))
    lag.push(0.0, "a")
    lag.push(0.5, "b")
    lag.push(3.0, "c")
    assert lag.pop_due(1.99) is None
    assert lag.pop_due(2.6) == "b"  # a and b are folded into one publication
    assert lag.next_due() == 5.0
    assert lag.pop_due(5.0) == "c"
    assert len(lag) == 0


def test_same_seed_same_jitter() -> None:
    def run(seed: int) -> list[float]:
        lag: LagPipeline[int] = LagPipeline(delay=1, jitter=3, rng=random.Random(seed))
        return [lag.push(float(i), i) for i in range(20)]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_negative_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        LagPipeline(delay=-1, jitter=0, rng=random.Random(0))


@given(
    st.floats(0, 10),
    st.floats(0, 10),
    st.lists(st.floats(0, 100), min_size=1, max_size=40),
    st.integers(0, 2**32),
)
def test_every_change_waits_at_least_the_delay_and_visibility_is_monotone(
    delay: float, jitter: float, gaps: list[float], seed: int
) -> None:
    lag: LagPipeline[int] = LagPipeline(delay=delay, jitter=jitter, rng=random.Random(seed))
    now, previous = 0.0, float("-inf")
    for i, gap in enumerate(gaps):
        now += gap
        visible = lag.push(now, i)
        assert visible >= now + (delay if delay else 0)
        assert visible <= max(previous, now + delay + jitter)
        assert visible >= previous
        previous = visible
    assert lag.pop_due(previous) == len(gaps) - 1
