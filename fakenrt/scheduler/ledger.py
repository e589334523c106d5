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

from fakenrt.scheduler.masks import bits
from fakenrt.scheduler.placement import Placement, is_memory_type
from fakenrt.scheduler.topology import NumaTopology


@dataclass(frozen=True)
class LedgerSnapshot:
    """An immutable copy of a ledger's state (for tests and rollback checks)."""

    available: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]
    blocks: tuple[tuple[int, tuple[tuple[int, ...], ...]], ...]


class ZoneLedger:
    """Free amounts per zone (may go negative when a reconstruction over-subscribes a zone:
    a negative amount simply never fits anything) plus memory-group state."""

    def __init__(
        self,
        topology: NumaTopology,
        available: Mapping[int, Mapping[str, int]],
        *,
        blocks: Mapping[int, list[frozenset[int]]] | None = None,
        unaccounted: tuple[str, ...] = (),
    ) -> None:
        self.topology = topology
        #: Pods on the node holding exclusive resources at zones nobody reported (see
        #: :mod:`fakenrt.scheduler.reconstruction`): the free amounts may over-report.
        self.unaccounted = unaccounted
        self.available: dict[int, dict[str, int]] = {
            z: dict(available.get(z, {})) for z in topology.zone_ids
        }
        # zone -> the NUMA sets of the memory blocks on it, in the order they were charged
        self.blocks: dict[int, list[frozenset[int]]] = {z: [] for z in topology.zone_ids}
        for zone, zone_blocks in (blocks or {}).items():
            self.blocks[zone] = list(zone_blocks)

    @property
    def assignments(self) -> dict[int, int]:
        """``NumberOfAssignments`` per zone: memory blocks on it."""
        return {z: len(b) for z, b in self.blocks.items()}

    @property
    def cells(self) -> dict[int, frozenset[int]]:
        """``Cells`` per zone: the group of its latest block, or itself when it has none."""
        return {z: (b[-1] if b else frozenset((z,))) for z, b in self.blocks.items()}

    def breaks_group(self, mask: int) -> bool:
        """``isAffinityViolatingNUMAAllocations``: a multi-zone ``mask`` over a zone that
        already holds a one-zone block or a block of another group. A one-zone mask never
        breaks a group here (the Memory Manager's hint filter keeps grouped zones out of
        one-zone hints separately)."""
        zones = bits(mask)
        if len(zones) < 2:
            return False
        group = frozenset(zones)
        for zone in zones:
            stack = self.blocks[zone]
            if stack and (len(stack[-1]) == 1 or stack[-1] != group):
                return True
        return False

    @classmethod
    def from_nrt(cls, topology: NumaTopology) -> ZoneLedger:
        """Trust NRT ``available`` (``reconstructAvailable: false``). Memory groups are not
        in NRT: memory in use on a zone is taken as one-zone blocks
        (:meth:`assume_single_blocks`)."""
        ledger = cls(topology, {z.id: z.available for z in topology.zones})
        ledger.assume_single_blocks()
        return ledger

    def assume_single_blocks(self) -> None:
        """Give a one-zone memory block to every zone whose NRT shows memory in use
        (``allocatable - available`` of a memory type) but that holds no known block: NRT
        does not publish Memory Manager groups, and a block nobody reported is most often
        a one-zone one (a group arises only when a pod's memory needs several zones). Such
        a zone then refuses to join a new multi-zone group, as the kubelet's would."""
        for zone in self.topology.zones:
            if self.blocks[zone.id]:
                continue
            if any(
                is_memory_type(name) and amount > zone.available.get(name, 0)
                for name, amount in zone.allocatable.items()
            ):
                self.blocks[zone.id].append(frozenset((zone.id,)))

    def copy(self) -> ZoneLedger:
        return ZoneLedger(
            self.topology, self.available, blocks=self.blocks, unaccounted=self.unaccounted
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
                stack = self.blocks.setdefault(zone, [])
                if sign > 0:
                    stack.append(block)
                elif block in stack:
                    del stack[len(stack) - 1 - stack[::-1].index(block)]

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
            blocks=tuple(
                (z, tuple(tuple(sorted(b)) for b in self.blocks[z])) for z in sorted(self.blocks)
            ),
        )
