"""One reconcile pass: podresources List + the node's pod cache -> annotation patches.

The pass reads the kubelet's view, derives each pod's two annotation values (pure,
``exporter.placement``) and patches only the pods whose cached annotations differ, which
also repairs out-of-band edits and removals. A pass whose inputs are exactly those of
the last pass that found nothing to change (the same encoded podresources answer, the
same pod cache generation, the same allocatable resources and CPU map) has nothing to
derive or compare and stops there: the steady state costs one List and a byte compare.
No write happens in a pass whose List failed, for a pod the kubelet lists twice under
one name (an old and a new pod), for a pod the API does not show as admitted by the
kubelet, or for a terminal or deleting pod.

Writes go to a :class:`~exporter.writepool.WritePool`: a few at once, one at a time per
pod, so a slow API server costs latency rather than one pass of (pods x latency). A pass
does not wait for them in the daemon (``run_once(wait=False)``): the loop goes on
passing every poll interval while they run, beating the liveness heartbeat
(``Health.beat``) at every pass and after each podresources call, and the next pass
takes their outcomes (refusal backoffs, the log line; the metrics are counted as each
write ends). A write that starts after the pod changed in the cache is decided again on
the cached pod first. After a patch fails its retries the writes still queued are
dropped and the pass that learns of it starts none: the rest wait for the next pass; a
refused patch is not sent again to that pod before a backoff.

DRA devices are placed by the node's ResourceSlices (``exporter.dra_observer``): a change
of the slices re-derives every pod, and each full pass hands its pods to the observer
(the misaligned pods' metrics, log line and Event).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from exporter.dra_alignment import Misalignment
from exporter.dra_observer import DraObserver, PodObservation
from exporter.health import Health
from exporter.metrics import ExporterMetrics
from exporter.patching import Patcher, PatchOutcome, PatchResult, changes_for
from exporter.placement import PodPlacement, annotation_values, derive_placement
from exporter.pod_cache import PodCache
from exporter.podresources_client import PodResourcesError
from exporter.podresources_proto import PodListDecoder, WireError, pod_messages
from exporter.pods import PodView, pod_view
from exporter.resources import AllocatableResources, PodResources, duplicate_keys
from exporter.writepool import WritePool

log = logging.getLogger(__name__)

ALLOCATABLE_REFRESH_S = 60.0
SYSFS_REFRESH_S = 60.0
COALESCE_S = 0.05
#: A patch the API server refused (RBAC, admission policy, validation) is not asked
#: again for the same pod and values before this wait, doubled per refusal up to the max
#: and jittered (x0.5 to x1): retrying every pass would cost one request per pod per
#: second on every node of a misconfigured install.
REFUSED_BACKOFF_S = 10.0
REFUSED_MAX_BACKOFF_S = 300.0
#: The pods named in a pass's "annotations written" line (the rest are counted).
LOGGED_NAMES = 20
#: ``status.startTime`` has one-second resolution.
START_TIME_RESOLUTION_S = 1.0


class PodResourcesReader(Protocol):
    @property
    def generation(self) -> int: ...

    def list_raw(self) -> bytes: ...

    def allocatable_or_empty(self) -> AllocatableResources: ...


@dataclass
class PassReport:
    """What one pass did (for tests, logs and the benchmark)."""

    podresources_ok: bool = False
    api_ok: bool = False
    pods_reported: int = 0
    #: outcomes of the writes that ended since the last pass took them (with
    #: ``run_once(wait=True)``: those this pass started, and any before)
    patches: dict[str, int] = field(default_factory=dict)
    #: writes this pass started
    submitted: int = 0
    #: every write taken had an answer from the API server
    writes_reached_api: bool = True
    unknown_cpus: frozenset[int] = frozenset()
    skipped_duplicates: tuple[str, ...] = ()
    #: nothing changed since the last pass that found nothing to write: no derivation
    unchanged: bool = False


@dataclass(frozen=True)
class _Settled:
    """The inputs of the last pass that found every pod as it should be, and its report."""

    podresources: bytes
    #: the answer's pods, still encoded, sorted: the kubelet's pod order need not be
    #: stable (its pod manager keeps pods in a map, pkg/kubelet/pod/pod_manager.go)
    pods: tuple[bytes, ...]
    cache_generation: int
    epoch: int
    pods_reported: int
    skipped_duplicates: tuple[str, ...]


@dataclass(frozen=True)
class _Memo:
    report: PodResources
    expected: frozenset[str]
    placement: PodPlacement
    desired: Mapping[str, str | None]
    misaligned: tuple[Misalignment, ...] = ()


@dataclass(frozen=True)
class _Written:
    """A write that ended, for the pass that takes it."""

    pod: PodView
    changes: Mapping[str, str | None]
    first_write: bool
    outcome: PatchOutcome | None  # None: dropped at its start (the pod changed or went)


@dataclass(frozen=True)
class _Refusal:
    uid: str
    changes: Mapping[str, str | None]
    delay_s: float
    not_before: float


def _sorted_pods(raw: bytes) -> tuple[bytes, ...]:
    try:
        return tuple(sorted(pod_messages(raw)))
    except WireError:
        return ()


class Reconciler:
    def __init__(
        self,
        *,
        podresources: PodResourcesReader,
        cache: PodCache,
        patcher: Patcher,
        load_cpu_map: Callable[[], Mapping[int, int]],
        metrics: ExporterMetrics,
        health: Health,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        rng: random.Random | None = None,
        writes: WritePool | None = None,
        dra: DraObserver | None = None,
    ) -> None:
        self._podresources = podresources
        #: where patches run (default: one worker, one write at a time)
        self._writes = writes or WritePool(1, name="patch")
        self._done_lock = threading.Lock()
        self._done: list[_Written] = []
        #: set by a write that failed its retries; cleared by the next pass's start
        self._write_failed = threading.Event()
        #: places DRA devices and reports misaligned pods (None: DRA devices ignored)
        self._dra = dra
        self._dra_generation = dra.generation if dra is not None else 0
        self._cache = cache
        self._patcher = patcher
        self._load_cpu_map = load_cpu_map
        self._cpu_map = load_cpu_map()
        self._cpu_map_loaded_at = clock()
        self._metrics = metrics
        self._health = health
        self._clock = clock
        self._wall_clock = wall_clock
        self._started_wall = wall_clock()
        self._allocatable: AllocatableResources | None = None
        self._allocatable_at = 0.0
        self._allocatable_generation = -1
        self._memo: dict[str, _Memo] = {}
        self._logged_unknown: frozenset[int] = frozenset()
        self._rng = rng or random.Random()
        self._refused: dict[str, _Refusal] = {}
        self._podresources_failing = False
        self._decoder = PodListDecoder()
        #: bumped whenever derivations are dropped (new allocatable resources or CPU map)
        self._epoch = 0
        self._settled: _Settled | None = None

    # -- inputs -----------------------------------------------------------------------
    def _refresh_allocatable(self) -> None:
        now = self._clock()
        stale = now - self._allocatable_at >= ALLOCATABLE_REFRESH_S
        if (
            self._allocatable is None
            or stale
            or self._podresources.generation != self._allocatable_generation
        ):
            allocatable = self._podresources.allocatable_or_empty()
            if self._allocatable is not None and allocatable != self._allocatable:
                log.info("allocatable resources changed; re-deriving every pod")
                self._memo.clear()
                self._epoch += 1
            self._allocatable = allocatable
            self._allocatable_at = now
            self._allocatable_generation = self._podresources.generation

    def _refresh_dra(self) -> None:
        """New ResourceSlices on the node can move a DRA device: derive every pod again."""
        if self._dra is None:
            return
        generation = self._dra.generation
        if generation != self._dra_generation:
            self._dra_generation = generation
            self._memo.clear()
            self._epoch += 1

    def _maybe_reload_cpu_map(self, unknown: frozenset[int]) -> None:
        if not unknown or self._clock() - self._cpu_map_loaded_at < SYSFS_REFRESH_S:
            return
        self._cpu_map_loaded_at = self._clock()
        try:
            self._cpu_map = self._load_cpu_map()
            self._memo.clear()
            self._epoch += 1
        except Exception as exc:  # keep the old map: a transient read error is not fatal
            log.error("re-reading sysfs failed", extra={"error": str(exc)})

    # -- decisions --------------------------------------------------------------------
    def _desired(self, report: PodResources, pod: PodView) -> _Memo:
        assert self._allocatable is not None
        expected = pod.expected_memory_containers(
            memory_manager_static=self._allocatable.memory_manager_static
        )
        memo = self._memo.get(report.key)
        if memo is not None and memo.report == report and memo.expected == expected:
            return memo
        dra = self._dra
        placement = derive_placement(
            report,
            self._cpu_map,
            expected_memory_containers=expected,
            dra_numa=dra.numa if dra is not None else None,
        )
        misaligned = dra.misalignments(report, self._cpu_map) if dra is not None else ()
        memo = _Memo(report, expected, placement, annotation_values(placement), misaligned)
        self._memo[report.key] = memo
        return memo

    # -- the pass ---------------------------------------------------------------------
    def run_once(self, *, wait: bool = True) -> PassReport:
        """One pass. With ``wait`` it returns once the writes it started have ended (and
        reports their outcomes); the daemon's loop passes ``wait=False``."""
        started = self._clock()
        report = PassReport()
        try:
            self._take_written(report)
            self._run(report)
            if wait and report.submitted:
                self._writes.wait_idle()
                self._take_written(report)
        finally:
            report.api_ok = report.api_ok and report.writes_reached_api and self._cache.connected
            self._metrics.podresources_up.set(1 if report.podresources_ok else 0)
            self._metrics.apiserver_up.set(1 if self._cache.connected else 0)
            self._metrics.reconcile_duration.observe(self._clock() - started)
            # last: a probe that sees the new readiness also sees the metrics above
            self._health.record_pass(podresources_ok=report.podresources_ok, api_ok=report.api_ok)
        return report

    def _run(self, report: PassReport) -> None:
        try:
            raw = self._podresources.list_raw()
            self._health.beat()
            self._refresh_allocatable()
            self._refresh_dra()
            self._health.beat()
        except PodResourcesError as exc:
            # once per outage, not once per pass (the metrics count every failed call)
            level = logging.DEBUG if self._podresources_failing else logging.WARNING
            log.log(
                level, "podresources unavailable; no writes until it answers",
                extra={"error": str(exc)},
            )  # fmt: skip
            self._podresources_failing = True
            self._metrics.reconciles.labels("podresources_error").inc()
            report.api_ok = self._cache.synced.is_set()
            return
        if self._podresources_failing:
            log.info("podresources reachable again")
            self._podresources_failing = False
        report.podresources_ok = True
        if not self._cache.synced.is_set():
            self._metrics.reconciles.labels("api_not_synced").inc()
            return
        report.api_ok = True
        # read before the snapshot: a change after this read makes the next pass a full one
        generation = self._cache.generation
        settled = self._settled
        if (
            settled is not None
            and settled.cache_generation == generation
            and settled.epoch == self._epoch
            and (settled.podresources == raw or _sorted_pods(raw) == settled.pods)
        ):
            report.unchanged = True
            report.pods_reported = settled.pods_reported
            report.skipped_duplicates = settled.skipped_duplicates
            self._metrics.reconciles.labels("ok").inc()
            self._metrics.last_success.set(self._wall_clock())
            return
        self._settled = None
        try:
            reports = self._decoder.decode(raw)
        except WireError as exc:
            log.warning("podresources answer undecodable; no writes", extra={"error": str(exc)})
            self._metrics.reconciles.labels("podresources_error").inc()
            report.podresources_ok = False
            return
        report.pods_reported = len(reports)
        self._metrics.pods_observed.set(len(reports))

        duplicates = duplicate_keys(reports)
        if duplicates:
            log.warning(
                "kubelet lists several pods under one name; leaving them alone",
                extra={"pods": sorted(duplicates)},
            )
        report.skipped_duplicates = tuple(sorted(duplicates))
        snapshot = self._cache.snapshot()
        unknown: set[int] = set()
        aligned = 0
        seen: set[str] = set()
        # once a patch failed after its retries (unreachable, timeouts, 429/5xx), the rest
        # wait for the next pass: a hung or overloaded server must not take (pods x
        # retries) requests from it
        writing = PatchResult.FAILED not in report.patches
        pending = False
        observed: list[PodObservation] = []
        for pod_report in reports:
            key = pod_report.key
            seen.add(key)
            pod = snapshot.get(key)
            if key in duplicates or pod is None or not pod.writable:
                continue
            if self._dra is not None and _holds_dra(pod_report) and not self._dra.ready():
                pending = True  # its DRA devices' NUMA nodes come with the node's slices
                continue
            memo = self._desired(pod_report, pod)
            observed.append(PodObservation(pod, pod_report, memo.misaligned))
            unknown |= memo.placement.unknown_cpus
            aligned += memo.placement.holds_aligned_resources
            if self._writes.pending(key):
                pending = True  # its write is queued or running: decided again after it
                continue
            changes = changes_for(pod, memo.desired)
            pending = pending or bool(changes)
            writing = writing and not self._write_failed.is_set()
            if changes and writing and not self._backing_off(pod, changes):
                report.submitted += self._submit(pod, changes)
        for key in [k for k in self._memo if k not in seen]:
            del self._memo[key]
        for key in [k for k in self._refused if k not in seen]:
            del self._refused[key]

        if self._dra is not None:
            self._dra.observe_pass(observed)
        frozen_unknown = frozenset(unknown)
        report.unknown_cpus = frozen_unknown
        self._metrics.unknown_cpus.set(len(frozen_unknown))
        self._metrics.pods_with_placement.set(aligned)
        if frozen_unknown - self._logged_unknown:
            log.warning(
                "exclusive CPUs unknown to sysfs are left out of placements",
                extra={"cpus": sorted(frozen_unknown)},
            )
        self._logged_unknown = frozen_unknown
        self._maybe_reload_cpu_map(frozen_unknown)
        if not pending and not frozen_unknown:
            self._settled = _Settled(
                raw,
                _sorted_pods(raw),
                generation,
                self._epoch,
                len(reports),
                report.skipped_duplicates,
            )
        self._metrics.reconciles.labels("ok").inc()
        self._metrics.last_success.set(self._wall_clock())

    def _backing_off(self, pod: PodView, changes: Mapping[str, str | None]) -> bool:
        refusal = self._refused.get(pod.key)
        return (
            refusal is not None
            and refusal.uid == pod.uid
            and refusal.changes == changes
            and self._clock() < refusal.not_before
        )

    def _note_refusal(
        self, pod: PodView, changes: Mapping[str, str | None], *, refused: bool
    ) -> None:
        previous = self._refused.pop(pod.key, None)
        if not refused:
            return
        delay = REFUSED_BACKOFF_S
        if previous is not None and (previous.uid, previous.changes) == (pod.uid, changes):
            delay = min(REFUSED_MAX_BACKOFF_S, 2 * previous.delay_s)
        wait = delay * (0.5 + 0.5 * self._rng.random())
        self._refused[pod.key] = _Refusal(pod.uid, dict(changes), delay, self._clock() + wait)

    def _submit(self, pod: PodView, changes: Mapping[str, str | None]) -> bool:
        first_write = pod.placement_annotation is None and pod.memory_groups_annotation is None
        return self._writes.submit(pod.key, lambda: self._write(pod, changes, first_write))

    def _decide(self, fresh: PodView) -> Mapping[str, str | None] | None:
        """The changes for a pod read again (after a 409, or changed in the cache while
        its write waited), or None when it is not ours to write any more."""
        if not fresh.writable:
            return None
        memo = self._memo.get(fresh.key)
        return changes_for(fresh, memo.desired) if memo is not None else None

    def _write(self, pod: PodView, changes: Mapping[str, str | None], first_write: bool) -> None:
        """In a write worker: patch one pod, count it, keep the cache current, hand the
        outcome to the next pass."""
        current = self._cache.get(pod.key)
        if current is None or current.uid != pod.uid:
            self._hand_over(_Written(pod, changes, first_write, None))  # gone meanwhile
            return
        if current.resource_version != pod.resource_version:
            # changed while the write waited: decide on what the cache holds now
            again = self._decide(current)
            if not again:
                self._hand_over(_Written(pod, changes, first_write, None))
                return
            pod, changes = current, again
        outcome = self._patcher.apply(pod, changes, self._decide, pod_view)
        # counted and timed as it ends (the metrics are thread-safe): not a pass later
        self._metrics.patches.labels(outcome.result.value).inc()
        if outcome.conflicts:
            self._metrics.patches.labels(PatchResult.CONFLICT.value).inc(outcome.conflicts)
        # timed only for pods started while this exporter runs: a pod from before (a
        # first install, annotations stripped by hand) would report its age as lag
        started = pod.started_at
        if (
            outcome.result is PatchResult.APPLIED
            and first_write
            and started is not None
            and self._timed(started)
        ):
            self._metrics.observation_lag.observe(max(0.0, self._wall_clock() - started))
        if outcome.view is not None:
            self._cache.put(outcome.view, notify=False)
        if outcome.result is PatchResult.NOT_FOUND:
            self._cache.forget(pod.key, pod.uid)
        failed = outcome.result is PatchResult.FAILED
        if failed:
            self._writes.drop_queued()
        self._hand_over(_Written(pod, changes, first_write, outcome), failed=failed)

    def _hand_over(self, written: _Written, *, failed: bool = False) -> None:
        with self._done_lock:
            self._done.append(written)
            if failed:
                self._write_failed.set()

    def _take_written(self, report: PassReport) -> None:
        """The outcomes of the writes that ended since the last take: the report, refusal
        backoffs, one log line."""
        with self._done_lock:
            done, self._done = self._done, []
            self._write_failed.clear()  # its FAILED outcome is in ``done``: see _run
        names: list[str] = []
        for item in done:
            outcome = item.outcome
            if outcome is None:
                continue
            pod, result = item.pod, outcome.result
            self._note_refusal(pod, item.changes, refused=result is PatchResult.REJECTED)
            report.patches[result] = report.patches.get(result, 0) + 1
            report.writes_reached_api = report.writes_reached_api and outcome.reached_api
            if result is not PatchResult.APPLIED:
                continue
            names.append(pod.key)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "annotations written",
                    extra={
                        "pod": pod.key, "uid": pod.uid, "annotations": dict(outcome.written or {})
                    },
                )  # fmt: skip
        if names:
            # one line per pass at info (a burst of new pods is one line, not one per pod;
            # each pod's values are logged at debug)
            log.info(
                "annotations written",
                extra={
                    "pods": len(names),
                    "names": names[:LOGGED_NAMES],
                    "more": max(0, len(names) - LOGGED_NAMES),
                },
            )

    def _timed(self, started_at: float) -> bool:
        return started_at >= self._started_wall - START_TIME_RESOLUTION_S

    # -- the loop ---------------------------------------------------------------------
    def run(self, stop: threading.Event, wake: threading.Event, poll_interval_s: float) -> None:
        """Reconcile every ``poll_interval_s`` and as soon as ``wake`` is set; while pods
        are being written (a burst of new pods), events are gathered for ``COALESCE_S``
        so one pass serves many of them. The first pass waits for the pod cache's first
        list, one ``poll_interval_s`` at most."""
        # the first pass needs the node's pods: a List before they are listed is wasted
        self._cache.synced.wait(poll_interval_s)
        while not stop.is_set():
            self._health.beat()
            wake.clear()
            wrote = False
            try:
                report = self.run_once(wait=False)
                wrote = bool(report.patches or report.submitted)
            except Exception:  # a bug must not stop the daemon; the next pass tries again
                log.exception("reconcile pass failed")
            if wake.wait(poll_interval_s) and not stop.is_set() and wrote:
                stop.wait(COALESCE_S)
        self._writes.stop()


def _holds_dra(report: PodResources) -> bool:
    return any(container.dynamic for container in report.containers)
