"""What the kubelet reports through the podresources API, as plain frozen values.

Pure: no gRPC, no protobuf. ``exporter.podresources_client`` converts every response into
these values so nothing else in the exporter touches generated code, and tests build them
directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeviceAssignment:
    """One ``ContainerDevices`` entry: device ids of one resource and the NUMA nodes of
    the entry's topology (empty: the device plugin reported no NUMA affinity)."""

    resource_name: str
    device_ids: tuple[str, ...]
    numa_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """One ``ContainerMemory`` block (Memory Manager static policy): a memory type
    (``memory``, ``hugepages-1Gi``...), its size in bytes and its NUMA-node set."""

    memory_type: str
    size: int
    numa_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimDevice:
    """One prepared DRA device of a claim (``ClaimResource``): no topology - its NUMA node
    comes from the driver's ResourceSlice (``exporter.dra_numa``)."""

    driver: str
    pool: str
    device: str
    cdi_ids: tuple[str, ...] = ()
    #: Set for a device allocated several times (consumable capacity).
    share_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimResources:
    """One ``DynamicResource``: a ResourceClaim the container uses, and its devices."""

    claim_name: str
    claim_namespace: str
    devices: tuple[ClaimDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerResources:
    """What one container holds exclusively: CPU ids, devices, memory blocks - and the
    DRA devices of the ResourceClaims it uses."""

    name: str
    cpu_ids: tuple[int, ...] = ()
    devices: tuple[DeviceAssignment, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
    dynamic: tuple[ClaimResources, ...] = ()


@dataclass(frozen=True, slots=True)
class PodResources:
    """One pod of a ``List`` (or ``Get``) response."""

    namespace: str
    name: str
    containers: tuple[ContainerResources, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class AllocatableResources:
    """The node's ``GetAllocatableResources`` answer. ``memory`` is empty unless the
    Memory Manager runs its static policy (the only policy that reports blocks)."""

    cpu_ids: tuple[int, ...] = ()
    devices: tuple[DeviceAssignment, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()

    @property
    def memory_manager_static(self) -> bool:
        return bool(self.memory)


def duplicate_keys(reports: Iterable[PodResources]) -> frozenset[str]:
    """``namespace/name`` keys the kubelet lists more than once (an old and a new pod
    under one name): which report belongs to the pod the API shows cannot be told, so
    neither is written."""
    counts = Counter(r.key for r in reports)
    return frozenset(key for key, n in counts.items() if n > 1)
