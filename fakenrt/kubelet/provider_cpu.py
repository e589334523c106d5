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

Policy options (``cpumanager/policy_options.go``, ``policy_static.go``):

* ``full-pcpus-only``: ``Allocate`` first refuses a request that is not a multiple of the
  CPUs per core, then one larger than the free CPUs outside the *cores* of the reserved
  CPUs, both with ``SMTAlignmentError``; hints are unchanged (the merge admits, Allocate
  rejects);
* ``align-by-socket``: a hint is also preferred when its NUMA nodes span the fewest
  sockets that could hold the narrowest hint, and allocation first takes CPUs from the
  *sockets* of the hint's NUMA nodes (``isHintSocketAligned``, ``getAlignedCPUs``);
* ``distribute-cpus-across-numa``, ``distribute-cpus-across-cores``,
  ``prefer-align-cpus-by-uncorecache`` choose how CPU ids are picked
  (:func:`~fakenrt.kubelet.cpu_assignment.take_cpus`);
* ``strict-cpu-reservation`` keeps the reserved CPUs out of the shared pool; exclusive
  allocation never used them anyway, so admission does not change.
"""

from __future__ import annotations

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.cpu_assignment import CpuAllocationError, take_cpus
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.provider import AdmissionErrorCode, AllocationError
from fakenrt.kubelet.quantities import is_integral, value
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.podspec import ContainerSpec, PodSpec, QOSClass, pod_level, qos_class
from fakenrt.profiles.model import CpuPolicyOptions

RESOURCE = "cpu"
SMT_ALIGNMENT_ERROR = "SMTAlignmentError"


def smt_alignment_error(
    requested: int, per_core: int, available_physical: int | None = None
) -> AdmissionErrorCode:
    """``SMTAlignmentError`` with the kubelet's two messages (``policy_static.go``)."""
    if available_physical is None:
        text = (
            f"SMT Alignment Error: requested {requested} cpus not multiple cpus per core = "
            f"{per_core}"
        )
    else:
        text = (
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
            f"{available_physical}, requested CPUs = {requested}, CPUs per core = {per_core}"
        )
    return AdmissionErrorCode(SMT_ALIGNMENT_ERROR, text)


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


def is_hint_socket_aligned(topo: CpuTopology, mask: BitMask, min_width: int) -> bool:
    """``isHintSocketAligned``: the mask's NUMA nodes span the fewest sockets that
    ``min_width`` NUMA nodes need."""
    per_socket = topo.num_numa_nodes // max(1, topo.num_sockets)
    if per_socket == 0:
        return False
    min_sockets = (min_width + per_socket - 1) // per_socket
    return len(topo.sockets_in_numa_nodes(mask.bits())) == min_sockets


#: Hints kept per topology (:attr:`CpuTopology.hinted`) before they are started afresh.
MAX_HINTED = 4096


def generate_hints(
    topo: CpuTopology,
    available: frozenset[int],
    reusable: frozenset[int],
    request: int,
    *,
    align_by_socket: bool = False,
) -> tuple[TopologyHint, ...]:
    """``generateCPUTopologyHints``. A pure function of its arguments: the hints are kept
    on the topology (nodes of one shape in equal states ask the same)."""
    key = (available, reusable, request, align_by_socket)
    known = topo.hinted.get(key)
    if known is None:
        known = _generate_hints(topo, available, reusable, request, align_by_socket)
        if len(topo.hinted) >= MAX_HINTED:
            topo.hinted.clear()
        topo.hinted[key] = known
    return known


def _generate_hints(
    topo: CpuTopology,
    available: frozenset[int],
    reusable: frozenset[int],
    request: int,
    align_by_socket: bool,
) -> tuple[TopologyHint, ...]:
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
    return tuple(
        TopologyHint(
            m,
            (align_by_socket and is_hint_socket_aligned(topo, m, min_width))
            or m.count() == min_width,
        )
        for m in masks
    )


class CpuProvider:
    """Static-policy CPU manager for one admission (see module docstring)."""

    name = RESOURCE

    def __init__(
        self,
        topo: CpuTopology,
        reserved: frozenset[int],
        default_set: frozenset[int],
        options: CpuPolicyOptions | None = None,
    ) -> None:
        self.topo = topo
        self.reserved = reserved
        self.options = options or CpuPolicyOptions()
        #: The reserved CPUs and their core siblings (``reservedPhysicalCPUs``).
        self.reserved_physical = topo.physical_cpus_of(reserved)
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

    def _hints(self, requested: int) -> tuple[TopologyHint, ...]:
        return generate_hints(
            self.topo,
            self.available(),
            self._reuse,
            requested,
            align_by_socket=self.options.align_by_socket,
        )

    def _aligned(self, hint: TopologyHint, allocatable: frozenset[int]) -> frozenset[int]:
        """``getAlignedCPUs``: the hint's NUMA nodes' CPUs, or with align-by-socket the
        CPUs of the sockets those NUMA nodes are on."""
        assert hint.affinity is not None
        numa = hint.affinity.bits()
        if self.options.align_by_socket:
            sockets = self.topo.sockets_in_numa_nodes(numa)
            return allocatable & self.topo.cpus_in_sockets(sockets)
        return allocatable & self.topo.cpus_in_numa_nodes(numa)

    def _check_smt(self, count: int) -> None:
        """``full-pcpus-only`` checks at the top of ``Allocate``."""
        per_core = self.topo.cpus_per_core
        if count % per_core:
            raise smt_alignment_error(count, per_core)
        physical = len(self.default_set - self.reserved_physical)
        if count > physical:
            raise smt_alignment_error(count, per_core, physical)

    def container_hints(self, pod: PodSpec, container: ContainerSpec) -> ProviderHints:
        requested = guaranteed_cpus(pod, container)
        if requested == 0:
            self._explain_no_hints(pod, requested, f"container {container.name}")
            return None
        hints = self._hints(requested)
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
        hints = self._hints(requested)
        if not hints:
            self._notes.append(f"cpu: no NUMA set has {requested} free CPUs")
        return {RESOURCE: hints}

    def allocate(self, pod: PodSpec, container: ContainerSpec, hint: TopologyHint) -> None:
        count = guaranteed_cpus(pod, container)
        if count == 0:
            return
        if self.options.full_pcpus_only:
            self._check_smt(count)
        allocatable = self.available() | self._reuse
        taken: frozenset[int] = frozenset()
        opts = self.options
        try:
            if hint.affinity is not None:
                aligned = self._aligned(hint, allocatable)
                taken = take_cpus(self.topo, aligned, min(count, len(aligned)), opts)
            taken |= take_cpus(self.topo, allocatable - taken, count - len(taken), opts)
        except CpuAllocationError as exc:
            raise AllocationError(str(exc)) from exc
        self.default_set -= taken
        self.assigned[container.name] = taken
        regular_init = any(
            c.name == container.name and not c.restartable for c in pod.init_containers
        )
        self._reuse = self._reuse | taken if regular_init else self._reuse - taken
