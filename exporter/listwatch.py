"""The list-then-watch loop behind the exporter's node-scoped caches (``exporter.pod_cache``,
``exporter.slice_cache``).

``ListWatch.run()`` lists, hands the items to the cache, then watches from the list's
resourceVersion and hands every event over, until its stop event is set. A 410 Gone lists
again at once; any other failure backs off with jitter (0.2 s doubling to 5 s), logged as
a warning once per outage and at debug while it lasts; an unexpected exception is logged
with its traceback and retried the same way, so a bug never ends the thread and leaves a
frozen cache. A cache may take some API errors itself (``on_error``: e.g. a group the API
server does not serve) and say how long to wait before the next list.

``interrupt()`` ends the open watch, and any opened later, at once: a stopping daemon
must not wait for the API server to end a watch.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from exporter.kubeerrors import ApiError, Gone

INITIAL_BACKOFF_S = 0.2
MAX_BACKOFF_S = 5.0

Listed = tuple[str, list[dict[str, Any]]]


class Interruptible(Protocol):
    """An open watch another thread can end (``exporter.kubeclient.WatchStream``)."""

    def shutdown(self) -> None: ...


OpenWatch = Callable[[str, Callable[[Interruptible], None]], Iterator[tuple[str, dict[str, Any]]]]


class ListWatch:
    def __init__(
        self,
        what: str,
        log: logging.Logger,
        *,
        list_: Callable[[], Listed],
        watch: OpenWatch,
        on_list: Callable[[list[dict[str, Any]]], None],
        on_event: Callable[[str, dict[str, Any]], None],
        on_connection: Callable[[bool], None] = lambda ok: None,
        on_error: Callable[[ApiError], float | None] = lambda exc: None,
        rng: random.Random | None = None,
    ) -> None:
        """``what`` names the objects in the lines logged to ``log`` (the cache's logger,
        so that an operator sees which loop failed); ``on_connection`` is told after every
        list or watch the API server answered (True) and every failure (False);
        ``on_error`` returns the seconds to wait before listing again when it took the
        error, None to back off as for any failure."""
        self._what = what
        self._log = log
        self._list = list_
        self._watch_from = watch
        self._on_list = on_list
        self._on_event = on_event
        self._on_connection = on_connection
        self._on_error = on_error
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._watch: Interruptible | None = None
        self._interrupted = False

    def _opened(self, watch: Interruptible) -> None:
        with self._lock:
            self._watch = watch
            interrupted = self._interrupted
        if interrupted:  # stopped while this watch was being opened
            watch.shutdown()

    def interrupt(self) -> None:
        with self._lock:
            self._interrupted = True
            watch = self._watch
        if watch is not None:
            watch.shutdown()

    def _watch_until(self, stop: threading.Event, version: str) -> None:
        while not stop.is_set():
            for kind, obj in self._watch_from(version, self._opened):
                if stop.is_set():
                    return
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                self._on_event(kind, obj)
            self._on_connection(True)

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set."""
        backoff = INITIAL_BACKOFF_S
        failing = False  # log an outage once, not once per retry
        while not stop.is_set():
            try:
                version, items = self._list()
                self._on_list(items)
                self._on_connection(True)
                backoff = INITIAL_BACKOFF_S
                failing = False
                self._watch_until(stop, version)
            except Gone:
                self._log.info("%s watch expired, listing again", self._what)
                continue
            except ApiError as exc:
                if stop.is_set():  # the watch was interrupted to stop
                    return
                wait = self._on_error(exc)
                if wait is not None:
                    stop.wait(wait)
                    continue
                level = logging.DEBUG if failing else logging.WARNING
                self._log.log(level, f"{self._what} list/watch failed", extra={"error": str(exc)})
            except Exception:
                self._log.exception("%s list/watch failed unexpectedly", self._what)
            else:
                return  # the watch loop ends only when stop is set
            failing = True
            self._on_connection(False)
            stop.wait(backoff * (0.5 + self._rng.random()))
            backoff = min(MAX_BACKOFF_S, backoff * 2)
