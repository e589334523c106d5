"""The Memory Manager's Static policy as a hint provider. Pure.

Mirrors ``pkg/kubelet/cm/memorymanager/policy_static.go``. Only Guaranteed pods, only
``memory`` and ``hugepages-<size>``; all requested memory types of a container are sized
together and share one NUMA mask.

* Machine state per NUMA node: per memory type allocatable / free / reserved bytes, the
  number of blocks placed on the node and its *group* ("cells"): the NUMA set the node's
  blocks were allocated from. A node holding single-NUMA blocks cannot join a multi-NUMA
  block, and a node in a group can only be used again by a block over the same group.
* Hints (``calculateHints``): masks whose *allocatable* memory covers the request (the
  narrowest of those sets the preferred width), that respect the group rules, and whose
  *free* memory (plus memory reusable from init containers) covers the request. When no
  mask qualifies the manager returns an empty map, which the Topology Manager treats as
  "no preference"; allocation then fails (``UnexpectedAdmissionError``).
* Quantities (``getRequestedResources``): ``Quantity.AsInt64`` must succeed, i.e. a
  request must be a whole number of bytes; otherwise the hints are nil (no preference)
  and Allocate fails with ``[memorymanager] failed to represent quantity as int64``.
* Allocation: the merged hint (or, with no affinity, the provider's own best hint) is
  widened to a qualifying hint that contains it when its free memory is short, then each
  memory type fills the mask's NUMA nodes in ascending order (``updateMachineState``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.provider import AllocationError
from fakenrt.podspec import ContainerSpec, PodSpec, QOSClass, pod_level, qos_class
from fakenrt.profiles.model import NodeProfile

MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"


def is_memory_type(name: str) -> bool:
    return name == MEMORY or name.startswith(HUGEPAGES_PREFIX)


def memory_type_order(name: str) -> tuple[int, str]:
    return (0 if name == MEMORY else 1, name)


@dataclass
class MemoryTable:
    allocatable: int
    free: int
    reserved: int = 0


@dataclass
class NumaMemory:
    """``NUMANodeState``."""

    assignments: int
    cells: tuple[int, ...]
    tables: dict[str, MemoryTable] = field(default_factory=dict)

    def clone(self) -> NumaMemory:
        return NumaMemory(
            self.assignments,
            self.cells,
            {k: MemoryTable(t.allocatable, t.free, t.reserved) for k, t in self.tables.items()},
        )


@dataclass(frozen=True)
class Block:
    """``state.Block``: ``size`` bytes of ``type`` over the NUMA nodes ``numa``."""

    type: str
    size: int
    numa: tuple[int, ...]


MachineState = dict[int, NumaMemory]


def initial_machine_state(profile: NodeProfile) -> MachineState:
    """Every zone with a table for ``memory`` and every hugepage size any zone has (a
    zone without that size reports zero, as cAdvisor does)."""
    sizes = sorted({name for z in profile.zones for name in z.hugepages})
    state: MachineState = {}
    for zone in profile.zones:
        tables = {MEMORY: MemoryTable(zone.memory, zone.memory)}
        for size in sizes:
            amount = zone.hugepages.get(size, 0)
            tables[size] = MemoryTable(amount, amount)
        state[zone.id] = NumaMemory(0, (zone.id,), tables)
    return state


def clone_state(state: MachineState) -> MachineState:
    return {k: v.clone() for k, v in state.items()}


def update_machine_state(state: MachineState, mask: tuple[int, ...], kind: str, size: int) -> None:
    """``updateMachineState``: count the block on every node of the mask, then fill the
    nodes' free memory in ascending order."""
    for node in mask:
        ns = state[node]
        ns.assignments += 1
        ns.cells = mask
        if size == 0:
            continue
        table = ns.tables.get(kind)
        if table is None or table.free <= 0:
            continue
        if table.free >= size:
            table.reserved += size
            table.free -= size
            size = 0
            continue
        size -= table.free
        table.reserved += table.free
        table.free = 0


def release_blocks(state: MachineState, blocks: tuple[Block, ...]) -> None:
    """``releaseMemory``: uncount the blocks; give back reserved bytes node by node."""
    for b in blocks:
        released = b.size
        for node in b.numa:
            ns = state[node]
            ns.assignments -= 1
            if ns.assignments == 0:
                ns.cells = (node,)
            if released == 0:
                continue
            table = ns.tables.get(b.type)
            if table is None or table.reserved == 0:
                continue
            if table.reserved < released:
                released -= table.reserved
                table.free += table.reserved
                table.reserved = 0
                continue
            table.free += released
            table.reserved -= released
            released = 0


def expected_machine_state(initial: MachineState, blocks: tuple[Block, ...]) -> MachineState:
    """The machine state a restarted kubelet expects from its checkpointed blocks
    (``validateState`` in ``memorymanager/policy_static.go``): every block counted on its
    nodes and filling them in ascending order from ``initial``; bytes finding no free
    room are dropped, not refused (the comparison below then fails)."""
    out = clone_state(initial)
    for b in blocks:
        update_machine_state(out, b.numa, b.type, b.size)
    return out


def machine_state_difference(checkpointed: MachineState, expected: MachineState) -> str | None:
    """Why ``areMachineStatesEqual`` (``memorymanager/policy_static.go``) finds the
    checkpointed machine state different from the expected one, or None: per NUMA node
    the number of blocks and the group must be equal, and per memory type the free and
    reserved bytes summed over the node's group (a group's split among its nodes is not
    compared). The two must also have the same NUMA nodes, memory types and allocatable
    bytes (a checkpoint written under another machine or reservation is refused)."""
    if sorted(checkpointed) != sorted(expected):
        return f"the checkpoint has NUMA nodes {sorted(checkpointed)}, the node {sorted(expected)}"
    for node in sorted(checkpointed):
        live, want = checkpointed[node], expected[node]
        if sorted(live.tables) != sorted(want.tables):
            return (
                f"NUMA node {node} has memory types {sorted(live.tables)} in the checkpoint, "
                f"{sorted(want.tables)} on the node"
            )
        for kind in sorted(live.tables):
            if live.tables[kind].allocatable != want.tables[kind].allocatable:
                return (
                    f"NUMA node {node} has {live.tables[kind].allocatable} bytes of {kind} "
                    f"allocatable in the checkpoint, {want.tables[kind].allocatable} on the node"
                )
    for node in sorted(checkpointed):
        live, want = checkpointed[node], expected[node]
        if live.assignments != want.assignments:
            return (
                f"NUMA node {node} holds {live.assignments} memory blocks, its checkpointed "
                f"blocks make {want.assignments}"
            )
        if sorted(live.cells) != sorted(want.cells):
            return (
                f"NUMA node {node} is in group {sorted(live.cells)}, its checkpointed blocks "
                f"make {sorted(want.cells)}"
            )
        for kind in sorted(live.tables):
            free = sum(checkpointed[n].tables[kind].free for n in live.cells)
            expected_free = sum(expected[n].tables[kind].free for n in live.cells)
            if free != expected_free:
                return (
                    f"NUMA nodes {sorted(live.cells)} have {free} bytes of {kind} free, their "
                    f"checkpointed blocks leave {expected_free}"
                )
            reserved = sum(checkpointed[n].tables[kind].reserved for n in live.cells)
            expected_reserved = sum(expected[n].tables[kind].reserved for n in live.cells)
            if reserved != expected_reserved:
                return (
                    f"NUMA nodes {sorted(live.cells)} have {reserved} bytes of {kind} reserved, "
                    f"their checkpointed blocks reserve {expected_reserved}"
                )
    return None


class NotInt64Error(ValueError):
    """A memory quantity that is not a whole number of bytes (``Quantity.AsInt64`` fails)."""

    def __init__(self) -> None:
        super().__init__("[memorymanager] failed to represent quantity as int64")


def _as_int64(amount: Decimal) -> int:
    """``Quantity.AsInt64`` on a quantity as the API server stores it (canonical form): a
    whole number of bytes converts, anything else (``1.1Gi``, ``1500m``) does not."""
    if amount != amount.to_integral_value():
        raise NotInt64Error
    return int(amount)


def container_memory_requests(container: ContainerSpec) -> dict[str, int]:
    """``getRequestedResources``: memory and hugepages requests, in bytes. Raises
    :class:`NotInt64Error` for a request that is not a whole number of bytes."""
    return {
        name: _as_int64(amount)
        for name, amount in sorted(
            container.requests.items(), key=lambda kv: memory_type_order(kv[0])
        )
        if is_memory_type(name)
    }


def pod_memory_requests(pod: PodSpec) -> dict[str, int]:
    """``getPodRequestedResources``: per type, the larger of the busiest init step and
    the long-running containers. Only types some app container requests are kept, as
    upstream iterates the app containers' types."""
    apps = [container_memory_requests(c) for c in pod.containers]
    totals = pod_level(
        ((c.restartable, container_memory_requests(c)) for c in pod.init_containers), apps
    )
    app_types = {name for requests in apps for name in requests}
    return {name: totals.get(name, 0) for name in sorted(app_types, key=memory_type_order)}


def find_best_hint(hints: tuple[TopologyHint, ...]) -> TopologyHint | None:
    """``findBestHint``: preferred first, then the narrowest."""
    best: TopologyHint | None = None
    for hint in hints:
        if best is None:
            best = hint
            continue
        if hint.preferred and not best.preferred:
            best = hint
            continue
        if (
            hint.preferred == best.preferred
            and hint.affinity is not None
            and best.affinity is not None
            and hint.affinity.is_narrower_than(best.affinity)
        ):
            best = hint
    return best


def violates_groups(state: MachineState, mask: BitMask) -> bool:
    """``isAffinityViolatingNUMAAllocations``."""
    bits = mask.bits()
    if len(bits) == 1:
        return False
    for node in bits:
        ns = state[node]
        if ns.assignments == 0:
            continue
        if len(ns.cells) == 1 or tuple(sorted(ns.cells)) != bits:
            return True
    return False


class MemoryProvider:
    """The Memory Manager (Static) for one admission (see module docstring)."""

    name = "memory"

    def __init__(self, state: MachineState) -> None:
        self.state = state  # a private copy, mutated in place
        self.nodes = tuple(sorted(state))
        #: container name -> blocks, for the pod being admitted.
        self.assigned: dict[str, list[Block]] = {}
        #: NUMA mask -> type -> bytes of regular init containers reusable by later ones.
        self._reuse: dict[BitMask, dict[str, int]] = {}
        self._notes: list[str] = []

    def notes(self) -> list[str]:
        out, self._notes = self._notes, []
        return out

    def _reusable(self, mask: BitMask, kind: str) -> int:
        return self._reuse.get(mask, {}).get(kind, 0)

    def calculate_hints(self, requested: Mapping[str, int]) -> dict[str, list[TopologyHint]]:
        """``calculateHints``: the same masks for every requested memory type."""
        min_width = len(self.nodes)
        masks: list[BitMask] = []
        state = self.state
        kinds = list(requested.items())
        allocatable = {
            n: {k: t.allocatable if (t := state[n].tables.get(k)) else 0 for k in requested}
            for n in self.nodes
        }
        free = {
            n: {k: t.free if (t := state[n].tables.get(k)) else 0 for k in requested}
            for n in self.nodes
        }
        for mask in iterate_masks(self.nodes):
            bits = mask.bits()
            if any(sum(allocatable[n][k] for n in bits) < size for k, size in kinds):
                continue
            min_width = min(min_width, len(bits))
            if len(bits) == 1:
                if len(state[bits[0]].cells) > 1:
                    continue
            elif any(
                state[n].assignments > 0
                and (len(state[n].cells) == 1 or tuple(sorted(state[n].cells)) != bits)
                for n in bits
            ):
                continue
            if any(
                sum(free[n][k] for n in bits) + self._reusable(mask, k) < size for k, size in kinds
            ):
                continue
            masks.append(mask)
        return (
            {kind: [TopologyHint(m, m.count() == min_width) for m in masks] for kind in requested}
            if masks
            else {}
        )

    def _hints(self, pod: PodSpec, requested: Mapping[str, int], what: str) -> ProviderHints:
        if qos_class(pod) is not QOSClass.GUARANTEED:
            return None
        if not requested:
            return None
        hints = self.calculate_hints(requested)
        if not hints:
            wanted = ", ".join(f"{k} {v}" for k, v in requested.items())
            self._notes.append(
                f"memory: no NUMA set can give {what} {wanted} bytes; the Memory Manager "
                "returns no hints, which the Topology Manager reads as no preference"
            )
            return {}
        return {k: tuple(v) for k, v in hints.items()}

    def _not_int64(self, what: str) -> ProviderHints:
        """GetTopologyHints logs the error and returns nil (no preference)."""
        self._notes.append(
            f"memory: {what} requests memory that is not a whole number of bytes; the Memory "
            "Manager gives no hints and its Allocate will fail"
        )
        return None

    def container_hints(self, pod: PodSpec, container: ContainerSpec) -> ProviderHints:
        what = f"container {container.name}"
        if qos_class(pod) is not QOSClass.GUARANTEED:
            return None
        try:
            requested = container_memory_requests(container)
        except NotInt64Error:
            return self._not_int64(what)
        return self._hints(pod, requested, what)

    def pod_hints(self, pod: PodSpec) -> ProviderHints:
        if qos_class(pod) is not QOSClass.GUARANTEED:
            return None
        try:
            requested = pod_memory_requests(pod)
        except NotInt64Error:
            return self._not_int64("the pod")
        return self._hints(pod, requested, "the pod")

    def _satisfies(self, mask: BitMask, requested: Mapping[str, int]) -> bool:
        """``isAffinitySatisfyRequest`` (free memory only)."""
        for kind, size in requested.items():
            free = sum(
                t.free for n in mask.bits() if (t := self.state[n].tables.get(kind)) is not None
            )
            if free < size:
                return False
        return True

    def allocate(self, pod: PodSpec, container: ContainerSpec, hint: TopologyHint) -> None:
        if qos_class(pod) is not QOSClass.GUARANTEED:
            return
        try:
            requested = container_memory_requests(container)
        except NotInt64Error as exc:
            raise AllocationError(str(exc)) from exc
        best = hint
        if best.affinity is None:
            default = find_best_hint(tuple(self.calculate_hints(requested).get(MEMORY, ())))
            if default is None:
                raise AllocationError(
                    "[memorymanager] failed to get the default NUMA affinity, "
                    "no NUMA nodes with enough memory is available"
                )
            if not default.preferred and best.preferred:
                raise AllocationError("[memorymanager] failed to find the default preferred hint")
            best = default
        assert best.affinity is not None
        if not self._satisfies(best.affinity, requested):
            inner = best.affinity
            wider = tuple(
                h
                for h in self.calculate_hints(requested).get(MEMORY, ())
                if h.affinity is not None and inner.is_subset_of(h.affinity)
            )
            extended = find_best_hint(wider)
            if extended is None:
                raise AllocationError(
                    "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
                )
            if not extended.preferred and best.preferred:
                raise AllocationError("[memorymanager] failed to find the extended preferred hint")
            best = extended
        assert best.affinity is not None
        if violates_groups(self.state, best.affinity):
            raise AllocationError("[memorymanager] preferred hint violates NUMA node allocation")
        bits = best.affinity.bits()
        blocks = [Block(kind, size, bits) for kind, size in requested.items()]
        for kind, size in requested.items():
            reusable = self._reusable(best.affinity, kind)
            update_machine_state(self.state, bits, kind, max(0, size - reusable))
        self._update_reuse(pod, container, blocks)
        self.assigned[container.name] = blocks
        self._shrink_init_blocks(pod, container, blocks)

    def _update_reuse(self, pod: PodSpec, container: ContainerSpec, blocks: list[Block]) -> None:
        """``updatePodReusableMemory``."""
        regular_init = any(
            c.name == container.name and not c.restartable for c in pod.init_containers
        )
        for b in blocks:
            mask = BitMask.from_bits(b.numa)
            table = self._reuse.setdefault(mask, {}) if regular_init else self._reuse.get(mask)
            if regular_init:
                assert table is not None
                table[b.type] = max(table.get(b.type, 0), b.size)
            elif table and table.get(b.type, 0):
                table[b.type] = max(0, table[b.type] - b.size)

    def _shrink_init_blocks(
        self, pod: PodSpec, container: ContainerSpec, blocks: list[Block]
    ) -> None:
        """``updateInitContainersMemoryBlocks``: earlier regular init containers' blocks
        shrink by what this container reused, so block sizes add up to what the pod
        holds."""
        for block in blocks:
            size = block.size
            for init in pod.init_containers:
                if init.name == container.name or size == 0:
                    break
                if init.restartable or not self.assigned.get(init.name):
                    continue
                updated: list[Block] = []
                for ib in self.assigned[init.name]:
                    if ib.size == 0 or ib.type != block.type or ib.numa != block.numa:
                        updated.append(ib)
                        continue
                    if ib.size > size:
                        updated.append(Block(ib.type, ib.size - size, ib.numa))
                        size = 0
                    else:
                        size -= ib.size
                        updated.append(Block(ib.type, 0, ib.numa))
                self.assigned[init.name] = updated
