"""Whether a container's DRA devices sit on the NUMA nodes of its exclusive CPUs and
memory. Pure; one definition shared by the exporter's ``misaligned`` report and fakenrt's
simulator (``fakenrt kubelet explain``).

The kubelet prepares DRA devices after admission and aligns them with nothing (the DRA
manager is no Topology Manager hint provider), so a container's CPUs and memory can be
on one NUMA node and its DRA GPU on another without any error. A container is
**misaligned** when it holds pinned resources - exclusive CPUs (CPU Manager), Memory
Manager memory, or CPUs of a CPU DRA driver (``dra.cpu``) - and at least one other DRA
device whose NUMA node is known lies on none of their NUMA nodes. DRA devices whose NUMA
node is unknown, and containers without pinned resources, are never misaligned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from exporter.dra_attributes import CPU_DRIVER
from exporter.resources import ClaimDevice, PodResources

CPU_DRIVERS = frozenset({CPU_DRIVER})


@dataclass(frozen=True)
class DraPlacement:
    """One DRA device of a container and its NUMA node (None: unknown or none)."""

    driver: str
    pool: str
    device: str
    numa: int | None

    @property
    def name(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Misalignment:
    """A container whose DRA ``devices`` lie outside the NUMA nodes ``pinned`` of its
    exclusive CPUs and memory."""

    container: str
    devices: tuple[DraPlacement, ...]
    pinned: tuple[int, ...]

    def describe(self) -> str:
        where = ", ".join(f"{d.name} on NUMA node {d.numa}" for d in self.devices)
        nodes = ",".join(str(n) for n in self.pinned)
        return (
            f"container {self.container}: DRA device {where}, its exclusive CPUs and memory "
            f"on NUMA node{'s' if len(self.pinned) > 1 else ''} {nodes}"
        )


def misalignment(
    container: str, pinned: Iterable[int], devices: Iterable[DraPlacement]
) -> Misalignment | None:
    """The container's misalignment, or None. ``pinned``: the NUMA nodes of its exclusive
    CPUs and Memory Manager memory; ``devices``: its DRA devices (a CPU driver's count as
    pinned CPUs)."""
    listed = tuple(devices)
    anchors = set(pinned)
    anchors.update(d.numa for d in listed if d.driver in CPU_DRIVERS and d.numa is not None)
    if not anchors:
        return None
    outside = tuple(
        d
        for d in listed
        if d.driver not in CPU_DRIVERS and d.numa is not None and d.numa not in anchors
    )
    if not outside:
        return None
    return Misalignment(container, outside, tuple(sorted(anchors)))


def pod_misalignments(
    pod: PodResources,
    cpu_to_numa: Mapping[int, int],
    dra_numa: Callable[[ClaimDevice], int | None],
) -> tuple[Misalignment, ...]:
    """The misaligned containers of a podresources report: exclusive CPUs through the
    CPU -> NUMA map, memory blocks by their NUMA nodes, DRA devices by ``dra_numa``."""
    found = []
    for container in pod.containers:
        pinned = {cpu_to_numa[c] for c in container.cpu_ids if c in cpu_to_numa}
        pinned.update(n for block in container.memory if block.size > 0 for n in block.numa_ids)
        devices = [
            DraPlacement(d.driver, d.pool, d.device, dra_numa(d))
            for claim in container.dynamic
            for d in claim.devices
        ]
        result = misalignment(container.name, pinned, devices)
        if result is not None:
            found.append(result)
    return tuple(found)
