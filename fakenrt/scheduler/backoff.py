"""Per-pod retry backoff for pods that fit nowhere. Pure; time comes from the caller."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Exponential backoff: after the n-th failure a pod waits ``initial * 2**(n-1)``
    seconds, at most ``maximum`` (kube-scheduler's defaults: 1 s, 10 s)."""

    initial: float = 1.0
    maximum: float = 10.0
    _failures: dict[str, int] = field(default_factory=dict)
    _next: dict[str, float] = field(default_factory=dict)

    def ready(self, key: str, now: float) -> bool:
        return now >= self._next.get(key, float("-inf"))

    def failed(self, key: str, now: float) -> float:
        """Record a failure; return the delay before the next attempt."""
        n = self._failures.get(key, 0) + 1
        self._failures[key] = n
        # The exponent is capped: 2**1024 does not fit a float (a pod failing for hours).
        delay: float = min(self.initial * float(2 ** min(n - 1, 64)), self.maximum)
        self._next[key] = now + delay
        return delay

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)
        self._next.pop(key, None)

    def keep_only(self, keys: set[str]) -> None:
        """Drop state of pods no longer pending."""
        for key in [k for k in self._failures if k not in keys]:
            self.forget(key)
