"""podresources v1 messages -> the exporter's plain values (:mod:`exporter.resources`). Pure:
reads the fields of the generated protobuf messages without importing gRPC, so the
exporter's client and an in-process simulation convert a kubelet's answer the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from exporter.resources import ContainerResources, DeviceAssignment, MemoryBlock, PodResources


def _numa_ids(topology: Any) -> tuple[int, ...]:
    return tuple(sorted({int(node.ID) for node in topology.nodes}))


def device_assignments(items: Iterable[Any]) -> tuple[DeviceAssignment, ...]:
    return tuple(
        DeviceAssignment(d.resource_name, tuple(d.device_ids), _numa_ids(d.topology)) for d in items
    )


def memory_blocks(items: Iterable[Any]) -> tuple[MemoryBlock, ...]:
    return tuple(MemoryBlock(m.memory_type, int(m.size), _numa_ids(m.topology)) for m in items)


def pod_resources(pod: Any) -> PodResources:
    """One ``PodResources`` message as a frozen :class:`PodResources`."""
    return PodResources(
        namespace=pod.namespace,
        name=pod.name,
        containers=tuple(
            ContainerResources(
                name=c.name,
                cpu_ids=tuple(c.cpu_ids),
                devices=device_assignments(c.devices),
                memory=memory_blocks(c.memory),
            )
            for c in pod.containers
        ),
    )
