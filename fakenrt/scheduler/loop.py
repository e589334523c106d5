"""The scheduler loop: snapshot -> cycle -> annotate + bind, with backoff, events and
metrics. Time comes from an injected clock; the cluster behind :class:`Cluster` is the
API server (:class:`fakenrt.scheduler.kube.KubeCluster`) or anything else with the same
four methods (a simulation)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from exporter.kubeerrors import ApiError, NotFound
from fakenrt.scheduler.admission_order import AdmissionQueues, only_barred
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.cluster import ClusterSnapshot, PodSnapshot
from fakenrt.scheduler.cycle import SchedulingCycle
from fakenrt.scheduler.metrics import SchedulerMetrics
from fakenrt.scheduler.plugin import NumaPlugin

log = logging.getLogger(__name__)

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"

Clock = Callable[[], float]

#: Longest wait between cycles while they fail (the API server unreachable).
MAX_RETRY_WAIT_S = 30.0
_API = "(api server)"


class Cluster(Protocol):
    def snapshot(self) -> ClusterSnapshot: ...

    def annotate(self, pod: PodSnapshot, annotations: Mapping[str, str]) -> None: ...

    def bind(self, pod: PodSnapshot, node: str) -> None: ...

    def record_unschedulable(self, pod: PodSnapshot, message: str) -> None: ...


@dataclass(frozen=True)
class CycleReport:
    #: pod key -> node
    bound: dict[str, str] = field(default_factory=dict)
    #: pod key -> why no node fits
    unschedulable: dict[str, str] = field(default_factory=dict)
    #: pods waiting out their backoff
    deferred: tuple[str, ...] = ()
    topology_affinity_errors: tuple[str, ...] = ()


class Scheduler:
    def __init__(
        self,
        *,
        cluster: Cluster,
        plugin: NumaPlugin,
        scheduler_name: str,
        metrics: SchedulerMetrics,
        clock: Clock,
        backoff: Backoff | None = None,
    ) -> None:
        self.cluster = cluster
        self.plugin = plugin
        self.scheduler_name = scheduler_name
        self.metrics = metrics
        self.clock = clock
        self.backoff = backoff or Backoff()
        self._first_seen: dict[str, float] = {}
        self._affinity_errors_seen: set[str] = set()

    def _watch_failures(self, snapshot: ClusterSnapshot) -> list[str]:
        """Count and log our pods the kubelet failed with ``TopologyAffinityError``, each
        once (by uid); pods that are gone are forgotten, so the set stays bounded."""
        found = []
        failed: set[str] = set()
        for pod in snapshot.pods:
            if (
                pod.scheduler_name != self.scheduler_name
                or pod.phase != "Failed"
                or pod.reason != TOPOLOGY_AFFINITY_ERROR
            ):
                continue
            ident = pod.spec.uid or pod.key
            failed.add(ident)
            if ident in self._affinity_errors_seen:
                continue
            self.metrics.topology_affinity_errors.inc()
            log.warning(
                "pod %s on node %s was rejected by the kubelet with "
                "TopologyAffinityError: the NUMA prediction disagreed with the kubelet",
                pod.key,
                pod.spec.node_name or "?",
            )
            found.append(pod.key)
        self._affinity_errors_seen = failed
        return found

    def run_cycle(self) -> CycleReport:
        """One cycle: read the cluster, schedule every pending pod whose backoff expired."""
        now = self.clock()
        snapshot = self.cluster.snapshot()
        errors = self._watch_failures(snapshot)
        cycle = SchedulingCycle(snapshot, self.plugin)
        queues = AdmissionQueues(snapshot.pods)
        pending = snapshot.pending(self.scheduler_name)
        keys = {p.key for p in pending}
        self.backoff.keep_only(keys)
        for key in [k for k in self._first_seen if k not in keys]:
            del self._first_seen[key]
        bound: dict[str, str] = {}
        unschedulable: dict[str, str] = {}
        deferred: list[str] = []
        for pod in pending:
            self._first_seen.setdefault(pod.key, now)
            if not self.backoff.ready(pod.key, now):
                deferred.append(pod.key)
                continue
            decision = cycle.schedule(pod.spec, zones_barred=queues.barred(pod))
            for category in decision.categories.values():
                self.metrics.filter_rejections.labels(category).inc()
            if decision.node is None:
                self.metrics.unschedulable.inc()
                if only_barred(decision.categories):
                    self.backoff.forget(pod.key)  # retried next cycle: the bar is transient
                    delay = 0.0
                else:
                    delay = self.backoff.failed(pod.key, now)
                unschedulable[pod.key] = decision.message
                log.info(
                    "pod %s fits nowhere (retry in %.1fs): %s", pod.key, delay, decision.message
                )
                try:
                    self.cluster.record_unschedulable(pod, decision.message)
                except ApiError as exc:
                    log.warning("could not record event: %s", exc)
                continue
            try:
                self.cluster.annotate(pod, decision.placement.annotations())
                self.cluster.bind(pod, decision.node)
            except NotFound:
                cycle.forget(decision)
                self.backoff.forget(pod.key)
                continue
            except ApiError as exc:
                cycle.forget(decision)
                self.backoff.failed(pod.key, now)
                log.warning("bind of %s to %s failed: %s", pod.key, decision.node, exc)
                continue
            self.metrics.binds.inc()
            self.metrics.bind_latency.observe(max(self.clock() - self._first_seen.pop(pod.key), 0))
            self.backoff.forget(pod.key)
            bound[pod.key] = decision.node
            if not decision.placement.empty:
                queues.bound(decision.node, pod)
            log.info(
                "bound %s to %s zones=%s scores=%s",
                pod.key,
                decision.node,
                list(decision.placement.zones),
                dict(decision.scores.values),
            )
        # What the nodes the cycle examined showed (a node's books are built when a pod is
        # first examined there).
        for problem in cycle.problems():
            log.warning("reconstruction: %s", problem)
        for node, unplaced in cycle.unplaced().items():
            # Appendix A: pods with no placement are not guessed; with an exporter this
            # should only last from bind to first observation.
            log.debug("node %s: pods without a placement annotation: %s", node, ", ".join(unplaced))
        return CycleReport(
            bound=bound,
            unschedulable=unschedulable,
            deferred=tuple(deferred),
            topology_affinity_errors=tuple(errors),
        )

    def run(
        self, stop: threading.Event, *, period: float, wake: threading.Event | None = None
    ) -> None:
        """Cycle until ``stop`` is set: every ``period`` seconds, or sooner when ``wake`` is
        set (a watch saw a pod change). A failing cycle (the API server unreachable or
        refusing) is retried with exponential backoff from ``period`` up to
        :data:`MAX_RETRY_WAIT_S`; the first failure of a run of failures is logged as a
        warning, the others at debug level, and the recovery once."""
        retry = Backoff(initial=period, maximum=max(period, MAX_RETRY_WAIT_S))
        while not stop.is_set():
            delay = period
            try:
                self.run_cycle()
            except ApiError as exc:
                delay = retry.failed(_API, self.clock())
                if retry.failures(_API) == 1:
                    log.warning(
                        "cycle failed: %s; retrying with backoff (up to %.0fs), quietly until "
                        "a cycle succeeds",
                        exc,
                        retry.maximum,
                    )
                else:
                    log.debug("cycle failed again (retry in %.1fs): %s", delay, exc)
            else:
                if retry.failures(_API):
                    log.warning("cycle succeeded after %d failed cycles", retry.failures(_API))
                    retry.forget(_API)
            if wake is not None:
                wake.wait(delay)
                wake.clear()
            else:
                stop.wait(delay)
