"""The NRT lag of one node: when a change to the node's state becomes visible. Pure.

Every change (an admission, a release) enters the pipeline with the moment it may first
be published: ``now + delay + jitter`` (jitter uniform in ``[0, jitter]``, drawn from the
node's own random source), kept non-decreasing so changes become visible in the order
they happened. A publication at time ``t`` shows the newest change whose moment has come;
every change due by then is folded into that one write (coalescing). A delay of 0 makes
every change visible at once (jitter is then not drawn).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Generic, TypeVar

S = TypeVar("S")


class LagPipeline(Generic[S]):
    """Pending snapshots of one node, in the order of the changes that produced them."""

    def __init__(self, *, delay: float, jitter: float, rng: random.Random) -> None:
        if delay < 0 or jitter < 0:
            raise ValueError("NRT delay and jitter must not be negative")
        self._delay = delay
        self._jitter = jitter
        self._rng = rng
        self._pending: deque[tuple[float, S]] = deque()
        self._last_visible = float("-inf")

    def push(self, now: float, snapshot: S) -> float:
        """Record a change made at ``now``; returns when it may be published."""
        if self._delay == 0:
            visible = now
        else:
            extra = self._rng.uniform(0.0, self._jitter) if self._jitter else 0.0
            visible = now + self._delay + extra
        visible = max(visible, self._last_visible)
        self._last_visible = visible
        self._pending.append((visible, snapshot))
        return visible

    def next_due(self) -> float | None:
        return self._pending[0][0] if self._pending else None

    def pop_due(self, now: float) -> S | None:
        """The newest snapshot whose time has come (dropping all older ones), or None."""
        newest: S | None = None
        while self._pending and self._pending[0][0] <= now:
            newest = self._pending.popleft()[1]
        return newest

    def clear(self) -> None:
        self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)
