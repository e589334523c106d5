"""Cluster-wide watches feeding the controller's inbox: bound pods, and ResourceClaims.
Edge module.

The controller lists and watches pods once for all its nodes (field selector
``spec.nodeName!=``: bound pods only) instead of one watch per node; the core drops pods
of nodes it does not serve. It watches every ResourceClaim too, as its simulated kubelets
read the claims of their pods (a kubelet gets each claim from the API server when it
prepares a pod). Messages put on the inbox, tagged per watch (``list`` / ``event`` for
pods, ``claims`` / ``claim`` for ResourceClaims):

* ``(list tag, items)`` - a full list (at start, and after the watch expired: 410);
* ``(event tag, type, object)`` - ``ADDED`` / ``MODIFIED`` / ``DELETED``.

The watch resumes from the last resourceVersion seen (bookmarks included); transient
errors back off with jitter and retry; the thread ends when ``stop`` is set. A resource
the API server does not serve (404: no resource.k8s.io/v1) is retried slowly.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import ApiError, Gone, NotFound

log = logging.getLogger(__name__)

BOUND_PODS = "spec.nodeName!="
Message = tuple[Any, ...]
#: How long to wait before listing a resource the API server does not serve again.
NOT_SERVED_RETRY_S = 60.0


@dataclass(frozen=True)
class Watched:
    """What one watch lists and watches, and how its messages are tagged."""

    name: str
    path: str
    list_tag: str
    event_tag: str
    query: Mapping[str, str] = field(default_factory=dict)


PODS = Watched("pod", path("api", "v1", "pods"), "list", "event", {"fieldSelector": BOUND_PODS})
CLAIMS = Watched(
    "resourceclaim", path("apis", "resource.k8s.io", "v1", "resourceclaims"), "claims", "claim"
)


def list_bound_pods(kube: KubeClient) -> tuple[list[dict[str, Any]], str]:
    return kube.list_all(PODS.path, **PODS.query)


def list_claims(kube: KubeClient) -> tuple[list[dict[str, Any]], str]:
    """Every ResourceClaim, or none with an empty version when resource.k8s.io/v1 is not
    served (the watch then lists again later)."""
    try:
        return kube.list_all(CLAIMS.path)
    except NotFound:
        log.warning("resource.k8s.io/v1 is not served: pods with ResourceClaims stay Pending")
        return [], ""


class Watcher:
    """Runs one list/watch loop in a daemon thread."""

    def __init__(
        self,
        kube: KubeClient,
        inbox: queue.Queue[Message],
        *,
        resource_version: str,
        rng: random.Random,
        watched: Watched = PODS,
        watch_timeout_s: int = 300,
    ) -> None:
        self._kube = kube
        self._inbox = inbox
        self._version = resource_version
        self._rng = rng
        self._watched = watched
        self._timeout = watch_timeout_s
        self.stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(
            target=self._run, name=f"fakenrt-{watched.name}-watch", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    @property
    def watched(self) -> Watched:
        return self._watched

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
        what = self._watched
        while not self.stop.is_set():
            try:
                if not self._version:
                    items, self._version = self._kube.list_all(what.path, **what.query)
                    self._inbox.put((what.list_tag, items))
                self._watch_once()
                delay = 0.2
            except Gone:
                log.info("%s watch expired; listing again", what.name)
                self._version = ""
            except NotFound:
                log.warning("%s is not served by the API server; listing again later", what.path)
                self._version = ""
                self.stop.wait(NOT_SERVED_RETRY_S)
            except ApiError as exc:  # Transient included: retry with backoff
                if self.stop.is_set():
                    return
                log.warning("%s watch failed, retrying: %s", what.name, exc)
                self.stop.wait(delay * (0.5 + self._rng.random()))
                delay = min(delay * 2, 10.0)

    def _watch_once(self) -> None:
        what = self._watched
        events = self._kube.watch(
            what.path,
            resource_version=self._version,
            timeout_s=self._timeout,
            on_open=self._opened,
            **what.query,
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
                self._inbox.put((what.event_tag, kind, obj))
