"""A pod's NUMA placement: what it holds per zone, and the NUMA sets of its memory blocks.

Pure. The same value is charged by the in-cycle reservation, credited back on rollback,
rebuilt from the observed / predicted annotations for reconstruction, and written as the
predicted annotation at bind (through ``exporter.annotations``, the format's one owner).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.annotations import ZonePlacement, format_placement


def is_memory_type(resource: str) -> bool:
    """``memory`` and every ``hugepages-<size>``: what the Memory Manager sizes together."""
    return resource == "memory" or resource.startswith("hugepages-")


@dataclass(frozen=True)
class Placement:
    """``amounts``: zone id -> resource -> amount the pod holds there (non-zero only).
    ``memory_blocks``: the NUMA-node set of each Memory Manager block the pod holds (one
    per memory type and container); a set of several zones is a Memory Manager group."""

    amounts: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    memory_blocks: tuple[frozenset[int], ...] = ()

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
        """The ``kai.scheduler/numa-placement-predicted`` value for this placement."""
        return format_placement(
            ZonePlacement(numa_id=z, amounts=dict(a)) for z, a in self.amounts.items()
        )


EMPTY_PLACEMENT = Placement()


def merge_amounts(into: dict[int, dict[str, int]], zone: int, resource: str, amount: int) -> None:
    """Add ``amount`` of ``resource`` in ``zone`` to a mutable amounts table."""
    if amount == 0:
        return
    bucket = into.setdefault(zone, {})
    bucket[resource] = bucket.get(resource, 0) + amount
