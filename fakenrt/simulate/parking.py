"""Pods parked while their shape fits nowhere, in batches by next attempt. Pure.

A pending pod retried at the backoff's longest delay whose shape fits nowhere is *parked*
(:mod:`fakenrt.simulate.engine`): its attempts are counted in bulk with the other pods
due at the same moment, as long as their shapes still fit nowhere when they come up. A
:class:`Batch` holds every pod parked for one moment, by shape; a batch whose pods all
failed again moves on as a whole to their next attempt (one step per moment, not per pod
or shape), and remembers the books' version (``ClusterBooks.moves``) at which each of its
shapes was last known to fit nowhere, so that an attempt at a later moment with no node
moved since needs no check at all.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

R = TypeVar("R")


@dataclass(eq=False)
class Batch(Generic[R]):
    """The pods parked for their next attempt at ``next_try``, by shape (no shape is
    left without pods)."""

    next_try: float
    shapes: dict[str, list[R]] = field(default_factory=dict)
    #: The books' version when every shape here was last known to fit nowhere (None:
    #: not known).
    verified: int | None = None
    #: How many pods ``shapes`` holds, once counted (None: not counted since it changed;
    #: whoever changes ``shapes`` sets it to None).
    counted: int | None = None

    def size(self) -> int:
        if self.counted is None:
            self.counted = sum(map(len, self.shapes.values()))
        return self.counted


class ParkingLot(Generic[R]):
    """Every batch of parked pods, by next attempt."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Batch[R]]] = []
        self._batches: dict[float, Batch[R]] = {}
        self._sequence = 0

    def _add(self, batch: Batch[R]) -> None:
        self._batches[batch.next_try] = batch
        self._sequence += 1
        heapq.heappush(self._heap, (batch.next_try, self._sequence, batch))

    def park(self, records: Iterable[R], shape: str, next_try: float) -> None:
        """Park ``records`` (pods of ``shape``) for an attempt at ``next_try``."""
        batch = self._batches.get(next_try)
        if batch is None:
            batch = Batch(next_try)
            self._add(batch)
        batch.shapes.setdefault(shape, []).extend(records)
        batch.verified = batch.counted = None

    def repark(self, batch: Batch[R], next_try: float) -> None:
        """Move a batch that came due (its pods failed again) to ``next_try``."""
        if not batch.shapes:
            return
        kept = self._batches.get(next_try)
        if kept is None:
            batch.next_try = next_try
            self._add(batch)
            return
        for shape, members in batch.shapes.items():
            kept.shapes.setdefault(shape, []).extend(members)
        kept.counted = None
        if kept.verified != batch.verified:
            kept.verified = None

    def due(self, now: float) -> list[Batch[R]]:
        """Take out the batches due at ``now``, earliest first."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            _, _, batch = heapq.heappop(self._heap)
            del self._batches[batch.next_try]
            out.append(batch)
        return out

    def restore(self, batches: Iterable[Batch[R]]) -> None:
        """Put back batches taken out by :meth:`due` and not attempted."""
        for batch in batches:
            self._add(batch)

    def earliest(self) -> float | None:
        """The next attempt of a parked pod (None: no pod is parked)."""
        return self._heap[0][0] if self._heap else None
