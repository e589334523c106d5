"""One strategy's run: the whole cluster as a discrete-event simulation. Pure.

The parts are the project's own cores, wired through simulated time:

* **kubelets, NRT lag** - the controller's :class:`~fakenrt.controller.fleet.Fleet` (the
  kubelet simulator admitting bound pods in bind order, Running or Failed with the
  kubelet's reason, release on completion, NRT published through each node's
  :class:`~fakenrt.controller.lag.LagPipeline`), fed pod manifests as the watch would;
* **exporter** - after ``exporter_delay`` what the node's podresources lists for each pod
  (:func:`fakenrt.podresources_report.pod_report`, the exporter's typed values for the
  facts the fake podresources server sends) is derived by
  :func:`exporter.placement.derive_placement` into the observed annotations;
* **scheduler** - every ``period`` (when some pending pod's backoff has expired) one
  :class:`~fakenrt.scheduler.cycle.SchedulingCycle` over a snapshot of the strategy's view,
  the predicted annotation written at bind, :class:`~fakenrt.scheduler.backoff.Backoff`
  for pods that fit nowhere;
* **controller of the workload** - a pod the kubelet rejected is re-created under a new
  name (``<name>-r<n>``), at most ``max_requeues`` times.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
    parse_memory_groups,
    parse_placement,
)
from exporter.placement import annotation_values, derive_placement
from exporter.pods import pod_view
from fakenrt.controller.effects import (
    CreatePod,
    Effect,
    PatchPodStatus,
    PublishNrt,
    ServePodResources,
)
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.pods import RUN_DURATION_ANNOTATION, ObservedPod, observe_pod
from fakenrt.controller.settings import ControllerSettings
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.podresources_report import DeviceNuma, allocation_zones, device_numa, pod_report
from fakenrt.podspec import PodSpec, effective_requests, pod_from_manifest, qos_class
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.resources import node_allocatable
from fakenrt.scheduler.admission_order import AdmissionQueues, only_barred
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot
from fakenrt.scheduler.clusterbooks import ClusterBooks
from fakenrt.scheduler.cycle import Decision, SchedulingCycle, pod_shape
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod
from fakenrt.scheduler.topology import NumaTopology
from fakenrt.simulate.clock import ARRIVAL, CYCLE, EXPORT, SAMPLE, Clock, EventQueue
from fakenrt.simulate.collector import fewer_collections
from fakenrt.simulate.dra import DraGpus
from fakenrt.simulate.limits import MAX_ATTEMPTS, LimitError
from fakenrt.simulate.metrics import Recorder, StrategyResult, summarize
from fakenrt.simulate.nrtview import NrtView
from fakenrt.simulate.outcomes import (
    COMPLETED,
    DROPPED,
    PENDING,
    RUNNING,
    STARTING,
    Outcomes,
    PodOutcome,
    Rejection,
)
from fakenrt.simulate.parking import Batch, ParkingLot
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.strategies import (
    SEES_ALL,
    SEES_PREDICTED,
    VIEW_NONE,
    VIEW_PUBLISHED,
    VIEW_TRUTH,
    Strategy,
)
from fakenrt.simulate.workload import GPU, WorkItem

#: Utilization / stranded-GPU samples per run.
SAMPLES = 240
#: Lease and status timers of the fleet are pushed beyond any horizon.
_NEVER = 1e15

Progress = Callable[[float], None]


@dataclass(eq=False, slots=True)
class _PodLog:
    """What happened so far to one workload pod (all its Pod objects): frozen into a
    :class:`~fakenrt.simulate.outcomes.PodOutcome` at the horizon."""

    item: int
    pod: str
    arrived: float
    gpus: int
    attempts: int = 0
    binds: int = 0
    node: str = ""
    first_bound: float | None = None
    started: float | None = None
    finished: float | None = None
    gpu_seconds: float = 0.0
    zones: tuple[int, ...] | None = None
    dropped: bool = False
    #: Its newest Pod object.
    current: PodRecord | None = None


@dataclass(eq=False)
class PodRecord:
    """One Pod object of the simulated API server (a re-created pod is a new record)."""

    item: WorkItem
    log: _PodLog
    spec: PodSpec
    uid: str
    created: float
    attempt: int
    gpus: int
    phase: str = "Pending"
    node: str = ""
    #: The predicted annotations written at bind (None: the strategy predicts nothing).
    predicted: dict[str, str] | None = None
    observed: dict[str, str] = field(default_factory=dict)
    started: float | None = None
    next_try: float = 0.0
    #: The pod as the controller core saw it bound.
    seen: ObservedPod | None = None
    shape: str = ""
    key: str = ""

    def __post_init__(self) -> None:
        self.key = self.spec.key


@dataclass(eq=False)
class _ForeignRecord:
    """A foreign pod (:mod:`fakenrt.kubelet.foreign`) the controller core created on the
    simulated API server: bound to its node from the start, never scheduled."""

    key: str
    node: str
    uid: str
    spec: PodSpec
    manifest: dict[str, Any]
    shape: str
    phase: str = "Pending"
    predicted: None = None
    observed: dict[str, str] = field(default_factory=dict)


_Place = tuple[int, float, str]


def _order(record: PodRecord) -> _Place:
    """A pending pod's place in the scheduling queue: priority, then creation."""
    return (-record.item.priority, record.created, record.uid)


@lru_cache(maxsize=1 << 16)
def _zone_set(placement: str, groups: str) -> frozenset[int]:
    """The zones a pod holds something in, by the values of a placement + memory-groups
    pair (the same few values recur on many pods)."""
    zones = {z.numa_id for z in parse_placement(placement) if any(z.amounts.values())}
    for group in parse_memory_groups(groups) or ():
        if len(group.numa_ids) > 1:
            zones |= set(group.numa_ids)
    return frozenset(zones)


def _zones(annotations: Mapping[str, str], placement_key: str, groups_key: str) -> frozenset[int]:
    """The zones a pod holds something in, by a placement + memory-groups pair."""
    return _zone_set(annotations.get(placement_key, "[]"), annotations.get(groups_key, "[]"))


def _predicted_zones(predicted: Mapping[str, str]) -> frozenset[int]:
    return _zones(predicted, PREDICTED_PLACEMENT, PREDICTED_MEMORY_GROUPS)


def _observed_zones(observed: Mapping[str, str]) -> frozenset[int]:
    return _zones(observed, OBSERVED_PLACEMENT, OBSERVED_MEMORY_GROUPS)


class Simulation:
    def __init__(
        self,
        *,
        scenario: Scenario,
        strategy: Strategy,
        progress: Progress | None = None,
        shortcuts: bool = True,
    ) -> None:
        self.scenario = scenario
        #: Reuse evaluations and decide known failures without a cycle (False: the slow
        #: reference the tests compare with; results are identical).
        self.shortcuts = shortcuts
        self.strategy = strategy
        #: ``strategy.reads_lagged_nrt``, read every cycle.
        self.reads_lagged_nrt = strategy.reads_lagged_nrt
        self.settings = s = scenario.settings
        self.progress = progress
        self.horizon = scenario.horizon
        self.clock = Clock()
        self.events: EventQueue[Any] = EventQueue()
        self.rec = Recorder()
        self.plugin = NumaPlugin(strategy.plugin_args(s.plugin))
        self.truth_plugin = NumaPlugin(replace(s.plugin, reconstruct_available=False))
        #: Every node's books as the strategy sees them, kept between cycles and rebuilt
        #: node by node (None without shortcuts: every cycle built from scratch).
        self.books = ClusterBooks(self.plugin, reserve=strategy.reserve) if shortcuts else None
        self.backoff = Backoff()
        self.profiles: dict[str, NodeProfile] = {p.name: p for p in scenario.nodes}
        self.names = tuple(sorted(self.profiles))
        #: Each node's NRT as typed values (no rendering and parsing per change).
        self._views = {n: NrtView(p) for n, p in self.profiles.items()}
        self._requests: dict[str, Mapping[str, Decimal]] = {}
        self._images: dict[str, dict[str, str]] = {}
        self._expected: dict[tuple[str, bool], frozenset[str]] = {}
        #: Nodes whose view or pods changed since the books last saw them.
        self._changed: set[str] = set(self.names) if shortcuts else set()
        #: Failed attempts evaluated one by one (bounded by MAX_ATTEMPTS; a parked batch's
        #: attempts cost one check for the batch, so they count in the figures only).
        self._evaluated_failures = 0
        controller = ControllerSettings(
            seed=s.seed,
            start_delay=s.start_delay,
            nrt_delay=s.nrt_delay,
            nrt_jitter=s.nrt_jitter,
            nrt_refresh=0.0,
            lease_renew_interval=_NEVER,
            node_status_interval=0.0,
        )
        self.fleet = Fleet(
            [(p, NodeIdentity(p.name, i)) for i, p in enumerate(scenario.nodes)],
            controller,
            clock=self.clock,
        )
        self.allocatable = {
            n: {k: Decimal(v) for k, v in node_allocatable(p).items()}
            for n, p in self.profiles.items()
        }
        #: The DRA mode (fakenrt/simulate/dra.py): DRA GPUs counted as the node's GPUs.
        self.dra = DraGpus(self.profiles) if s.dra else None
        if self.dra is not None:
            self.dra.count_in(self.allocatable)
        self.total_gpus = sum(int(a.get(GPU, 0)) for a in self.allocatable.values())
        self.gpus_used: dict[str, int] = dict.fromkeys(self.names, 0)
        self.gpus_in_use = 0
        self._since = 0.0
        self.cpu_maps = {
            n: {cpu: z.id for z in p.zones for cpu in z.cpus} for n, p in self.profiles.items()
        }
        self.device_numa: dict[str, DeviceNuma] = {
            n: device_numa(p) for n, p in self.profiles.items()
        }
        self.memory_static = {
            n: p.kubelet.memory_manager_policy == "Static" for n, p in self.profiles.items()
        }
        # The API server's pods: pending ones, and bound ones not yet terminal; the foreign
        # pods the controller core creates (a profile's foreign capacity).
        self.pending: dict[str, PodRecord] = {}
        self.bound: dict[str, PodRecord] = {}
        self.foreign: dict[str, _ForeignRecord] = {}
        #: What each node's podresources serves (the fleet's latest ServePodResources).
        self._served_allocations: dict[str, tuple[PodAllocation, ...]] = {}
        self.members: dict[str, dict[str, NodePod]] = {n: {} for n in self.names}
        self._node_pods: dict[str, tuple[NodePod, ...]] = dict.fromkeys(self.names, ())
        self._dirty_pods: set[str] = set()
        self._uids = 0
        # NRT as published (the lagged view) and the kubelet's truth (rendered lazily).
        self.published: dict[str, NumaTopology] = {}
        self.truth: dict[str, NumaTopology] = {}
        self._truth_dirty: set[str] = set(self.names)
        self._snapshots: dict[str, NodeSnapshot] = {}
        self._snapshot_dirty: set[str] = set(self.names)
        self._nodes: tuple[NodeSnapshot, ...] = ()
        #: Nodes whose published NRT lags the kubelet -> since when.
        self.stale_since: dict[str, float] = {}
        self._export_due: set[str] = set()
        self._stranded_memo: dict[str, tuple[NumaTopology, dict[str, bool]]] = {}
        self._cycle_tick: int | None = None
        self._last_tick = -1
        # Pending pods by next attempt: (next_try, sequence, pod key).
        self._retries: list[tuple[float, int, str]] = []
        self._sequence = 0
        # Parked pods (see _unpark), by next attempt.
        self._parked: ParkingLot[PodRecord] = ParkingLot()
        # Per workload pod, in arrival order, and every rejection: the run's outcomes.
        self._logs: list[_PodLog] = []
        self._rejections: list[Rejection] = []

    # ---- the run ----------------------------------------------------------------------

    def run(self) -> StrategyResult:
        self._apply(self.fleet.start([]))
        # The start publishes every node's NRT and serves its (empty) podresources: in sync.
        self.stale_since = {}
        for index, item in enumerate(self.scenario.workload):
            if item.at <= self.horizon:
                self.events.push(item.at, ARRIVAL, index)
        step = self.horizon / SAMPLES if self.horizon > 0 else 0.0
        if step > 0:
            for i in range(SAMPLES + 1):
                self.events.push(i * step, SAMPLE, None)
        while True:
            due_events = self.events.next_due()
            due_fleet = self.fleet.next_due()
            t = min(x for x in (due_events, due_fleet, float("inf")) if x is not None)
            if t > self.horizon or t == float("inf"):
                break
            self.clock.now = t
            if due_fleet is not None and due_fleet <= t:
                self._apply(self.fleet.advance())
                continue
            _, kind, payload = self.events.pop()
            if kind == EXPORT:
                self._observe(payload)
            elif kind == ARRIVAL:
                self._first_arrival(payload)
            elif kind == CYCLE:
                self._cycle()
            elif kind == SAMPLE:
                self._sample()
        self.clock.now = self.horizon
        self._integrate()
        return summarize(
            self.strategy.name,
            self.rec,
            total_gpus=self.total_gpus,
            horizon=self.horizon,
            pending_at_end=len(self.pending),
            running_at_end=sum(1 for r in self.bound.values() if r.phase == "Running"),
            reads_lagged_nrt=self.strategy.reads_lagged_nrt,
            predicts=self.strategy.predicts,
            outcomes=self._outcomes(),
            dra=None if self.dra is None else self.dra.figures(),
        )

    def _outcomes(self) -> Outcomes:
        """Every arrived workload pod's fate at the horizon, and every rejection."""
        pods = []
        for log in self._logs:
            record = log.current
            if log.dropped:
                fate = DROPPED
            elif log.finished is not None:
                fate = COMPLETED
            elif record is not None and record.phase == "Running":
                fate = RUNNING
                log.gpu_seconds += log.gpus * (self.horizon - (log.started or 0.0))
            elif record is not None and record.key in self.bound:
                fate = STARTING
            else:
                fate = PENDING
            pods.append(
                PodOutcome(
                    item=log.item,
                    pod=log.pod,
                    arrived=log.arrived,
                    fate=fate,
                    gpus=log.gpus,
                    attempts=log.attempts,
                    binds=log.binds,
                    node=log.node,
                    first_bound=log.first_bound,
                    started=log.started,
                    finished=log.finished,
                    gpu_seconds=log.gpu_seconds,
                    zones=log.zones or (),
                )
            )
        return Outcomes(pods=tuple(pods), rejections=tuple(self._rejections))

    # ---- workload ---------------------------------------------------------------------

    def _first_arrival(self, index: int) -> None:
        item = self.scenario.workload[index]
        log = _PodLog(item=index, pod=item.key, arrived=self.clock.now, gpus=item.gpus)
        self._logs.append(log)
        self._arrive(item, log, 0)

    def _arrive(self, item: WorkItem, log: _PodLog, attempt: int) -> None:
        spec = (
            item.spec if attempt == 0 else replace(item.spec, name=f"{item.spec.name}-r{attempt}")
        )
        self._uids += 1
        log.attempts += 1
        record = PodRecord(
            item=item,
            log=log,
            spec=spec,
            uid=f"sim-{self._uids:08d}",
            created=self.clock.now,
            attempt=attempt,
            gpus=item.gpus,
            next_try=self.clock.now,
            shape=item.shape,
        )
        log.current = record
        log.zones = None
        self.pending[record.key] = record
        self._retry_at(record)
        self._arm_cycle(self.clock.now)

    def _seen(self, record: PodRecord, node: str) -> ObservedPod:
        """The bound pod as the controller core's watch reads it (``observe_pod`` of the
        Pod object :meth:`_manifest` describes), made from the values at hand."""
        annotations = {RUN_DURATION_ANNOTATION: format(record.item.duration, ".3f")}
        if record.predicted is not None:
            annotations.update(record.predicted)
        spec = replace(record.spec, uid=record.uid, node_name=node, annotations=annotations)
        images = self._images.get(record.item.key)
        if images is None:
            raw = record.item.manifest["spec"]
            images = self._images[record.item.key] = {
                str(c.get("name")): str(c.get("image") or "")
                for c in (*(raw.get("initContainers") or ()), *(raw.get("containers") or ()))
            }
        return ObservedPod(
            namespace=spec.namespace,
            name=spec.name,
            uid=record.uid,
            node=node,
            phase=record.phase,
            deleting=False,
            created=0.0,
            spec=spec,
            run_duration=annotations[RUN_DURATION_ANNOTATION],
            images=images,
        )

    def _manifest(self, record: PodRecord, node: str) -> dict[str, Any]:
        """The Pod object of a bound pod, as the API server shows it."""
        base = record.item.manifest
        meta = dict(base.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        annotations[RUN_DURATION_ANNOTATION] = format(record.item.duration, ".3f")
        if record.predicted is not None:
            annotations.update(record.predicted)
        meta.update(
            name=record.spec.name,
            namespace=record.spec.namespace,
            uid=record.uid,
            annotations=annotations,
        )
        return {
            **base,
            "metadata": meta,
            "spec": {**base["spec"], "nodeName": node},
            "status": {"phase": record.phase, "qosClass": str(qos_class(record.spec))},
        }

    # ---- scheduling -------------------------------------------------------------------

    def _next_tick(self, earliest: float) -> int:
        """The first period tick at or after ``earliest`` that has not run yet."""
        return max(int(-(-earliest // self.settings.period)), self._last_tick + 1)

    def _arm_cycle(self, earliest: float) -> None:
        tick = self._next_tick(earliest)
        if self._cycle_tick is None or tick < self._cycle_tick:
            self._cycle_tick = tick
            self.events.push(tick * self.settings.period, CYCLE, tick)

    def _cycle(self) -> None:
        tick = round(self.clock.now / self.settings.period)
        if tick != self._cycle_tick:
            return  # superseded by an earlier cycle
        self._cycle_tick = None
        quiet: float | None = None
        while True:
            self._last_tick = tick
            if self._parked_only(self.clock.now):
                if quiet is None:
                    quiet = self._quiet_until()
                self._parked_run(quiet)
            elif not self._tick(self.clock.now):
                quiet = None  # a bind may have set a timer or queued an event
            if not self.pending:
                return
            earliest = self._earliest_retry()
            if earliest is None:
                return
            # The next cycle runs right here when nothing else is due before it (no event,
            # no timer of the fleet): the run loop would do nothing else in between.
            tick = self._next_tick(earliest)
            at = tick * self.settings.period
            if quiet is None:
                quiet = self._quiet_until()
            if at > self.horizon or not at < quiet:
                self._arm_cycle(earliest)
                return
            self.clock.now = at

    def _parked_only(self, now: float) -> bool:
        """The tick at ``now`` when only parked pods come due, their shapes still fitting
        nowhere and the books up to date: counted as :meth:`_tick` counts it - the cycle,
        the stale NRT reads, the batches' attempts - and the batches moved on, without the
        general tick's queue and cycle. False (nothing done): the general tick must run."""
        if self.books is None or self._changed:
            return False
        retry = self._next_retry()
        if retry is not None and retry <= now:
            return False
        due = self._parked.due(now)
        if not due or not self._still_nowhere(due):
            return False
        self._count_parked(due, now)
        return True

    def _parked_run(self, quiet: float) -> None:
        """After a parked-only tick, the ticks that follow before ``quiet`` while they are
        parked-only too, run as :meth:`_cycle` would run them one by one through
        :meth:`_parked_only`, without the general loop's steps between them. Nothing a
        parked-only tick does queues an attempt, changes a node or sets a timer, so the
        next attempt of a pod not parked and the books' version stay as they are. Returns
        (nothing done for it) at the first tick that is not parked-only or not here."""
        lot, retry = self._parked, self._next_retry()
        period, horizon = self.settings.period, self.horizon
        while True:
            earliest = lot.earliest()
            if earliest is None or (retry is not None and retry <= earliest):
                return
            tick = self._next_tick(earliest)
            now = tick * period
            if now > horizon or not now < quiet or (retry is not None and retry <= now):
                return
            due = lot.due(now)
            if not self._still_nowhere(due):
                return
            self.clock.now = now
            self._last_tick = tick
            self._count_parked(due, now)

    def _still_nowhere(self, due: list[Batch[PodRecord]]) -> bool:
        """Whether every shape of the due batches still fits nowhere (checked again only
        for a batch not checked since the books last moved). If not, the batches go back
        to the lot untouched and False."""
        books = self.books
        assert books is not None
        moves = books.moves
        for batch in due:
            if batch.verified != moves:
                if not all(books.fits_nowhere(m[0].spec, s) for s, m in batch.shapes.items()):
                    self._parked.restore(due)
                    return False
                batch.verified = moves
        return True

    def _count_parked(self, due: list[Batch[PodRecord]], now: float) -> None:
        """A tick at ``now`` at which only the due parked batches were attempted, each of
        their shapes fitting nowhere: counted as a cycle, and the batches moved on."""
        self.rec.cycles += 1
        if self.reads_lagged_nrt:
            self._count_staleness(now)
        self._fail_parked(due, now)

    def _quiet_until(self) -> float:
        """When the run loop next has something other than a cycle to do (an event or a
        timer of the fleet); infinity when nothing is due."""
        due = [x for x in (self.events.next_due(), self.fleet.next_due()) if x is not None]
        return min(due, default=float("inf"))

    def _tick(self, now: float) -> bool:
        """One scheduling cycle at ``now``: the pods whose attempt is due, in the queue's
        order. True when it only counted failed attempts (no pod was scheduled)."""
        # ``next_try`` is the backoff's deadline for the pod (``Backoff.failed``).
        ready = []
        while self._retries and self._retries[0][0] <= now:
            at, _, key = heapq.heappop(self._retries)
            record = self.pending.get(key)
            if record is not None and record.next_try == at:
                ready.append(record)
        parked = self._parked.due(now)
        if not (ready or parked):
            return True
        self.rec.cycles += 1
        if self.reads_lagged_nrt:
            self._count_staleness(now)
        cycle = self._new_cycle()
        # Pods in the scheduling queue's order (priority, then creation).
        queue = [(_order(r), r) for r in ready]
        heapq.heapify(queue)
        self._unpark(parked, queue, None)
        # The pods this cycle binds await admission until the next snapshot, as the loop
        # sees them (fakenrt/scheduler/admission_order.py).
        queues = AdmissionQueues() if self.strategy.orders_admissions else None
        while queue:
            place, record = heapq.heappop(queue)
            if cycle is None:
                cycle = SchedulingCycle.over(self.books) if self.books else self._scratch()
            second = math.floor(record.created)
            barred = queues.barred_at(second) if queues is not None else None
            decision = cycle.schedule(record.spec, shape=record.shape, zones_barred=barred)
            if decision.node is None:
                self._unschedulable(record, now, barred=only_barred(decision.categories))
                continue
            self._bind(record, decision)
            if queues is not None and not decision.placement.empty:
                queues.bound_at(decision.node, second, record.key)
            if parked:
                self._unpark(parked, queue, place)
        self._fail_parked(parked, now)
        return False

    # A pod retried at the backoff's longest delay whose shape fits nowhere is *parked*
    # (fakenrt/simulate/parking.py): its attempts are counted in bulk with the other parked
    # pods due at the same moment, as long as its shape still fits nowhere when they come
    # up - decided as a cycle decides it (ClusterBooks.fits_nowhere: re-checked on the
    # nodes that moved since) at their place in the queue. Results are exactly those of
    # attempting each. A tick at which only such pods come due, with the books up to date,
    # is run by _parked_only alone.

    def _unpark(
        self,
        parked: list[Batch[PodRecord]],
        queue: list[tuple[_Place, PodRecord]],
        after: _Place | None,
    ) -> None:
        """Due parked pods whose shape may fit now join the queue (those after ``after``,
        the place of the last bind: the ones before it were attempted while the shape
        still fitted nowhere)."""
        books = self.books
        if books is None:
            return
        for batch in parked:
            for shape, members in list(batch.shapes.items()):
                if books.fits_nowhere(members[0].spec, shape):
                    continue
                batch.verified = batch.counted = None
                stay = []
                for record in members:
                    place = _order(record)
                    if after is not None and place < after:
                        stay.append(record)
                    else:
                        record.next_try = batch.next_try
                        heapq.heappush(queue, (place, record))
                if stay:
                    batch.shapes[shape] = stay
                else:
                    del batch.shapes[shape]

    def _fail_parked(self, parked: list[Batch[PodRecord]], now: float) -> None:
        """Parked pods attempted in this cycle while their shape fitted nowhere: counted,
        and parked again for their next attempt."""
        for batch in parked:
            self.rec.unschedulable_attempts += batch.size()
            self._parked.repark(batch, now + self.backoff.maximum)

    def _new_cycle(self) -> SchedulingCycle | None:
        """A cycle over the strategy's view as it is now. With the kept books: they are
        brought up to date for the nodes that changed, and the cycle over them is made when
        a pod is first scheduled (None until then); without shortcuts, built from scratch."""
        if self.books is None:
            return self._scratch()
        pods = self._pods_by_node()
        for name in self._changed:
            self.books.set_node(self._snapshot(name), pods[name])
        self._changed.clear()
        return None

    def _scratch(self) -> SchedulingCycle:
        """A cycle built from scratch, evaluating every pod on every node (no shortcuts)."""
        return SchedulingCycle(
            ClusterSnapshot(nodes=self._node_snapshots()),
            self.plugin,
            reserve=self.strategy.reserve,
            reuse=False,
            node_pods=self._pods_by_node(),
        )

    def _unschedulable(self, record: PodRecord, now: float, *, barred: bool = False) -> None:
        """A failed attempt: backoff, or the next cycle for a pod kept off only by an
        admission-order bar (as the loop retries it)."""
        self.rec.unschedulable_attempts += 1
        self._evaluated_failures += 1
        self._check_attempts(now)
        if barred:
            self.backoff.forget(record.key)
            record.next_try = now + self.settings.period
            self._retry_at(record)
            return
        delay = self.backoff.failed(record.key, now)
        record.next_try = now + delay
        if self.books is not None and delay >= self.backoff.maximum:
            self._parked.park((record,), record.shape, record.next_try)
        else:
            self._retry_at(record)

    def _check_attempts(self, now: float) -> None:
        if self._evaluated_failures > MAX_ATTEMPTS:
            raise LimitError(
                f"{self.strategy.name}: more than {MAX_ATTEMPTS} failed scheduling attempts by "
                f"{now:.0f}s of simulated time; shorten the duration or add nodes"
            )

    def _retry_at(self, record: PodRecord) -> None:
        """Queue the pod's next attempt (entries of pods bound or re-timed since are
        dropped when they come up)."""
        self._sequence += 1
        heapq.heappush(self._retries, (record.next_try, self._sequence, record.key))

    def _next_retry(self) -> float | None:
        """The next attempt of a pending pod that is not parked (entries of pods bound or
        re-timed since are dropped on the way)."""
        while self._retries:
            at, _, key = self._retries[0]
            record = self.pending.get(key)
            if record is not None and record.next_try == at:
                return at
            heapq.heappop(self._retries)
        return None

    def _earliest_retry(self) -> float | None:
        parked, retry = self._parked.earliest(), self._next_retry()
        if retry is None:
            return parked
        return retry if parked is None else min(retry, parked)

    def _bind(self, record: PodRecord, decision: Decision) -> None:
        node = decision.node
        assert node is not None
        now = self.clock.now
        del self.pending[record.key]
        self.backoff.forget(record.key)
        if self.strategy.predicts:
            record.predicted = decision.placement.annotations()
        record.node = node
        log = record.log
        log.binds += 1
        log.node = node
        if log.first_bound is None:
            log.first_bound = now
        self.rec.binds += 1
        self.rec.pending_times.append(now - record.created)
        self.bound[record.key] = record
        self._set_member(record)
        if self.dra is None:
            record.seen = self._seen(record, node)
        else:  # GPU claims, made before the pod reaches its kubelet
            manifest, claims = self.dra.bind(self._manifest(record, node), node)
            for kind, claim in claims:
                self._apply(self.fleet.claim_event(kind, claim))
            record.seen = observe_pod(manifest)
        self._apply(self.fleet.pod_seen("ADDED", record.seen))

    def _node_snapshots(self) -> tuple[NodeSnapshot, ...]:
        """Every node as the strategy sees it; the same tuple while nothing changed."""
        if self._snapshot_dirty:
            for name in self._snapshot_dirty:
                self._snapshot(name)
            self._snapshot_dirty.clear()
            self._nodes = tuple(self._snapshots[n] for n in self.names)
        return self._nodes

    def _snapshot(self, name: str) -> NodeSnapshot:
        view = self.strategy.view
        nrt: NumaTopology | None = None
        if view == VIEW_TRUTH:
            nrt = self._truth(name)
        elif view != VIEW_NONE:
            nrt = self.published[name]
        kept = self._snapshots.get(name)
        if kept is None or kept.nrt is not nrt:
            kept = self._snapshots[name] = NodeSnapshot(
                name=name, allocatable=self.allocatable[name], nrt=nrt
            )
        return kept

    def _view_changed(self, name: str) -> None:
        """The NRT the strategy sees for node ``name`` changed."""
        self._snapshot_dirty.add(name)
        if self.books is not None:
            self._changed.add(name)

    def _truth(self, name: str) -> NumaTopology:
        if name in self._truth_dirty or name not in self.truth:
            self.truth[name] = self._views[name].of(self.fleet.nodes[name].snapshot())
            self._truth_dirty.discard(name)
        return self.truth[name]

    def _count_staleness(self, now: float) -> None:
        rec = self.rec
        rec.nrt_reads += len(self.names)
        # Summed in the same order as one addition per node (floats: the order counts).
        total, top = rec.stale_age_sum, rec.stale_age_max
        for since in self.stale_since.values():
            age = now - since
            total += age
            top = max(top, age)
        rec.stale_reads += len(self.stale_since)
        rec.stale_age_sum, rec.stale_age_max = total, top

    # ---- the scheduler's view of bound pods ------------------------------------------

    def _set_member(self, record: PodRecord | _ForeignRecord) -> None:
        """The pod as the strategy sees it on its node: its spec with the annotations the
        strategy reads. (Members are never terminal - terminal pods are dropped - so their
        phase changes nothing the books read: an unchanged view is left as it is.)"""
        sees = self.strategy.sees
        annotations: dict[str, str] = {}
        if sees in (SEES_PREDICTED, SEES_ALL) and record.predicted is not None:
            annotations.update(record.predicted)
        if sees == SEES_ALL:
            annotations.update(record.observed)
        kept = self.members[record.node].get(record.key)
        if kept is not None and kept.spec.annotations == annotations:
            return
        spec = replace(record.spec, node_name=record.node, annotations=annotations)
        self.members[record.node][record.key] = NodePod(
            spec=spec, phase=record.phase, requests=self._shape_requests(record.shape, record.spec)
        )
        self._touch(record.node)

    def _shape_requests(self, shape: str, spec: PodSpec) -> Mapping[str, Decimal]:
        """The effective requests of a pod of ``shape`` (``spec``: one of them), the same
        for every pod of the shape."""
        requests = self._requests.get(shape)
        if requests is None:
            requests = self._requests[shape] = effective_requests(spec)
        return requests

    def _drop_member(self, record: PodRecord) -> None:
        self.members[record.node].pop(record.key, None)
        self._touch(record.node)

    def _touch(self, name: str) -> None:
        """The pods on node ``name`` (or their phase or annotations) changed."""
        self._dirty_pods.add(name)
        if self.books is not None:
            self._changed.add(name)

    def _pods_by_node(self) -> dict[str, tuple[NodePod, ...]]:
        for name in self._dirty_pods:
            self._node_pods[name] = tuple(self.members[name].values())
        self._dirty_pods.clear()
        return self._node_pods

    # ---- the fleet's effects ----------------------------------------------------------

    def _apply(self, effects: list[Effect]) -> None:
        finished: list[PodRecord] = []
        created: list[_ForeignRecord] = []
        for effect in effects:
            if isinstance(effect, PatchPodStatus):
                key = f"{effect.namespace}/{effect.name}"
                record = self.bound.get(key)
                if (
                    record is not None
                    and record.uid == effect.uid
                    and self._status(record, effect.status)
                ):
                    finished.append(record)
                foreign = self.foreign.get(key)
                if foreign is not None and foreign.uid == effect.uid:
                    self._foreign_status(foreign, effect.status)
            elif isinstance(effect, PublishNrt):
                self._published(effect)
            elif isinstance(effect, ServePodResources):
                self._served(effect)
            elif isinstance(effect, CreatePod):
                created.append(self._create(effect))
        for record in finished:
            assert record.seen is not None
            self._apply(self.fleet.pod_seen("DELETED", replace(record.seen, phase=record.phase)))
        for foreign in created:
            # The watch delivers the new pod to the controller core.
            self._apply(self.fleet.pod_event("ADDED", foreign.manifest))

    def _create(self, effect: CreatePod) -> _ForeignRecord:
        """The API server creates a foreign pod the controller core asked for."""
        self._uids += 1
        manifest = dict(effect.manifest)
        manifest["metadata"] = {**manifest["metadata"], "uid": f"sim-{self._uids:08d}"}
        spec = pod_from_manifest(manifest, source=f"foreign pod {effect.namespace}/{effect.name}")
        record = _ForeignRecord(
            key=spec.key,
            node=effect.node,
            uid=manifest["metadata"]["uid"],
            spec=spec,
            manifest=manifest,
            shape=pod_shape(spec),
        )
        self.foreign[record.key] = record
        self._set_member(record)
        return record

    def _foreign_status(self, record: _ForeignRecord, status: Mapping[str, Any]) -> None:
        phase = str(status.get("phase") or record.phase)
        if phase != record.phase:
            record.phase = phase
            record.manifest["status"] = {"phase": phase}
            self._set_member(record)

    def _integrate(self) -> None:
        now = self.clock.now
        self.rec.gpu_seconds += self.gpus_in_use * (now - self._since)
        self._since = now

    def _status(self, record: PodRecord, status: Mapping[str, Any]) -> bool:
        """Apply a status patch; True when the pod became terminal."""
        phase = status.get("phase")
        now = self.clock.now
        if phase in ("Pending", "Running") and record.log.zones is None:
            # Admitted: where its kubelet put it.
            allocation = self.fleet.nodes[record.node].state.allocation(record.key)
            if allocation is not None:
                record.log.zones = allocation_zones(
                    allocation, self.cpu_maps[record.node], self.device_numa[record.node]
                )
        if phase == "Running" and record.phase != "Running":
            record.phase = "Running"
            record.started = now
            self._integrate()
            self.gpus_in_use += record.gpus
            self.gpus_used[record.node] += record.gpus
            record.log.started = now
            if self.dra is not None:
                allocations = self.fleet.nodes[record.node].state.allocations()
                self.dra.started(record.node, record.key, allocations.get(record.key))
            self._set_member(record)
            return False
        if phase not in ("Succeeded", "Failed"):
            return False
        log = record.log
        if record.phase == "Running":
            self._integrate()
            self.gpus_in_use -= record.gpus
            self.gpus_used[record.node] -= record.gpus
            started = now if record.started is None else record.started
            log.gpu_seconds += record.gpus * (now - started)
        record.phase = str(phase)
        del self.bound[record.key]
        if self.dra is not None:
            self.dra.released(record.node, record.key)
        self._drop_member(record)
        if phase == "Succeeded":
            self.rec.completed += 1
            log.finished = now
            return True
        reason = str(status.get("reason") or "Failed")
        self.rec.failures[reason] += 1
        self._rejections.append(
            Rejection(
                item=log.item,
                pod=record.key,
                node=record.node,
                at=now,
                reason=reason,
                message=str(status.get("message") or ""),
            )
        )
        if self.settings.requeue and record.attempt < self.settings.max_requeues:
            self.rec.requeued += 1
            self._arrive(record.item, log, record.attempt + 1)
        else:
            self.rec.dropped += 1
            log.dropped = True
        return True

    def _published(self, effect: PublishNrt) -> None:
        name = effect.node
        if self.strategy.view != VIEW_PUBLISHED:
            return  # this strategy never reads the published NRT
        self.published[name] = (
            read_nrt(effect.body, source=f"NRT of {name}")
            if effect.snapshot is None
            else self._views[name].of(effect.snapshot)
        )
        self._view_changed(name)
        model = self.fleet.nodes[name]
        if self.reads_lagged_nrt and model.published == model.snapshot():
            self.stale_since.pop(name, None)

    def _served(self, effect: ServePodResources) -> None:
        """The node's allocations changed (podresources now serves the new state)."""
        name = effect.node
        self._served_allocations[name] = effect.allocations
        self._truth_dirty.add(name)
        self._stranded_memo.pop(name, None)
        if self.strategy.view == VIEW_TRUTH:
            self._view_changed(name)
        self.stale_since.setdefault(name, self.clock.now)
        if name not in self._export_due:
            self._export_due.add(name)
            self.events.push(self.clock.now + self.settings.exporter_delay, EXPORT, name)

    # ---- the exporter -----------------------------------------------------------------

    def _observe(self, name: str) -> None:
        """The node's exporter lists podresources and annotates the pods it has not yet
        observed (a pod's allocation never changes while it runs)."""
        self._export_due.discard(name)
        for allocation in self._served_allocations.get(name, ()):
            key = allocation.key
            record: PodRecord | _ForeignRecord | None = self.bound.get(key) or self.foreign.get(key)
            if record is None or record.node != name or record.observed:
                continue
            # What the node's podresources lists for the pod, as the exporter's values.
            report = pod_report(allocation, self.device_numa[name])
            expected = self._expected_memory(record, name)
            placement = derive_placement(
                report, self.cpu_maps[name], expected_memory_containers=expected
            )
            values = annotation_values(placement)
            record.observed = {k: v for k, v in values.items() if v is not None}
            if record.predicted is not None:
                self.rec.compared += 1
                if _predicted_zones(record.predicted) == _observed_zones(record.observed):
                    self.rec.agreed += 1
            self._set_member(record)

    def _expected_memory(self, record: PodRecord | _ForeignRecord, name: str) -> frozenset[str]:
        """The containers the exporter expects memory blocks from (its own rule, from the
        Pod object), the same for every pod of a shape."""
        static = self.memory_static[name]
        known = self._expected.get((record.shape, static))
        if known is None:
            manifest = (
                record.manifest
                if isinstance(record, _ForeignRecord)
                else self._manifest(record, record.node)
            )
            view = pod_view(manifest)
            known = view.expected_memory_containers(memory_manager_static=static)
            self._expected[(record.shape, static)] = known
        return known

    # ---- samples ----------------------------------------------------------------------

    def _sample(self) -> None:
        now = self.clock.now
        util = self.gpus_in_use / self.total_gpus if self.total_gpus else 0.0
        self.rec.utilization.append((now, util))
        self.rec.stranded.append((now, self._stranded()))
        if self.progress is not None and self.horizon > 0:
            self.progress(now / self.horizon)

    def _stranded(self) -> int:
        """Free GPUs on nodes where no pending GPU pod can be placed aligned (judged on the
        kubelet's true state); 0 when no GPU pod is pending."""
        shapes: dict[str, PodSpec] = {}
        for record in self.pending.values():
            if record.gpus > 0:
                shapes.setdefault(record.shape, record.spec)
        if not shapes:
            return 0
        stranded = 0
        for name in self.names:
            free = int(self.allocatable[name].get(GPU, 0)) - self.gpus_used[name]
            if free <= 0:
                continue
            if not any(self._fits_truly(name, shape, spec) for shape, spec in shapes.items()):
                stranded += free
        return stranded

    def _fits_truly(self, name: str, shape: str, spec: PodSpec) -> bool:
        topology = self._truth(name)
        kept = self._stranded_memo.get(name)
        if kept is None or kept[0] is not topology:
            kept = self._stranded_memo[name] = (topology, {})
        known = kept[1].get(shape)
        if known is None:
            requested: dict[str, Decimal] = {}
            for pod in self.members[name].values():
                assert pod.requests is not None  # members carry theirs (_set_member)
                for res, value in pod.requests.items():
                    requested[res] = requested.get(res, Decimal(0)) + value
            allocatable = self.allocatable[name]
            whole = all(
                value <= allocatable.get(res, Decimal(0)) - requested.get(res, Decimal(0))
                for res, value in self._shape_requests(shape, spec).items()
            )
            known = (
                whole
                and self.truth_plugin.filter(spec, topology, ZoneLedger.from_nrt(topology)).fit
            )
            kept[1][shape] = known
        return known


def simulate(
    scenario: Scenario, strategy: Strategy, *, progress: Progress | None = None
) -> StrategyResult:
    """Run ``scenario`` under ``strategy`` (the garbage collector paced for it:
    :mod:`fakenrt.simulate.collector`)."""
    with fewer_collections():
        return Simulation(scenario=scenario, strategy=strategy, progress=progress).run()
