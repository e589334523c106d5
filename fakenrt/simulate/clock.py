"""Simulated time: a clock and an ordered event queue. Pure.

Events at the same instant run in a fixed order of kinds (exporter observations, then
arrivals, then the scheduling cycle, then samples), ties in the order they were added, so
a run is reproducible event for event.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Generic, TypeVar

P = TypeVar("P")

EXPORT, ARRIVAL, CYCLE, SAMPLE = 1, 2, 3, 4


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


class EventQueue(Generic[P]):
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, P]] = []
        self._order = itertools.count()

    def push(self, at: float, kind: int, payload: P) -> None:
        heapq.heappush(self._heap, (at, kind, next(self._order), payload))

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[float, int, P]:
        at, kind, _, payload = heapq.heappop(self._heap)
        return at, kind, payload

    def __len__(self) -> int:
        return len(self._heap)
