"""A node-scoped pod cache fed by list + watch (field selector ``spec.nodeName``).

Holds :class:`PodView` values only. ``run()`` lists, then watches from the list's
resourceVersion, relists on 410 Gone and backs off with jitter on failures
(``exporter.listwatch``); every change
calls ``on_change`` so the reconciler wakes up, and bumps ``generation`` (an unchanged
generation means an unchanged cache: the reconciler's cheap steady-state test).
``connected`` says whether the API server answered the last list or watch; ``synced``
is set after the first successful list.
The reconciler also feeds back the objects its patches and re-reads return
(``upsert``), so it never compares against an older state than its own last write.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from exporter.listwatch import Interruptible, Listed, ListWatch
from exporter.pods import PodObjectError, PodView, pod_view

log = logging.getLogger(__name__)


class PodSource(Protocol):
    def list_node_pods(self, node_name: str) -> tuple[str, list[dict[str, Any]]]: ...

    def watch_node_pods(
        self,
        node_name: str,
        resource_version: str,
        *,
        on_open: Callable[[Interruptible], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...


def _rv(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _decision_fields(view: PodView) -> tuple[object, ...]:
    return (
        view.uid,
        view.phase,
        view.started_at,
        view.deleting,
        view.placement_annotation,
        view.memory_groups_annotation,
    )


class PodCache:
    def __init__(
        self,
        source: PodSource,
        node_name: str,
        *,
        on_change: Callable[[], None] = lambda: None,
        on_connection: Callable[[bool], None] = lambda ok: None,
        rng: random.Random | None = None,
        first_list: Callable[[], tuple[str, list[dict[str, Any]]]] | None = None,
    ) -> None:
        self._source = source
        #: the answer of a list already sent (start-up), used instead of the first list
        self._first_list = first_list
        self.node_name = node_name
        self._on_change = on_change
        self._on_connection = on_connection
        self._lock = threading.Lock()
        self._pods: dict[str, PodView] = {}
        #: incremented (under the lock) by every change to the cached pods
        self.generation = 0
        self.synced = threading.Event()
        self.connected = False
        self._loop = ListWatch(
            "pod",
            log,
            list_=self._list,
            watch=lambda version, on_open: source.watch_node_pods(
                node_name, version, on_open=on_open
            ),
            on_list=self.replace,
            on_event=self._event,
            on_connection=self._set_connected,
            rng=rng,
        )

    # -- reads ----------------------------------------------------------------------
    def snapshot(self) -> Mapping[str, PodView]:
        with self._lock:
            return dict(self._pods)

    def get(self, key: str) -> PodView | None:
        with self._lock:
            return self._pods.get(key)

    # -- writes ---------------------------------------------------------------------
    def _view(self, obj: Mapping[str, Any]) -> PodView | None:
        try:
            return pod_view(obj)
        except PodObjectError as exc:
            log.warning("ignoring unreadable pod", extra={"error": str(exc)})
            return None

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        views = [v for v in (self._view(o) for o in objects) if v is not None]
        with self._lock:
            self._pods = {v.key: v for v in views}
            self.generation += 1
        self.synced.set()
        self._on_change()

    def upsert(self, obj: Mapping[str, Any], *, notify: bool = True) -> PodView | None:
        """Insert or update from an object; an older version of the same pod is ignored,
        and so is the version already held (the object of one resourceVersion never
        changes: e.g. the watch event of the exporter's own write, whose answer is in
        already), without reading it.

        ``on_change`` is called only when something the reconciler decides on changed
        (not for status heartbeats or the exporter's own writes with ``notify=False``).
        """
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            with self._lock:
                current = self._pods.get(f"{meta.get('namespace')}/{meta.get('name')}")
            if (
                current is not None
                and current.resource_version
                and current.uid == meta.get("uid")
                and current.resource_version == meta.get("resourceVersion")
            ):
                return current
        view = self._view(obj)
        if view is None:
            return None
        return self.put(view, notify=notify)

    def put(self, view: PodView, *, notify: bool = True) -> PodView:
        """Insert or update a pod's view (see ``upsert``)."""
        with self._lock:
            current = self._pods.get(view.key)
            if current is not None and current.uid == view.uid:
                old, new = _rv(current.resource_version), _rv(view.resource_version)
                if old is not None and new is not None and new < old:
                    return current
            if current != view:
                self._pods[view.key] = view
                self.generation += 1
        if notify and (current is None or _decision_fields(current) != _decision_fields(view)):
            self._on_change()
        return view

    def delete(self, obj: Mapping[str, Any], *, uid: str | None = None) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        uid = uid or meta.get("uid")
        with self._lock:
            current = self._pods.get(key)
            if current is not None and (uid is None or current.uid == uid):
                del self._pods[key]
                self.generation += 1
        self._on_change()

    def forget(self, key: str, uid: str) -> None:
        with self._lock:
            current = self._pods.get(key)
            if current is not None and current.uid == uid:
                del self._pods[key]
                self.generation += 1

    # -- the loop -------------------------------------------------------------------
    def _set_connected(self, ok: bool) -> None:
        if ok != self.connected:
            log.info("api server connection", extra={"connected": ok})
        self.connected = ok
        self._on_connection(ok)

    def _list(self) -> Listed:
        first, self._first_list = self._first_list, None
        if first is not None:
            return first()
        return self._source.list_node_pods(self.node_name)

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self.upsert(obj)
        elif kind == "DELETED":
            self.delete(obj)

    def interrupt(self) -> None:
        """End the open watch, and any opened later, now: ``run`` then sees its stop
        event set and returns."""
        self._loop.interrupt()

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set (``exporter.listwatch``)."""
        self._loop.run(stop)
