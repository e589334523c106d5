"""Liveness and readiness decisions (served by ``exporter.endpoints``).

``Health`` is fed by the reconcile loop:

* **liveness** (``/healthz``) means *the loop is alive*: the loop calls :meth:`Health.beat`
  between the steps of a pass and after every pod it writes, and the probe fails only
  when no beat came for ``stall_after_s``. A pass that takes minutes because the API
  server answers slowly keeps beating and the exporter is never restarted for it; a
  loop that is stuck (or whose thread died) stops beating.
* **readiness** (``/readyz``): after every pass the loop records whether the kubelet
  podresources API and the API server were reached; 200 only if both were reached within
  the last ``window`` passes.
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
        #: the loop's last sign of progress (start-up counts as one)
        self._last_beat = clock()
        self.stall_after_s = stall_after_s
        #: set by the first pass that reached both the kubelet and the API server
        self.reached = threading.Event()

    def beat(self) -> None:
        """The loop made progress (a pass step, a pod written). Cheap: one assignment."""
        self._last_beat = self._clock()

    def record_pass(self, *, podresources_ok: bool, api_ok: bool) -> None:
        """A pass ended (also a beat)."""
        with self._lock:
            self._passes.append((podresources_ok, api_ok))
        self.beat()
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
        """(alive, a one-line reason)."""
        idle = self._clock() - self._last_beat
        if idle > self.stall_after_s:
            return False, (
                f"the reconcile loop made no progress for {idle:.0f}s "
                f"(limit {self.stall_after_s:.0f}s)"
            )
        return True, "ok"
