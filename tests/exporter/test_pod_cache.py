"""The pod cache's list/watch loop, driven by a scripted source (the loop's own logic:
relist on 410, back off on failures, notify only on decision-relevant changes). The
same loop against the real API server runs in test_daemon.py."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from exporter.kubeerrors import Gone, Transient
from exporter.pod_cache import PodCache
from exporter.pods import PodView


def _pod(name: str, rv: str, phase: str = "Running", uid: str = "u") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{uid}-{name}",
            "resourceVersion": rv,
        },
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": phase},
    }


class ScriptedSource:
    """Lists and watch streams given in order; the last step sets ``stop``."""

    def __init__(self, stop: threading.Event, steps: list[Any]) -> None:
        self.stop = stop
        self.steps = steps
        self.calls: list[str] = []

    def _next(self) -> Any:
        step = self.steps.pop(0)
        if not self.steps:
            self.stop.set()
        if isinstance(step, Exception):
            raise step
        return step

    def list_node_pods(self, node_name: str) -> tuple[str, list[dict[str, Any]]]:
        self.calls.append("list")
        result: tuple[str, list[dict[str, Any]]] = self._next()
        return result

    def watch_node_pods(
        self, node_name: str, resource_version: str, *, on_open: Any = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        self.calls.append(f"watch@{resource_version}")
        events = self._next()
        yield from events


def test_list_watch_relist_on_gone_and_backoff() -> None:
    stop = threading.Event()
    changes: list[int] = []
    connection: list[bool] = []
    source = ScriptedSource(
        stop,
        [
            ("10", [_pod("a", "9")]),
            [("ADDED", _pod("b", "11")), ("BOOKMARK", {"metadata": {"resourceVersion": "15"}})],
            [("MODIFIED", _pod("a", "16", phase="Succeeded")), ("DELETED", _pod("b", "17"))],
            Gone(410, "too old"),
            Transient(0, "connection refused"),
            ("20", [_pod("c", "19")]),
        ],
    )
    cache = PodCache(
        source,
        "node",
        on_change=lambda: changes.append(1),
        on_connection=connection.append,
        rng=random.Random(0),
    )
    cache.run(stop)
    assert source.calls == ["list", "watch@10", "watch@15", "watch@17", "list", "list"]
    assert list(cache.snapshot()) == ["ns/c"]
    assert connection[-2:] == [False, True]
    assert cache.synced.is_set()


def _cached(cache: PodCache, key: str) -> PodView:
    pod = cache.get(key)
    assert pod is not None, f"{key} is not in the cache"
    return pod


def test_notifies_only_on_decision_relevant_changes() -> None:
    changes: list[int] = []
    cache = PodCache(
        ScriptedSource(threading.Event(), []), "node", on_change=lambda: changes.append(1)
    )
    cache.upsert(_pod("a", "1"))
    cache.upsert(_pod("a", "2"))  # only the resourceVersion moved (a status heartbeat)
    assert len(changes) == 1
    cache.upsert(_pod("a", "1", phase="Failed"))  # older than what the cache holds: ignored
    assert _cached(cache, "ns/a").phase == "Running"
    cache.upsert(_pod("a", "3", phase="Failed"))
    assert len(changes) == 2
    cache.upsert(_pod("a", "4", phase="Failed"), notify=False)
    assert len(changes) == 2
    cache.upsert(_pod("a", "1", uid="new"))  # a new pod under the name replaces the old
    assert _cached(cache, "ns/a").uid == "new-a"
    cache.forget("ns/a", "u-a")  # the old uid: nothing to forget
    assert cache.get("ns/a") is not None
    cache.forget("ns/a", "new-a")
    assert cache.get("ns/a") is None


def test_an_unexpected_error_does_not_end_the_loop() -> None:
    # a bug or a garbled answer outside the ApiError hierarchy must not kill the cache's
    # thread silently (it would leave a frozen cache that still reads as connected)
    stop = threading.Event()
    connection: list[bool] = []
    source = ScriptedSource(
        stop,
        [("10", [_pod("a", "9")]), ValueError("garbled"), ("20", [_pod("c", "19")])],
    )
    cache = PodCache(source, "node", on_connection=connection.append, rng=random.Random(0))
    cache.run(stop)
    assert source.calls == ["list", "watch@10", "list"]
    assert list(cache.snapshot()) == ["ns/c"]
    assert connection == [True, False, True]


def test_an_api_outage_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    failure = Transient(0, "connection refused")
    source = ScriptedSource(stop, [failure, failure, failure, ("20", [_pod("c", "19")])])
    cache = PodCache(source, "node", rng=random.Random(0))
    with caplog.at_level(logging.DEBUG, logger="exporter.pod_cache"):
        cache.run(stop)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["pod list/watch failed"]


def test_the_first_list_can_be_a_list_sent_ahead() -> None:
    """Start-up sends the node's pod list before the daemon's modules load: the cache
    takes that answer instead of listing, then watches from its version."""
    stop = threading.Event()
    source = ScriptedSource(stop, [[("ADDED", _pod("b", "11"))], []])
    ahead: list[str] = []

    def first_list() -> tuple[str, list[dict[str, Any]]]:
        ahead.append("called")
        return "10", [_pod("a", "9")]

    cache = PodCache(source, "node", rng=random.Random(0), first_list=first_list)
    cache.run(stop)
    assert ahead == ["called"]
    assert source.calls == ["watch@10", "watch@11"]
    assert sorted(cache.snapshot()) == ["ns/a", "ns/b"]


def test_a_failed_list_sent_ahead_is_retried_as_a_list() -> None:
    stop = threading.Event()
    connection: list[bool] = []
    source = ScriptedSource(stop, [("20", [_pod("c", "19")])])

    def first_list() -> tuple[str, list[dict[str, Any]]]:
        raise Transient(0, "connection refused")

    cache = PodCache(
        source, "node", on_connection=connection.append, rng=random.Random(0),
        first_list=first_list,
    )  # fmt: skip
    cache.run(stop)
    assert source.calls == ["list"]
    assert list(cache.snapshot()) == ["ns/c"]
    assert connection == [False, True]


def test_the_version_held_is_not_read_again() -> None:
    """The watch event of the exporter's own write (whose answer the cache holds) is not
    decoded again: one resourceVersion is one object."""
    changes: list[int] = []
    cache = PodCache(
        ScriptedSource(threading.Event(), []), "node", on_change=lambda: changes.append(1)
    )
    cache.upsert(_pod("a", "5"))
    generation = cache.generation
    unreadable_same_version = {**_pod("a", "5"), "spec": {"containers": "not a list"}}
    assert cache.upsert(unreadable_same_version) == _cached(cache, "ns/a")
    assert (cache.generation, len(changes)) == (generation, 1)
    # another version, or the same version of another pod under the name, is read
    cache.upsert(_pod("a", "6", phase="Failed"))
    assert _cached(cache, "ns/a").phase == "Failed"
    cache.upsert(_pod("a", "6", uid="new"))
    assert _cached(cache, "ns/a").uid == "new-a"
