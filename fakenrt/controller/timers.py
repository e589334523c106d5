"""A timer queue keyed on an injected clock: the controller's only notion of "later".

Pure: no threads, no sleeping. Each timer has a key; setting a key again replaces its
timer, so a key has at most one pending deadline (this is what coalesces work per node).
The owner asks :meth:`TimerQueue.next_due` how long it may wait and :meth:`pop_due` for
the keys whose time has come, in deadline order (ties in the order they were set).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class TimerQueue(Generic[K]):
    """Deadlines (float seconds on the owner's clock) per key; lazy deletion in a heap."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, K]] = []
        self._due: dict[K, tuple[float, int]] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def due_at(self, key: K) -> float | None:
        """The pending deadline of ``key``, or None."""
        entry = self._due.get(key)
        return entry[0] if entry else None

    def set(self, key: K, due: float) -> None:
        """Fire ``key`` at ``due``, replacing any earlier or later deadline it had."""
        order = next(self._counter)
        self._due[key] = (due, order)
        heapq.heappush(self._heap, (due, order, key))

    def set_if_earlier(self, key: K, due: float) -> None:
        """Fire ``key`` at ``due`` unless it is already set to fire no later than that."""
        current = self._due.get(key)
        if current is None or due < current[0]:
            self.set(key, due)

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)

    def _drop_stale(self) -> None:
        while self._heap:
            due, order, key = self._heap[0]
            if self._due.get(key) == (due, order):
                return
            heapq.heappop(self._heap)

    def next_due(self) -> float | None:
        """The earliest pending deadline, or None when nothing is pending."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> list[K]:
        """Remove and return every key whose deadline is <= ``now``, earliest first."""
        fired: list[K] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return fired
            _, _, key = heapq.heappop(self._heap)
            del self._due[key]
            fired.append(key)
