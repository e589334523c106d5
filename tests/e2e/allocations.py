"""What the kubelets hold per pod, as the scenarios compare it: the simulated kubelet's
record on the pod (``fakenrt.io/allocation``), or a real kubelet's podresources ``List``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exporter.resources import PodResources
from fakenrt.controller.pods import ALLOCATION_ANNOTATION
from fakenrt.kubelet.allocation import ContainerAllocation, MemoryBlock, PodAllocation
from fakenrt.kubelet.allocation_codec import decode_allocation

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
