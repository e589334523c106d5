"""TimerQueue: keyed deadlines, replacement coalesces, pop order is deadline order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fakenrt.controller.timers import TimerQueue


def test_setting_a_key_again_replaces_its_deadline() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.set("a", 5.0)
    q.set("a", 1.0)
    assert len(q) == 1
    assert q.next_due() == 1.0
    assert q.pop_due(1.0) == ["a"]
    assert q.pop_due(10.0) == []


def test_set_if_earlier_keeps_the_earlier_deadline() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.set_if_earlier("a", 3.0)
    q.set_if_earlier("a", 7.0)
    assert q.due_at("a") == 3.0
    q.set_if_earlier("a", 2.0)
    assert q.due_at("a") == 2.0


def test_cancel_and_not_yet_due() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.set("a", 1.0)
    q.set("b", 2.0)
    q.cancel("a")
    assert q.pop_due(1.5) == []
    assert q.next_due() == 2.0
    assert "b" in q and "a" not in q


@given(st.lists(st.tuples(st.integers(0, 20), st.floats(0, 100)), max_size=60), st.floats(0, 100))
def test_pop_due_returns_each_live_key_once_in_deadline_order(
    sets: list[tuple[int, float]], now: float
) -> None:
    q: TimerQueue[int] = TimerQueue()
    final: dict[int, float] = {}
    for key, due in sets:
        q.set(key, due)
        final[key] = due
    fired = q.pop_due(now)
    assert sorted(fired) == sorted(k for k, d in final.items() if d <= now)
    assert [final[k] for k in fired] == sorted(final[k] for k in fired)
    assert len(q) == len(final) - len(fired)
