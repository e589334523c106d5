"""What the kubelets hold per pod, as the scenarios compare it: the simulated kubelet's
record on the pod (``fakenrt.io/allocation``), or a real kubelet's podresources ``List``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from exporter.annotations import (
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
)
from exporter.resources import PodResources
from fakenrt.controller.pods import ALLOCATION_ANNOTATION
from fakenrt.kubelet.allocation import ContainerAllocation, MemoryBlock, PodAllocation
from fakenrt.kubelet.allocation_codec import decode_allocation
from fakenrt.profiles import NodeProfile

#: Pod name -> what its kubelet holds for it (pods a kubelet holds nothing for are absent).
Allocations = Mapping[str, PodAllocation]


def allocation_of(pod: Mapping[str, Any]) -> PodAllocation | None:
    """The simulated kubelet's allocation recorded on the pod, if any."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ALLOCATION_ANNOTATION)
    if raw is None:
        return None
    meta = pod["metadata"]
    return decode_allocation(raw, namespace=meta["namespace"], name=meta["name"])


def recorded_allocations(listed: Iterable[Mapping[str, Any]]) -> dict[str, PodAllocation]:
    """The simulated kubelets' allocations, as the controller records them on the pods."""
    out: dict[str, PodAllocation] = {}
    for pod in listed:
        allocation = allocation_of(pod)
        if allocation is not None:
            out[pod["metadata"]["name"]] = allocation
    return out


def listed_allocations(
    listed: Iterable[PodResources], *, namespace: str
) -> dict[str, PodAllocation]:
    """A real kubelet's allocations of the pods of ``namespace``, from its podresources
    ``List`` (exclusive CPU ids, device ids, Memory Manager blocks; every listed pod, with
    nothing exclusive too)."""
    out: dict[str, PodAllocation] = {}
    for pod in listed:
        if pod.namespace != namespace:
            continue
        containers = []
        for c in pod.containers:
            devices: dict[str, tuple[str, ...]] = {}
            for d in c.devices:
                devices[d.resource_name] = devices.get(d.resource_name, ()) + d.device_ids
            containers.append(
                ContainerAllocation(
                    name=c.name,
                    cpus=frozenset(c.cpu_ids),
                    devices=devices,
                    memory=tuple(
                        MemoryBlock(m.memory_type, m.size, frozenset(m.numa_ids)) for m in c.memory
                    ),
                )
            )
        out[pod.name] = PodAllocation(
            namespace=pod.namespace, name=pod.name, uid="", containers=tuple(containers)
        )
    return out


def zone_amounts(
    profile: NodeProfile, allocation: PodAllocation
) -> tuple[dict[int, dict[str, int]], dict[frozenset[int], dict[str, int]]]:
    """What ``allocation`` holds per NUMA zone (exclusive CPUs, NUMA-affine devices, DRA
    devices under their driver's name, single-NUMA memory blocks) and per Memory Manager
    group (every block), by the rule of the placement annotations (interfaces.md)."""
    zone_of_cpu = {cpu: z.id for z in profile.zones for cpu in z.cpus}
    zone_of_device = {
        (name, dev): z.id for z in profile.zones for name, ds in z.devices.items() for dev in ds.ids
    }
    per_zone: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    groups: dict[frozenset[int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    # DRA devices count 1 in their zone under the driver's name, once per pod however many
    # containers share them (docs/exporter.md, "DRA devices").
    dra: set[tuple[str, str, str]] = set()
    for container in allocation.containers:
        for claim in container.dynamic:
            for r in claim.resources:
                driver = profile.dra_driver(r.driver)
                found = driver.device(r.device) if driver and driver.pool == r.pool else None
                if found is None or found.numa is None or (r.driver, r.pool, r.device) in dra:
                    continue
                dra.add((r.driver, r.pool, r.device))
                per_zone[found.numa][r.driver] += 1
    for container in allocation.containers:
        for cpu in container.cpus:
            per_zone[zone_of_cpu[cpu]]["cpu"] += 1
        for name, ids in container.devices.items():
            for dev in ids:
                if (name, dev) in zone_of_device:
                    per_zone[zone_of_device[(name, dev)]][name] += 1
        for block in container.memory:
            if len(block.numa) == 1:
                per_zone[next(iter(block.numa))][block.type] += block.size
            groups[block.numa][block.type] += block.size
    return (
        {z: dict(a) for z, a in per_zone.items()},
        {n: dict(a) for n, a in groups.items()},
    )


def expected_observation(profile: NodeProfile, allocation: PodAllocation) -> tuple[str, str]:
    """The observed placement and memory groups the simulator's allocation amounts to, in
    the exporter's annotation format (interfaces.md)."""
    per_zone, groups = zone_amounts(profile, allocation)
    placement = format_placement(ZonePlacement(z, a) for z, a in per_zone.items())
    memory = format_memory_groups(MemoryGroup(n, a) for n, a in groups.items())
    return placement, memory
