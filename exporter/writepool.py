"""Writes with bounded concurrency, at most one in flight per pod.

A pass of the reconciler used to write its pods one after another: with the API server
answering in 2 s, 100 new pods took one ~205 s pass. The pool runs up to ``workers``
writes at once (a DaemonSet's exporter on every node: a few, not dozens), so a slow API
server costs latency, not minutes; a pod never has two writes in flight or queued (its
writes stay in order, and a decision is never sent twice), and what is queued can be
dropped at once (after a write failed its retries: the rest wait for the next pass).

Workers are daemon threads started on the first submit: a stopping process does not
wait for a write in flight beyond ``stop()``'s timeout.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: The exporter's patches in flight at once by default: at 2 s per API request, 100 new
#: pods are written in ~50 s instead of ~200 s, while the exporter on every node adds at
#: most this many concurrent writes to the API server's load.
DEFAULT_WRITE_CONCURRENCY = 4
#: The most a user may ask for (``--write-concurrency``).
MAX_WRITE_CONCURRENCY = 32


class WritePool:
    def __init__(self, workers: int, *, name: str = "write") -> None:
        if workers < 1:
            raise ValueError("a write pool needs at least one worker")
        self.workers = workers
        self._name = name
        self._lock = threading.Condition()
        self._queue: collections.deque[tuple[str, Callable[[], None]]] = collections.deque()
        #: keys queued or running
        self._pending: set[str] = set()
        self._running = 0
        self._threads: list[threading.Thread] = []
        self._stopped = False

    def pending(self, key: str) -> bool:
        """Whether a write for ``key`` is queued or running."""
        with self._lock:
            return key in self._pending

    def submit(self, key: str, job: Callable[[], None]) -> bool:
        """Queue ``job`` for ``key``; False (not queued) when ``key`` has one pending or
        the pool is stopped. A job's exceptions are logged, never raised."""
        with self._lock:
            if self._stopped or key in self._pending:
                return False
            self._pending.add(key)
            self._queue.append((key, job))
            if len(self._threads) < self.workers and self._running + len(self._queue) > len(
                self._threads
            ):
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            self._lock.notify()
            return True

    def drop_queued(self) -> int:
        """Drop the jobs not started yet; how many."""
        with self._lock:
            dropped = len(self._queue)
            for key, _ in self._queue:
                self._pending.discard(key)
            self._queue.clear()
            self._lock.notify_all()
            return dropped

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until nothing is queued or running; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._pending, timeout_s)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Drop what is queued, let running jobs end (their own deadlines and the
        caller's stop event bound them) and join the workers for ``timeout_s`` at most
        in all."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
            self._pending.clear()
            self._lock.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._queue or self._stopped)
                if self._stopped:
                    return
                key, job = self._queue.popleft()
                self._running += 1
            try:
                job()
            except Exception:  # a bug in one write must not end the worker
                log.exception("write failed unexpectedly", extra={"key": key})
            finally:
                with self._lock:
                    self._running -= 1
                    self._pending.discard(key)
                    self._lock.notify_all()
