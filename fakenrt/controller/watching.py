"""One cluster-wide watch of bound pods, feeding the controller's inbox. Edge module.

The controller lists and watches pods once for all its nodes (field selector
``spec.nodeName!=``: bound pods only) instead of one watch per node; the core drops pods
of nodes it does not serve. Messages put on the inbox:

* ``("list", items)`` - a full list (at start, and after the watch expired: 410);
* ``("event", type, object)`` - ``ADDED`` / ``MODIFIED`` / ``DELETED``.

The watch resumes from the last resourceVersion seen (bookmarks included); transient
errors back off with jitter and retry; the thread ends when ``stop`` is set.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import threading
from typing import Any

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import ApiError, Gone

log = logging.getLogger(__name__)

BOUND_PODS = "spec.nodeName!="
Message = tuple[Any, ...]


def list_bound_pods(kube: KubeClient) -> tuple[list[dict[str, Any]], str]:
    return kube.list_all(path("api", "v1", "pods"), fieldSelector=BOUND_PODS)


class PodWatcher:
    """Runs the list/watch loop in one daemon thread."""

    def __init__(
        self,
        kube: KubeClient,
        inbox: queue.Queue[Message],
        *,
        resource_version: str,
        rng: random.Random,
        watch_timeout_s: int = 300,
    ) -> None:
        self._kube = kube
        self._inbox = inbox
        self._version = resource_version
        self._rng = rng
        self._timeout = watch_timeout_s
        self.stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name="fakenrt-pod-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop watching: end the open stream and wait for the thread."""
        self.stop.set()
        response = self._response
        if response is not None:
            # urllib3's shutdown() unblocks a read in another thread; close() is the fallback.
            end = getattr(response, "shutdown", None) or response.close
            with contextlib.suppress(Exception):
                end()
        self._thread.join(timeout)

    def _opened(self, response: Any) -> None:
        self._response = response

    def _run(self) -> None:
        delay = 0.2
        while not self.stop.is_set():
            try:
                if not self._version:
                    items, self._version = list_bound_pods(self._kube)
                    self._inbox.put(("list", items))
                self._watch_once()
                delay = 0.2
            except Gone:
                log.info("pod watch expired; listing again")
                self._version = ""
            except ApiError as exc:  # Transient included: retry with backoff
                if self.stop.is_set():
                    return
                log.warning("pod watch failed, retrying: %s", exc)
                self.stop.wait(delay * (0.5 + self._rng.random()))
                delay = min(delay * 2, 10.0)

    def _watch_once(self) -> None:
        events = self._kube.watch(
            path("api", "v1", "pods"),
            resource_version=self._version,
            timeout_s=self._timeout,
            on_open=self._opened,
            fieldSelector=BOUND_PODS,
        )
        for event in events:
            if self.stop.is_set():
                return
            obj = event.get("object") or {}
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self._version = str(version)
            kind = event.get("type")
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._inbox.put(("event", kind, obj))
