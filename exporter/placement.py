"""Pure derivation: one pod's podresources report + the CPU -> NUMA map -> the pod's
per-zone placement and Memory Manager groups -> the two annotation values.

No I/O. The rules, each chosen so that a zone is never over-reported:

* CPUs: ``cpu_ids`` are the container's exclusive CPUs and carry no topology; each is
  mapped through sysfs. A CPU the map does not know is left out and returned in
  ``unknown_cpus`` (never guessed).
* Devices: the kubelet lists a device once per NUMA node of its topology (one
  ``ContainerDevices`` entry per node, see upstream
  ``pkg/kubelet/cm/devicemanager/pod_devices.go``, ``getContainerDevices`` and
  ``containerDevicesFromResourceDeviceInstances``). Entries are therefore grouped by
  (resource, device id) across the container, and a device counts in a zone only when the
  union of its NUMA nodes is exactly one node. A device with no topology, or with
  affinity to several NUMA nodes, is in no zone: counting it in each of its nodes would
  over-report, picking one would guess.
* DRA devices: a container's ``dynamic_resources`` name devices (driver, pool, device)
  without topology; ``dra_numa`` resolves each from the node's ResourceSlices
  (``exporter.dra_numa``). A device with a NUMA node counts 1 in that zone under its
  driver's name (``gpu.nvidia.com``: a DNS subdomain without ``/``, so never the name of
  a device-plugin resource); one without is in no zone. A device listed by several
  containers of the pod (a shared claim) counts once.
* Memory: a block counts towards a zone (under its memory type) only if its NUMA-node set
  is a single node. Every block also contributes to the Memory Manager group of its node
  set (single-node sets included), summed per memory type across the pod's containers.
* Completeness of the groups: when the caller names the containers expected to report
  memory blocks (a Guaranteed pod's memory-requesting containers on a node whose Memory
  Manager runs the static policy), a missing one makes the groups ``None`` (the
  annotation's ``null``). A block with no NUMA node is an invalid observation: ``None``
  too. Without expectations the reported blocks are taken as complete.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
)
from exporter.resources import ClaimDevice, PodResources

CPU_RESOURCE = "cpu"


@dataclass(frozen=True, slots=True)
class PodPlacement:
    """What a pod holds per NUMA zone and per Memory Manager group.

    ``memory_groups`` is ``None`` when the observation is incomplete or invalid.
    """

    zones: tuple[ZonePlacement, ...]
    memory_groups: tuple[MemoryGroup, ...] | None
    unknown_cpus: frozenset[int] = frozenset()

    @property
    def holds_aligned_resources(self) -> bool:
        return any(any(v > 0 for v in zone.amounts.values()) for zone in self.zones)


def derive_placement(
    pod: PodResources,
    cpu_to_numa: Mapping[int, int],
    *,
    expected_memory_containers: frozenset[str] | None = None,
    dra_numa: Callable[[ClaimDevice], int | None] | None = None,
) -> PodPlacement:
    """The placement of one pod. See the module docstring for the rules."""
    zones: dict[int, dict[str, int]] = {}
    groups: dict[frozenset[int], dict[str, int]] = {}
    unknown: set[int] = set()
    valid_memory = True
    reported_memory: set[str] = set()
    dra_seen: set[tuple[str, str, str, str | None]] = set()

    def add(numa_id: int, resource: str, amount: int) -> None:
        bucket = zones.setdefault(numa_id, {})
        bucket[resource] = bucket.get(resource, 0) + amount

    for container in pod.containers:
        for cpu in container.cpu_ids:
            numa_id = cpu_to_numa.get(cpu)
            if numa_id is None:
                unknown.add(cpu)
            else:
                add(numa_id, CPU_RESOURCE, 1)

        device_nodes: dict[tuple[str, str], set[int]] = {}
        for entry in container.devices:
            for device_id in entry.device_ids:
                device_nodes.setdefault((entry.resource_name, device_id), set()).update(
                    entry.numa_ids
                )
        for (resource, _device_id), nodes in device_nodes.items():
            if len(nodes) == 1:
                add(next(iter(nodes)), resource, 1)

        for claim in container.dynamic if dra_numa is not None else ():
            for device in claim.devices:
                key = (device.driver, device.pool, device.device, device.share_id)
                if key in dra_seen:
                    continue
                dra_seen.add(key)
                numa = dra_numa(device) if dra_numa is not None else None
                if numa is not None:
                    add(numa, device.driver, 1)

        for block in container.memory:
            if block.size <= 0:
                continue
            reported_memory.add(container.name)
            nodes_set = frozenset(block.numa_ids)
            if not nodes_set:
                valid_memory = False
                continue
            if len(nodes_set) == 1:
                add(next(iter(nodes_set)), block.memory_type, block.size)
            bucket = groups.setdefault(nodes_set, {})
            bucket[block.memory_type] = bucket.get(block.memory_type, 0) + block.size

    complete = expected_memory_containers is None or expected_memory_containers <= reported_memory
    memory_groups: tuple[MemoryGroup, ...] | None = None
    if valid_memory and complete:
        memory_groups = tuple(
            MemoryGroup(ids, amounts)
            for ids, amounts in sorted(groups.items(), key=lambda item: sorted(item[0]))
        )
    return PodPlacement(
        zones=tuple(ZonePlacement(i, zones[i]) for i in sorted(zones)),
        memory_groups=memory_groups,
        unknown_cpus=frozenset(unknown),
    )


def annotation_values(placement: PodPlacement) -> dict[str, str | None]:
    """The two observed annotations for a placement; ``None`` = the annotation is absent
    (a pod that holds no aligned resources carries no placement annotation)."""
    return {
        OBSERVED_PLACEMENT: (
            format_placement(placement.zones) if placement.holds_aligned_resources else None
        ),
        OBSERVED_MEMORY_GROUPS: format_memory_groups(placement.memory_groups),
    }
