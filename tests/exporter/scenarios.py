"""Podresources reports used across the exporter's tests (node: TWO_NODES in conftest)."""

from __future__ import annotations

from exporter.resources import ContainerResources, DeviceAssignment, MemoryBlock, PodResources

GPU = "nvidia.com/gpu"
GI = 1024**3


def pod(name: str, *containers: ContainerResources, namespace: str = "default") -> PodResources:
    return PodResources(namespace=namespace, name=name, containers=containers)


def gpu(device_id: str, *numa: int) -> DeviceAssignment:
    return DeviceAssignment(GPU, (device_id,), tuple(numa))


def mem(size: int, *numa: int, memory_type: str = "memory") -> MemoryBlock:
    return MemoryBlock(memory_type, size, tuple(numa))


CPU_ONLY = pod("cpu-only", ContainerResources("main", cpu_ids=(0, 1, 2, 3)))
GPU_AND_CPU = pod(
    "gpu-cpu",
    ContainerResources("main", cpu_ids=(8, 9), devices=(gpu("GPU-1", 1), gpu("GPU-2", 1))),
)
MULTI_ZONE = pod(
    "restricted",
    ContainerResources("main", cpu_ids=(6, 7, 8, 9), devices=(gpu("GPU-0", 0), gpu("GPU-1", 1))),
)
MEMORY_AND_HUGEPAGES = pod(
    "memory",
    ContainerResources(
        "main",
        cpu_ids=(0, 1),
        memory=(mem(4 * GI, 0), mem(2 * GI, 0, memory_type="hugepages-1Gi")),
    ),
)
MULTI_NUMA_GROUP = pod(
    "group",
    ContainerResources("a", cpu_ids=(0,), memory=(mem(8 * GI, 0, 1),)),
    ContainerResources("b", memory=(mem(2 * GI, 0, 1), mem(GI, 1))),
)
NO_TOPOLOGY_DEVICE = pod("no-topology", ContainerResources("main", devices=(gpu("GPU-9"),)))
UNKNOWN_CPUS = pod("unknown-cpus", ContainerResources("main", cpu_ids=(1, 40, 41)))
SHARED_POOL = pod("shared", ContainerResources("main"))
