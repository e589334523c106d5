"""Liveness and readiness decisions (served by ``exporter.endpoints``).

``Health`` is fed by the reconcile loop: after every pass it records whether the kubelet
podresources API and the API server were reached. ``/readyz`` answers 200 only if both
were reached within the last ``window`` passes; ``/healthz`` answers 200 while the loop
keeps completing passes (a wedged loop fails the liveness probe).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable


class Health:
    def __init__(
        self,
        *,
        clock: Callable[[], float],
        window: int = 3,
        stall_after_s: float = 120.0,
    ) -> None:
        self._clock = clock
        self._passes: collections.deque[tuple[bool, bool]] = collections.deque(maxlen=window)
        self._lock = threading.Lock()
        self._started = clock()
        self._last_pass: float | None = None
        self.stall_after_s = stall_after_s
        #: set by the first pass that reached both the kubelet and the API server
        self.reached = threading.Event()

    def record_pass(self, *, podresources_ok: bool, api_ok: bool) -> None:
        with self._lock:
            self._passes.append((podresources_ok, api_ok))
            self._last_pass = self._clock()
        if podresources_ok and api_ok:
            self.reached.set()

    def readiness(self) -> tuple[bool, str]:
        """(ready, a one-line reason)."""
        with self._lock:
            passes = list(self._passes)
        if not passes:
            return False, "no reconcile pass yet"
        podresources = any(p for p, _ in passes)
        api = any(a for _, a in passes)
        if podresources and api:
            return True, "ok"
        missing = [
            name
            for name, ok in (("kubelet podresources", podresources), ("API server", api))
            if not ok
        ]
        return False, f"not reached in the last {len(passes)} passes: {', '.join(missing)}"

    def liveness(self) -> tuple[bool, str]:
        with self._lock:
            last = self._last_pass if self._last_pass is not None else self._started
        idle = self._clock() - last
        if idle > self.stall_after_s:
            return False, f"no reconcile pass completed for {idle:.0f}s"
        return True, "ok"
