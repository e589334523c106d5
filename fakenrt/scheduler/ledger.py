"""Per-zone free capacity of one node, with the in-cycle reservation. Pure (no I/O).

A :class:`ZoneLedger` starts from either NRT ``available`` or a reconstruction
(:mod:`fakenrt.scheduler.reconstruction`). Assuming a pod charges its placement
(:meth:`ZoneLedger.charge`); rolling it back credits the exact same amounts
(:meth:`ZoneLedger.credit`), so charge-then-credit restores the ledger exactly.

The ledger also keeps the Memory Manager's per-NUMA-node group bookkeeping
(``pkg/kubelet/cm/memorymanager/policy_static.go``: ``NumberOfAssignments`` and
``Cells``): a NUMA node holding memory of a multi-node block belongs to that group, and
can serve neither a single-node block nor a block over a different set of nodes until
every block on it is gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.topology import NumaTopology


@dataclass(frozen=True)
class LedgerSnapshot:
    """An immutable copy of a ledger's state (for tests and rollback checks)."""

    available: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]
    assignments: tuple[tuple[int, int], ...]
    cells: tuple[tuple[int, tuple[int, ...]], ...]


class ZoneLedger:
    """Free amounts per zone (may go negative when a reconstruction over-subscribes a zone:
    a negative amount simply never fits anything) plus memory-group state."""

    def __init__(
        self,
        topology: NumaTopology,
        available: Mapping[int, Mapping[str, int]],
        *,
        assignments: Mapping[int, int] | None = None,
        cells: Mapping[int, frozenset[int]] | None = None,
    ) -> None:
        self.topology = topology
        self.available: dict[int, dict[str, int]] = {
            z: dict(available.get(z, {})) for z in topology.zone_ids
        }
        self.assignments: dict[int, int] = dict.fromkeys(topology.zone_ids, 0)
        self.cells: dict[int, frozenset[int]] = {z: frozenset((z,)) for z in topology.zone_ids}
        if assignments:
            self.assignments.update(assignments)
        if cells:
            self.cells.update(cells)

    @classmethod
    def from_nrt(cls, topology: NumaTopology) -> ZoneLedger:
        """Trust NRT ``available`` (``reconstructAvailable: false``). Memory groups are not
        in NRT, so every zone starts as its own group."""
        return cls(topology, {z.id: z.available for z in topology.zones})

    def copy(self) -> ZoneLedger:
        return ZoneLedger(
            self.topology, self.available, assignments=self.assignments, cells=self.cells
        )

    def free(self, zone: int, resource: str) -> int:
        return self.available[zone].get(resource, 0)

    def _apply(self, placement: Placement, sign: int) -> None:
        for zone, amounts in placement.amounts.items():
            bucket = self.available.setdefault(zone, {})
            for resource, amount in amounts.items():
                bucket[resource] = bucket.get(resource, 0) - sign * amount
        for block in placement.memory_blocks:
            for zone in block:
                self.assignments[zone] = self.assignments.get(zone, 0) + sign
                if self.assignments[zone] <= 0:
                    self.assignments[zone] = 0
                    self.cells[zone] = frozenset((zone,))
                else:
                    self.cells[zone] = block

    def charge(self, placement: Placement) -> None:
        """Assume a pod: take its placement out of the zones."""
        self._apply(placement, +1)

    def credit(self, placement: Placement) -> None:
        """Roll a pod back (or forget it): give its placement back to the zones."""
        self._apply(placement, -1)

    def snapshot(self) -> LedgerSnapshot:
        def amounts(d: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
            return tuple(sorted((k, v) for k, v in d.items() if v != 0))

        return LedgerSnapshot(
            available=tuple((z, amounts(self.available[z])) for z in sorted(self.available)),
            assignments=tuple(sorted(self.assignments.items())),
            cells=tuple((z, tuple(sorted(self.cells[z]))) for z in sorted(self.cells)),
        )
