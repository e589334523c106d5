"""The real-kubelet helpers' wait: a timeout names what the probe last saw."""

from __future__ import annotations

import pytest

from tests.kind.cluster import KindError
from tests.realnode.realkubelet import Waiting, wait_for


def test_a_value_ends_the_wait_and_waiting_does_not() -> None:
    answers: list[int | Waiting | None] = [Waiting("not yet"), None, 7]
    assert wait_for("seven", lambda: answers.pop(0), timeout=30) == 7
    assert answers == []


def test_a_timeout_names_what_the_probe_last_saw() -> None:
    seen = iter(["Ready=False", "Ready=True, cpu 4"])
    with pytest.raises(KindError, match=r"waiting for the node; last seen: Ready=True, cpu 4$"):
        wait_for("the node", lambda: Waiting(next(seen, "Ready=True, cpu 4")), timeout=0.3)


def test_a_timeout_without_anything_seen_says_only_what_it_waited_for() -> None:
    with pytest.raises(KindError, match=r"^timed out after 0 s waiting for the socket$"):
        wait_for("the socket", lambda: None, timeout=0)
