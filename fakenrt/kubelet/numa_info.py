"""The machine's NUMA nodes and distances, and the two ways to pick between masks.

Mirrors ``pkg/kubelet/cm/topologymanager/numa_info.go``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fakenrt.kubelet.bitmask import BitMask


@dataclass(frozen=True)
class NumaInfo:
    """NUMA node ids (ascending) and, per node id, its distance to each node id."""

    nodes: tuple[int, ...]
    distances: Mapping[int, Mapping[int, int]] = field(default_factory=dict)

    @classmethod
    def build(cls, nodes: Sequence[int], distance: Mapping[int, Mapping[int, int]]) -> NumaInfo:
        return cls(nodes=tuple(sorted(nodes)), distances=distance)

    def default_affinity(self) -> BitMask:
        """Every NUMA node of the machine."""
        return BitMask.from_bits(self.nodes)

    def narrowest(self, m1: BitMask, m2: BitMask) -> BitMask:
        return m1 if m1.is_narrower_than(m2) else m2

    def distance_sum(self, mask: BitMask) -> int:
        """Sum of distances over all ordered pairs of the mask's nodes (diagonal included).

        Upstream compares the average; masks are only compared at equal bit counts, where
        the averages share a denominator, so comparing integer sums is exact."""
        bits = mask.bits()
        return sum(self.distances[a][b] for a in bits for b in bits)

    def closest(self, m1: BitMask, m2: BitMask) -> BitMask:
        """Fewer nodes first; at equal width the smaller average distance, then the mask
        with more lower-numbered bits (``NUMAInfo.Closest``)."""
        if m1.count() != m2.count():
            return self.narrowest(m1, m2)
        d1, d2 = self.distance_sum(m1), self.distance_sum(m2)
        if d1 == d2:
            return m1 if m1.is_less_than(m2) else m2
        return m1 if d1 < d2 else m2
