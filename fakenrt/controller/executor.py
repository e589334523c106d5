"""Carries out the core's effects against the API server with a few worker threads. Edge.

Effects are sharded by the object they write (a pod, a node), so each object's writes
stay in order while different objects are written in parallel by ``workers`` threads
(no thread per node). Node-level writes that only matter in their newest form (NRT
publications, lease renewals, node status, the recorded Memory Manager state) are
coalesced while they wait: a shard keeps the newest body per node and writes it once.
Transient failures (429, 5xx, timeouts) are retried with jittered exponential backoff
until they succeed or the executor stops; other API errors are logged and counted, never fatal.
"""

from __future__ import annotations

import logging
import random
import threading
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterable

from exporter.kubeclient import KubeClient
from exporter.kubeerrors import ApiError, Transient
from fakenrt.controller.effects import (
    CreatePod,
    DeletePod,
    Effect,
    PatchPodStatus,
    PublishNrt,
    PublishNumatopology,
    RecordMemoryCheckpoint,
    RecordNodeEvent,
    RecordPodEvent,
    RenewLease,
    ReportNodeStatus,
    ServePodResources,
    WithdrawPodResources,
)
from fakenrt.controller.writers import (
    NrtWriter,
    create_pod,
    delete_pod,
    patch_pod_status,
    record_event,
    record_memory_checkpoint,
    record_node_event,
    renew_lease,
    report_node_status,
)

log = logging.getLogger(__name__)

_BACKOFF_START, _BACKOFF_MAX = 0.2, 10.0
_Latest = tuple[str, str]  # (effect kind, node)
_Item = Effect | _Latest
#: Effects carried out at once by the caller's callback (the podresources sockets).
SocketEffect = ServePodResources | WithdrawPodResources
#: Node-level writes of which only the newest matters.
_COALESCED = (
    PublishNrt | PublishNumatopology | RenewLease | ReportNodeStatus | RecordMemoryCheckpoint
)


def _shard_key(effect: Effect) -> str:
    if isinstance(effect, PatchPodStatus | RecordPodEvent | DeletePod | CreatePod):
        return f"{effect.namespace}/{effect.name}"
    return effect.node


class _Shard:
    def __init__(self) -> None:
        self.items: deque[_Item] = deque()
        self.latest: dict[_Latest, Effect] = {}


class Executor:
    """Sharded, coalescing, retrying writer of effects."""

    def __init__(
        self,
        kube: KubeClient,
        nrt: NrtWriter,
        *,
        workers: int,
        lease_duration: int,
        node_uids: dict[str, str],
        serve_pod_resources: Callable[[SocketEffect], None],
        rng: random.Random,
        numatopology: NrtWriter | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._kube = kube
        self._nrt = nrt
        self._numatopology = numatopology
        self._lease_duration = lease_duration
        self._node_uids = node_uids
        self._serve = serve_pod_resources
        self._rng = rng
        self._lock = threading.Condition()
        self._shards = [_Shard() for _ in range(workers)]
        self._busy = 0
        self._stopping = threading.Event()
        self._stats: Counter[str] = Counter()
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"fakenrt-writer-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, effects: Iterable[Effect]) -> None:
        with self._lock:
            for effect in effects:
                if isinstance(effect, SocketEffect):
                    self._serve(effect)
                    continue
                shard = self._shards[zlib.crc32(_shard_key(effect).encode()) % len(self._shards)]
                if isinstance(effect, _COALESCED):
                    key: _Latest = (type(effect).__name__, effect.node)
                    if key not in shard.latest:
                        shard.items.append(key)
                    shard.latest[key] = effect
                else:
                    shard.items.append(effect)
            self._lock.notify_all()

    def _idle_locked(self) -> bool:
        return self._busy == 0 and not any(s.items for s in self._shards)

    def idle(self) -> bool:
        """Whether every submitted effect has been written (a non-blocking poll)."""
        with self._lock:
            return self._idle_locked()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted effect has been written (or ``timeout``)."""
        with self._lock:
            return self._lock.wait_for(self._idle_locked, timeout)

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    def _take(self, index: int) -> Effect | None:
        shard = self._shards[index]
        with self._lock:
            while not shard.items:
                if self._stopping.is_set():
                    return None
                self._lock.wait()
            item = shard.items.popleft()
            self._busy += 1
            if isinstance(item, tuple):
                return shard.latest.pop(item)
            return item

    def _work(self, index: int) -> None:
        while True:
            effect = self._take(index)
            if effect is None:
                return
            try:
                self._perform_with_retries(effect)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._lock.notify_all()

    def counts(self) -> dict[str, int]:
        """A copy of the write counters (safe from any thread)."""
        with self._lock:
            return dict(self._stats)

    def _count(self, what: str) -> None:
        with self._lock:
            self._stats[what] += 1

    def _perform_with_retries(self, effect: Effect) -> None:
        kind = type(effect).__name__
        delay = _BACKOFF_START
        while True:
            try:
                self._perform(effect)
            except Transient as exc:
                self._count(f"{kind}:retry")
                log.warning("%s for node %s failed, retrying: %s", kind, effect.node, exc)
                if self._stopping.wait(delay * (0.5 + self._rng.random())):
                    return
                delay = min(delay * 2, _BACKOFF_MAX)
                continue
            except ApiError as exc:
                self._count(f"{kind}:error")
                log.error("%s for node %s failed: %s", kind, effect.node, exc)
                return
            self._count(kind)
            return

    def _perform(self, effect: Effect) -> None:
        if isinstance(effect, PatchPodStatus):
            if not patch_pod_status(self._kube, effect):
                self._count("PatchPodStatus:gone")
        elif isinstance(effect, RecordPodEvent):
            record_event(self._kube, effect)
        elif isinstance(effect, DeletePod):
            delete_pod(self._kube, effect)
        elif isinstance(effect, CreatePod):
            create_pod(self._kube, effect)
        elif isinstance(effect, PublishNrt):
            self._nrt.publish(effect)
        elif isinstance(effect, PublishNumatopology):
            if self._numatopology is None:
                raise ApiError(0, "no Numatopology writer: Volcano's objects are not published")
            self._numatopology.publish(effect)
        elif isinstance(effect, RenewLease):
            uid = self._node_uids.get(effect.node, "")
            renew_lease(self._kube, effect, node_uid=uid, duration_s=self._lease_duration)
        elif isinstance(effect, ReportNodeStatus):
            report_node_status(self._kube, effect)
        elif isinstance(effect, RecordNodeEvent):
            record_node_event(self._kube, effect)
        elif isinstance(effect, RecordMemoryCheckpoint):
            record_memory_checkpoint(self._kube, effect)
