"""The exporter's DRA view across passes: where each allocated DRA device sits, and which
of the node's pods run misaligned - the metrics, one log line and one Event per pod.

The reconciler asks :meth:`DraObserver.numa` while it derives a pod's placement and
:meth:`DraObserver.misalignments` for the pod (both pure given the node's slices), then
hands every pod of a full pass to :meth:`DraObserver.observe_pass`, which

* sets ``numa_exporter_dra_devices{rule}`` (the pass's devices by the rule that placed
  them), ``numa_exporter_dra_pod_misaligned{namespace,pod}`` (one series per misaligned
  pod, removed when it is aligned again or gone) and ``numa_exporter_dra_misaligned_pods``;
* logs a warning naming a pod when it becomes misaligned (once while it stays so), and
  an info line when a pod still listed is aligned again;
* records one ``DRAMisaligned`` Event per pod (by uid, also across a pod's passing
  absences) through ``record_event``, which must not block (the daemon queues it on a
  write worker).

A device's answer is kept until the node's slices change (``generation``), so sysfs is
read once per PCI device, not once per pass; the rule that answered is logged at debug
the first time.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from exporter.dra_alignment import Misalignment, pod_misalignments
from exporter.dra_numa import RULES, DeviceKey, DeviceNuma
from exporter.metrics import ExporterMetrics
from exporter.pods import PodView
from exporter.resources import ClaimDevice, PodResources

log = logging.getLogger(__name__)

#: The containers named in a pod's log line and Event message (the rest are counted).
DESCRIBED_CONTAINERS = 4
#: The uids remembered as having their Event (a uid is never reused; the oldest go first).
MAX_EVENTED = 4096


@dataclass(frozen=True)
class PodObservation:
    """One pod of a full pass: its API view, its podresources report and what
    :meth:`DraObserver.misalignments` found."""

    pod: PodView
    report: PodResources
    misaligned: tuple[Misalignment, ...]


def describe(pod: PodView, found: tuple[Misalignment, ...]) -> str:
    """One sentence naming the pod, its misaligned devices and the NUMA nodes."""
    parts = [m.describe() for m in found[:DESCRIBED_CONTAINERS]]
    more = len(found) - DESCRIBED_CONTAINERS
    if more > 0:
        parts.append(f"{more} more container{'s' if more > 1 else ''}")
    return (
        f"pod {pod.key} runs misaligned: {'; '.join(parts)} "
        "(the kubelet aligns DRA devices with nothing; a matchAttribute constraint on "
        "resource.kubernetes.io/numaNode aligns them at allocation)"
    )


class DraObserver:
    def __init__(
        self,
        *,
        locate: Callable[[ClaimDevice], DeviceNuma],
        generation: Callable[[], int],
        metrics: ExporterMetrics,
        record_event: Callable[[PodView, str], None] | None = None,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self._locate = locate
        self._ready = ready
        self._generation = generation
        self._metrics = metrics
        self._record_event = record_event
        self._lock = threading.Lock()
        self._answers: dict[DeviceKey, DeviceNuma] = {}
        self._answered_generation = -1
        #: uid -> (namespace, name) of the pods misaligned in the last pass
        self._misaligned: dict[str, tuple[str, str]] = {}
        #: uids of the pods an Event was recorded for, oldest first (bounded)
        self._evented: dict[str, None] = {}
        for rule in RULES:
            metrics.dra_devices.labels(rule).set(0)
        metrics.dra_misaligned_pods.set(0)

    def ready(self) -> bool:
        """Whether DRA devices can be placed: the node's slices were listed (or the API
        answered that it serves none, or refused): before, a DRA device would be left
        out of a placement that is then written."""
        return self._ready()

    @property
    def generation(self) -> int:
        """Changes whenever the node's slices change: placements derived before are stale."""
        return self._generation()

    def locate(self, device: ClaimDevice) -> DeviceNuma:
        key = (device.driver, device.pool, device.device)
        generation = self._generation()
        with self._lock:
            if generation != self._answered_generation:
                self._answers.clear()
                self._answered_generation = generation
            answer = self._answers.get(key)
        if answer is not None:
            return answer
        answer = self._locate(device)
        with self._lock:
            self._answers[key] = answer
        log.debug(
            "DRA device placed",
            extra={
                "device": "/".join(key),
                "numa_node": answer.numa,
                "rule": answer.rule,
                "source": answer.source,
            },
        )
        return answer

    def numa(self, device: ClaimDevice) -> int | None:
        return self.locate(device).numa

    def misalignments(
        self, report: PodResources, cpu_to_numa: Mapping[int, int]
    ) -> tuple[Misalignment, ...]:
        return pod_misalignments(report, cpu_to_numa, self.numa)

    def observe_pass(self, pods: Iterable[PodObservation]) -> None:
        """A full pass's pods (each listed by the kubelet, known to the API, not
        terminal): metrics, log lines and Events as the module docstring says."""
        rules: Counter[str] = Counter()
        counted: set[tuple[str, str, str, str | None]] = set()
        now: dict[str, tuple[PodView, tuple[Misalignment, ...]]] = {}
        listed: set[str] = set()
        for item in pods:
            listed.add(item.pod.uid)
            for container in item.report.containers:
                for claim in container.dynamic:
                    for device in claim.devices:
                        key = (device.driver, device.pool, device.device, device.share_id)
                        if key not in counted:
                            counted.add(key)
                            rules[self.locate(device).rule] += 1
            if item.misaligned:
                now[item.pod.uid] = (item.pod, item.misaligned)
        for rule in RULES:
            self._metrics.dra_devices.labels(rule).set(rules[rule])

        for uid, (namespace, name) in self._misaligned.items():
            if uid not in now:
                self._metrics.dra_pod_misaligned.remove(namespace, name)
                if uid in listed:
                    log.info("pod no longer runs misaligned", extra={"pod": f"{namespace}/{name}"})
        for uid, (pod, found) in now.items():
            self._metrics.dra_pod_misaligned.labels(pod.namespace, pod.name).set(1)
            if uid in self._misaligned:
                continue
            message = describe(pod, found)
            log.warning(message, extra={"pod": pod.key, "uid": uid})
            if self._record_event is not None and uid not in self._evented:
                self._evented[uid] = None
                while len(self._evented) > MAX_EVENTED:
                    del self._evented[next(iter(self._evented))]
                self._record_event(pod, message)
        self._misaligned = {uid: (p.namespace, p.name) for uid, (p, _) in now.items()}
        self._metrics.dra_misaligned_pods.set(len(now))
