"""A pod's NUMA placement: what it holds per zone, and the NUMA sets of its memory blocks.

Pure. The same value is charged by the in-cycle reservation, credited back on rollback,
rebuilt from the observed / predicted annotations for reconstruction, and written as the
predicted annotations at bind (through ``exporter.annotations``, the format's one owner)
by the rule of the observed ones, so that a correct prediction equals the observation: the
placement annotation's per-zone memory counts only single-NUMA blocks, and every block's
bytes are in the memory-groups annotation under its NUMA-node set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from exporter.annotations import (
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
)


def is_memory_type(resource: str) -> bool:
    """``memory`` and every ``hugepages-<size>``: what the Memory Manager sizes together."""
    return resource == "memory" or resource.startswith("hugepages-")


@dataclass(frozen=True)
class Placement:
    """``amounts``: zone id -> resource -> amount the pod holds there (non-zero only).
    ``memory_blocks``: the NUMA-node set of each Memory Manager block the pod holds (one
    per memory type and container); a set of several zones is a Memory Manager group.
    ``memory_groups``: NUMA-node set -> memory type -> the bytes the pod holds in blocks
    over exactly that set (what the memory-groups annotations carry); the memory in
    ``amounts`` is the same bytes split per zone."""

    amounts: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    memory_blocks: tuple[frozenset[int], ...] = ()
    memory_groups: Mapping[frozenset[int], Mapping[str, int]] = field(default_factory=dict)

    @property
    def zones(self) -> tuple[int, ...]:
        """The zones the pod holds something in, ascending."""
        return tuple(sorted(z for z, a in self.amounts.items() if any(a.values())))

    @property
    def empty(self) -> bool:
        return not self.zones and not self.memory_blocks

    def total(self, resource: str) -> int:
        return sum(a.get(resource, 0) for a in self.amounts.values())

    def annotation(self) -> str:
        """The ``kai.scheduler/numa-placement-predicted`` value: per zone what the pod
        holds there, memory only from single-NUMA blocks (the observed rule)."""
        zones: dict[int, dict[str, int]] = {}
        for z, a in self.amounts.items():
            zones[z] = {r: v for r, v in a.items() if not is_memory_type(r)}
        for numa, amounts in self.memory_groups.items():
            if len(numa) == 1:
                (z,) = numa
                zones.setdefault(z, {}).update(amounts)
        return format_placement(ZonePlacement(numa_id=z, amounts=a) for z, a in zones.items())

    def groups_annotation(self) -> str:
        """The ``kai.scheduler/numa-memory-groups-predicted`` value: one entry per NUMA-node
        set of the pod's memory blocks (``[]``: none)."""
        return format_memory_groups(
            MemoryGroup(numa_ids=n, amounts=dict(a)) for n, a in self.memory_groups.items()
        )

    def annotations(self) -> dict[str, str]:
        """Both predicted annotations, as the scheduler writes them at bind."""
        return dict(self._annotations)

    @cached_property
    def _annotations(self) -> tuple[tuple[str, str], ...]:
        """Both predicted annotations, formatted once (one placement is charged for many
        pods: see :class:`fakenrt.scheduler.clusterbooks.ClusterBooks`)."""
        return (
            (PREDICTED_PLACEMENT, self.annotation()),
            (PREDICTED_MEMORY_GROUPS, self.groups_annotation()),
        )


EMPTY_PLACEMENT = Placement()


def merge_amounts(into: dict[int, dict[str, int]], zone: int, resource: str, amount: int) -> None:
    """Add ``amount`` of ``resource`` in ``zone`` to a mutable amounts table."""
    if amount == 0:
        return
    bucket = into.setdefault(zone, {})
    bucket[resource] = bucket.get(resource, 0) + amount
