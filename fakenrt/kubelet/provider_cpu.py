"""The CPU manager's static policy as a hint provider. Pure.

Mirrors ``pkg/kubelet/cm/cpumanager/policy_static.go``:

* only containers of Guaranteed pods with a whole number of CPUs get exclusive CPUs
  (``guaranteedCPUs``); anything else has no NUMA preference (no hints);
* hints (``generateCPUTopologyHints``): every NUMA mask with enough free CPUs - free
  meaning the shared pool minus ``reservedSystemCPUs`` plus the CPUs the pod's init
  containers hold (all of which must lie inside the mask) - preferred when its width
  equals the fewest NUMA nodes whose CPUs *including reserved and allocated ones* could
  hold the request;
* allocation (``allocateCPUs``): first as many CPUs as possible from the hint's NUMA
  nodes, then the rest from anywhere, each time picked by
  :func:`~fakenrt.kubelet.cpu_assignment.take_by_topology`;
* reuse (``updateCPUsToReuse``): CPUs of a regular init container may be handed again to
  later containers of the same pod; a sidecar's or an app container's CPUs may not.
"""

from __future__ import annotations

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.cpu_assignment import CpuAllocationError, take_by_topology
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.provider import AllocationError
from fakenrt.kubelet.quantities import is_integral, value
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.podspec import ContainerSpec, PodSpec, QOSClass, pod_level, qos_class

RESOURCE = "cpu"


def guaranteed_cpus(pod: PodSpec, container: ContainerSpec, qos: QOSClass | None = None) -> int:
    """Exclusive CPUs the container gets: its whole-number CPU request in a Guaranteed pod."""
    if (qos or qos_class(pod)) is not QOSClass.GUARANTEED:
        return 0
    amount = container.requests.get(RESOURCE)
    if amount is None or not is_integral(amount):
        return 0
    return value(amount)


def pod_guaranteed_cpus(pod: PodSpec, qos: QOSClass | None = None) -> int:
    """``podGuaranteedCPUs``: the larger of the busiest init step (sidecars started so far
    plus one regular init container) and all app containers plus all sidecars."""
    qos = qos or qos_class(pod)
    totals = pod_level(
        ((c.restartable, {RESOURCE: guaranteed_cpus(pod, c, qos)}) for c in pod.init_containers),
        ({RESOURCE: guaranteed_cpus(pod, c, qos)} for c in pod.containers),
    )
    return totals.get(RESOURCE, 0)


def generate_hints(
    topo: CpuTopology, available: frozenset[int], reusable: frozenset[int], request: int
) -> tuple[TopologyHint, ...]:
    """``generateCPUTopologyHints``."""
    nodes = topo.numa_nodes()
    min_width = len(nodes)
    total_per_node = {n: len(topo.numa_cpus[n]) for n in nodes}
    free_per_node = {n: len(available & topo.numa_cpus[n]) for n in nodes}
    reusable_nodes = {topo.cpus[c].numa for c in reusable}
    masks: list[BitMask] = []
    for mask in iterate_masks(nodes):
        bits = mask.bits()
        width = len(bits)
        if width < min_width and sum(total_per_node[n] for n in bits) >= request:
            min_width = width
        if not reusable_nodes.issubset(bits):
            continue
        if len(reusable) + sum(free_per_node[n] for n in bits) < request:
            continue
        masks.append(mask)
    return tuple(TopologyHint(m, m.count() == min_width) for m in masks)


class CpuProvider:
    """Static-policy CPU manager for one admission (see module docstring)."""

    name = RESOURCE

    def __init__(
        self, topo: CpuTopology, reserved: frozenset[int], default_set: frozenset[int]
    ) -> None:
        self.topo = topo
        self.reserved = reserved
        #: The shared pool (the kubelet's default cpuset), reserved CPUs included.
        self.default_set = default_set
        #: container name -> exclusive CPUs, for the pod being admitted.
        self.assigned: dict[str, frozenset[int]] = {}
        self._reuse: frozenset[int] = frozenset()
        self._notes: list[str] = []

    def available(self) -> frozenset[int]:
        return self.default_set - self.reserved

    def notes(self) -> list[str]:
        out, self._notes = self._notes, []
        return out

    def _explain_no_hints(self, pod: PodSpec, requested: int, what: str) -> None:
        qos = qos_class(pod)
        if qos is not QOSClass.GUARANTEED:
            self._notes.append(f"cpu: pod is {qos.value}, so CPUs come from the shared pool")
        elif requested == 0:
            self._notes.append(f"cpu: {what} requests no whole number of CPUs (shared pool)")

    def container_hints(self, pod: PodSpec, container: ContainerSpec) -> ProviderHints:
        requested = guaranteed_cpus(pod, container)
        if requested == 0:
            self._explain_no_hints(pod, requested, f"container {container.name}")
            return None
        hints = generate_hints(self.topo, self.available(), self._reuse, requested)
        if not hints:
            self._notes.append(
                f"cpu: no NUMA set has {requested} free CPUs "
                f"({len(self.available())} free on the node)"
            )
        return {RESOURCE: hints}

    def pod_hints(self, pod: PodSpec) -> ProviderHints:
        requested = pod_guaranteed_cpus(pod)
        if requested == 0:
            self._explain_no_hints(pod, requested, "the pod")
            return None
        hints = generate_hints(self.topo, self.available(), self._reuse, requested)
        if not hints:
            self._notes.append(f"cpu: no NUMA set has {requested} free CPUs")
        return {RESOURCE: hints}

    def allocate(self, pod: PodSpec, container: ContainerSpec, hint: TopologyHint) -> None:
        count = guaranteed_cpus(pod, container)
        if count == 0:
            return
        allocatable = self.available() | self._reuse
        taken: frozenset[int] = frozenset()
        try:
            if hint.affinity is not None:
                aligned = allocatable & self.topo.cpus_in_numa_nodes(hint.affinity.bits())
                taken = take_by_topology(self.topo, aligned, min(count, len(aligned)))
            taken |= take_by_topology(self.topo, allocatable - taken, count - len(taken))
        except CpuAllocationError as exc:
            raise AllocationError(str(exc)) from exc
        self.default_set -= taken
        self.assigned[container.name] = taken
        regular_init = any(
            c.name == container.name and not c.restartable for c in pod.init_containers
        )
        self._reuse = self._reuse | taken if regular_init else self._reuse - taken
