"""The NodeResourceTopology of a real-kubelet node, from what the node shows. Pure.

Inputs (an :class:`Observation`): the machine from sysfs, the kubelet's settings from its
configuration file, and the kubelet's podresources answers ``GetAllocatableResources`` and
``List``. The object is built by :func:`fakenrt.nrt.render.nrt_object`, the same core
``render_nrt`` uses for fake nodes. Per zone (NUMA node) and resource:

* ``cpu``: capacity = the node's CPUs (sysfs ``cpulist``). Allocatable: with the static
  CPU Manager the CPUs ``GetAllocatableResources`` lists (``GetAllocatableCPUs``: every CPU
  but the reserved ones); with ``none`` it lists none, and allocatable is capacity minus
  ``reservedSystemCPUs``. Held: the exclusive ``cpu_ids`` ``List`` reports.
* ``memory`` / ``hugepages-<size>``: capacity from sysfs (``MemTotal`` minus the node's
  hugepages; ``nr_hugepages`` times the page size; a size with no pages is left out).
  Allocatable: with the Static Memory Manager the per-NUMA-node blocks of
  ``GetAllocatableResources`` (``GetAllocatableMemory``: capacity minus ``reservedMemory``);
  with ``None`` there are none, allocatable is capacity. Held: the ``List`` blocks. A
  block over one NUMA node is that node's; the blocks of a group of several nodes are
  attributed the way the kubelet's ``updateMachineState`` reserves them
  (``pkg/kubelet/cm/memorymanager/policy_static.go``): each fills the group's nodes in
  ascending id order up to what they can still give - exact while no block of the group
  has been released since the group formed (see docs/nrt.md).
* devices: the healthy devices ``GetAllocatableResources`` lists with a NUMA node, per
  node; capacity = allocatable (podresources does not show unhealthy devices). Held: the
  ``List`` devices among those.

The fingerprint (method ``with-exclusive-resources``) covers the ``List`` pods holding any
CPU id, device or memory block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from exporter.resources import AllocatableResources, PodResources
from fakenrt.nrt.render import nrt_object
from fakenrt.nrtpub.kubeletconfig import PublisherKubeletConfig
from fakenrt.nrtpub.machine import Machine

ZoneTable = dict[int, dict[str, int]]
MEMORY = "memory"


@dataclass(frozen=True)
class Observation:
    """What one poll of the node saw."""

    machine: Machine
    config: PublisherKubeletConfig
    allocatable: AllocatableResources
    pods: tuple[PodResources, ...]


@dataclass(frozen=True)
class ZoneAmounts:
    capacity: ZoneTable
    allocatable: ZoneTable
    held: ZoneTable


def _device_zones(
    allocatable: AllocatableResources, zones: set[int]
) -> dict[tuple[str, str], tuple[int, ...]]:
    """(resource, device id) -> the NUMA nodes of an allocatable device (known ones only)."""
    out: dict[tuple[str, str], tuple[int, ...]] = {}
    for entry in allocatable.devices:
        numa = tuple(sorted({n for n in entry.numa_ids if n in zones}))
        if not numa:
            continue
        for device in entry.device_ids:
            out[(entry.resource_name, device)] = numa
    return out


def zone_amounts(obs: Observation) -> ZoneAmounts:
    """Per zone: capacity, allocatable and what pods hold."""
    machine = obs.machine
    zones = set(machine.node_ids)
    static_cpu = obs.config.policies.cpu_manager_policy == "static"
    static_memory = obs.config.policies.memory_manager_policy == "Static"
    allocatable_cpus = frozenset(obs.allocatable.cpu_ids)
    capacity: ZoneTable = {}
    allocatable: ZoneTable = {}
    held: ZoneTable = {}
    for node in machine.nodes:
        memory_types = {MEMORY: node.memory} | {
            name: amount for name, amount in node.hugepage_bytes().items() if amount > 0
        }
        capacity[node.id] = {"cpu": len(node.cpus), **memory_types}
        usable = (
            node.cpus & allocatable_cpus if static_cpu else node.cpus - obs.config.reserved_cpus
        )
        allocatable[node.id] = {"cpu": len(usable)}
        for name, amount in memory_types.items():
            allocatable[node.id][name] = 0 if static_memory else amount
        held[node.id] = {}
    if static_memory:
        for block in obs.allocatable.memory:
            (node_id,) = block.numa_ids if len(block.numa_ids) == 1 else (None,)
            if node_id in capacity and block.memory_type in capacity[node_id]:
                allocatable[node_id][block.memory_type] += block.size
    device_zones = _device_zones(obs.allocatable, zones)
    for (resource, _), numa in device_zones.items():
        for node_id in numa:
            for table in (capacity, allocatable):
                table[node_id][resource] = table[node_id].get(resource, 0) + 1
    numa_of_cpu = machine.numa_of_cpu()
    groups: dict[tuple[str, tuple[int, ...]], int] = {}
    for pod in obs.pods:
        for container in pod.containers:
            for cpu in container.cpu_ids:
                node_id = numa_of_cpu.get(cpu)
                if node_id is not None:
                    held[node_id]["cpu"] = held[node_id].get("cpu", 0) + 1
            for entry in container.devices:
                for device in entry.device_ids:
                    for node_id in device_zones.get((entry.resource_name, device), ()):
                        count = held[node_id].get(entry.resource_name, 0)
                        held[node_id][entry.resource_name] = count + 1
            for block in container.memory:
                numa = tuple(sorted({n for n in block.numa_ids if n in zones}))
                if numa:
                    key = (block.memory_type, numa)
                    groups[key] = groups.get(key, 0) + block.size
    # Single-node blocks first: a node in a group of several holds no others (the Memory
    # Manager's group rule), so the order only matters for input that breaks the rule.
    for (kind, numa), size in sorted(groups.items(), key=lambda item: len(item[0][1])):
        _fill(held, allocatable, kind, numa, size)
    return ZoneAmounts(capacity=capacity, allocatable=allocatable, held=held)


def _fill(
    held: ZoneTable, allocatable: ZoneTable, kind: str, numa: Sequence[int], size: int
) -> None:
    """Reserve ``size`` bytes of ``kind`` over the nodes ``numa`` in ascending order, each
    up to what it can still give (``updateMachineState``); what no node can take is
    dropped, as the kubelet drops it."""
    if len(numa) == 1:
        (node_id,) = numa
        held[node_id][kind] = held[node_id].get(kind, 0) + size
        return
    for node_id in numa:
        free = allocatable[node_id].get(kind, 0) - held[node_id].get(kind, 0)
        take = max(0, min(free, size))
        held[node_id][kind] = held[node_id].get(kind, 0) + take
        size -= take
        if size == 0:
            return


def holds_exclusive(pod: PodResources) -> bool:
    return any(c.cpu_ids or c.devices or c.memory for c in pod.containers)


def compute_nrt(node: str, obs: Observation, *, topology_policies: bool = True) -> dict[str, Any]:
    """The NodeResourceTopology object of ``node``."""
    amounts = zone_amounts(obs)
    return nrt_object(
        name=node,
        zone_ids=obs.machine.node_ids,
        distance=obs.machine.distance,
        capacity=amounts.capacity,
        allocatable=amounts.allocatable,
        held=amounts.held,
        policies=obs.config.policies,
        pods=[p.key for p in obs.pods if holds_exclusive(p)],
        topology_policies=topology_policies,
    )
