"""What a kubelet's podresources ``List`` reports for a pod, as the exporter's own typed
values (:class:`exporter.resources.PodResources`). Pure: no protobuf, no gRPC.

The fake podresources server sends the same facts as protobuf messages
(:func:`fakenrt.podresources_messages.pod_message`, built from this module's device map);
a test requires the exporter's decoding of those messages to equal :func:`pod_report`.
In-process users (``fakenrt simulate``, ``fakenrt nrt render --pods-out``) hand these
values to the exporter's derivation (:func:`exporter.placement.derive_placement`)
directly, without a serialization round trip.
"""

from __future__ import annotations

from exporter.resources import (
    ClaimDevice,
    ClaimResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from fakenrt.kubelet.allocation import INIT, ContainerAllocation, DynamicResource, PodAllocation
from fakenrt.profiles.model import NodeProfile

#: (resource, device id) -> the device's NUMA node, None for a device without affinity.
DeviceNuma = dict[tuple[str, str], int | None]


def device_numa(profile: NodeProfile) -> DeviceNuma:
    """(resource, device id) -> the device's NUMA node, None for no-affinity devices."""
    out: DeviceNuma = {}
    for zone in profile.zones:
        for resource, devices in zone.devices.items():
            for device_id in devices.ids:
                out[(resource, device_id)] = zone.id
    for resource, devices in profile.devices.items():
        for device_id in devices.ids:
            out[(resource, device_id)] = None
    return out


def _claim(d: DynamicResource) -> ClaimResources:
    return ClaimResources(
        d.claim_name,
        d.claim_namespace,
        tuple(ClaimDevice(r.driver, r.pool, r.device, r.cdi_ids, r.share_id) for r in d.resources),
    )


def _container(c: ContainerAllocation, numa_of: DeviceNuma) -> ContainerResources:
    devices = []
    for resource in sorted(c.devices):
        for device_id in c.devices[resource]:
            numa = numa_of.get((resource, device_id))
            devices.append(
                DeviceAssignment(resource, (device_id,), () if numa is None else (numa,))
            )
    return ContainerResources(
        name=c.name,
        cpu_ids=tuple(sorted(c.cpus)),
        devices=tuple(devices),
        memory=tuple(MemoryBlock(b.type, b.size, tuple(sorted(b.numa))) for b in c.memory),
        dynamic=tuple(_claim(d) for d in c.dynamic),
    )


def pod_report(pod: PodAllocation, numa_of: DeviceNuma) -> PodResources:
    """A pod as the kubelet lists it: sidecars and regular containers (regular init
    containers are not listed), one device entry per device with its NUMA node."""
    return PodResources(
        namespace=pod.namespace,
        name=pod.name,
        containers=tuple(_container(c, numa_of) for c in pod.containers if c.kind != INIT),
    )


def allocation_zones(
    pod: PodAllocation, cpu_numa: dict[int, int], numa_of: DeviceNuma
) -> tuple[int, ...]:
    """The NUMA zones a pod holds anything in (every container, regular init ones
    included): its CPUs' zones, its NUMA-affine devices' zones, its memory blocks' NUMA
    nodes; ascending."""
    zones: set[int] = set()
    for c in pod.containers:
        zones.update(cpu_numa[cpu] for cpu in c.cpus if cpu in cpu_numa)
        for resource, ids in c.devices.items():
            for device_id in ids:
                numa = numa_of.get((resource, device_id))
                if numa is not None:
                    zones.add(numa)
        for block in c.memory:
            zones.update(block.numa)
    return tuple(sorted(zones))
