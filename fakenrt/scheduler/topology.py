"""A node's NUMA topology as the scheduler plugin sees it, read from its NRT object. Pure.

Units are whole numbers: ``cpu`` counts CPUs, ``memory`` / ``hugepages-*`` are bytes,
device resources count devices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

from fakenrt.hashed import Hashed
from fakenrt.scheduler.masks import mask_of

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

#: The CPU Manager / Memory Manager policies, as the kubelet configuration spells them;
#: only the static ones align anything.
CPU_MANAGER_POLICIES = ("none", "static")
CPU_MANAGER_STATIC = "static"
MEMORY_MANAGER_POLICIES = ("None", "Static")
MEMORY_MANAGER_STATIC = "Static"

#: Distances the kubelet assumes when a machine reports none (ACPI SLIT defaults).
LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 20


@dataclass(frozen=True)
class ZoneResources:
    """One NUMA zone of an NRT object.

    ``capacity`` counts everything the zone has (reserved CPUs, unhealthy devices);
    ``allocatable`` what pods may be given; ``available`` what is still free.
    ``costs`` maps another zone's NUMA id to the NUMA distance to it.
    """

    id: int
    capacity: Mapping[str, int] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    available: Mapping[str, int] = field(default_factory=dict)
    costs: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class NumaTopology:
    """What the plugin reads from one NRT object: the Topology Manager policy and scope
    and the NUMA zones, sorted by NUMA id.

    ``cpu_manager_policy`` / ``memory_manager_policy``: the resource managers' policies when
    the NRT publishes them (``cpuManagerPolicy`` / ``memoryManagerPolicy`` attributes), else
    None (unknown: assumed aligned). ``fingerprint`` / ``fingerprint_method``: the
    ``nodeTopologyPodsFingerprint`` of the pods counted in ``available`` and its method,
    when published."""

    node: str
    policy: str
    scope: str
    zones: tuple[ZoneResources, ...]
    cpu_manager_policy: str | None = None
    memory_manager_policy: str | None = None
    fingerprint: str | None = None
    fingerprint_method: str | None = None

    @cached_property
    def zone_ids(self) -> tuple[int, ...]:
        return tuple(z.id for z in self.zones)

    def with_available(
        self, available: Mapping[int, Mapping[str, int]], *, fingerprint: str | None
    ) -> NumaTopology:
        """This NRT with other ``available`` amounts (zone id -> resource -> amount) and pod
        fingerprint. What depends only on the rest - policy, scope, managers, the zones'
        capacity, allocatable and costs - is shared with this object, already computed."""
        zones = tuple(
            ZoneResources(
                id=z.id,
                capacity=z.capacity,
                allocatable=z.allocatable,
                available=available.get(z.id, {}),
                costs=z.costs,
            )
            for z in self.zones
        )
        new = NumaTopology(
            node=self.node,
            policy=self.policy,
            scope=self.scope,
            zones=zones,
            cpu_manager_policy=self.cpu_manager_policy,
            memory_manager_policy=self.memory_manager_policy,
            fingerprint=fingerprint,
            fingerprint_method=self.fingerprint_method,
        )
        for name in _SHARED:
            new.__dict__[name] = getattr(self, name)
        return new

    @cached_property
    def static(self) -> object:
        """What a pod's verdict and scores read of this NRT besides the free amounts:
        policy, scope, managers, and per zone its id, capacity, allocatable and costs (not
        the node's name, ``available`` or the pod fingerprint), as a hashable value
        (hashed once: it is part of every state key of the node's books)."""
        return Hashed(
            (
                self.policy,
                self.scope,
                self.cpu_manager_policy,
                self.memory_manager_policy,
                tuple(
                    (
                        z.id,
                        tuple(sorted(z.capacity.items())),
                        tuple(sorted(z.allocatable.items())),
                        tuple(sorted(z.costs.items())),
                    )
                    for z in self.zones
                ),
            )
        )

    @cached_property
    def reported(self) -> frozenset[str]:
        """Resources some zone reports (the per-zone resources the node can align)."""
        names: set[str] = set()
        for zone in self.zones:
            names.update(zone.capacity)
        return frozenset(names)

    @cached_property
    def unaligned(self) -> frozenset[str]:
        """Reported resources the node's kubelet is known not to align: ``cpu`` when the
        CPU Manager policy is published and not ``static``; every memory type when the
        Memory Manager policy is published and not ``Static`` (hugepages are aligned by the
        Memory Manager only)."""
        out: set[str] = set()
        if self.cpu_manager_policy is not None and self.cpu_manager_policy != CPU_MANAGER_STATIC:
            out.add("cpu")
        if (
            self.memory_manager_policy is not None
            and self.memory_manager_policy != MEMORY_MANAGER_STATIC
        ):
            out.update(r for r in self.reported if r == "memory" or r.startswith("hugepages-"))
        return frozenset(out)

    @cached_property
    def _by_id(self) -> dict[int, ZoneResources]:
        return {z.id: z for z in self.zones}

    def zone(self, numa_id: int) -> ZoneResources:
        return self._by_id[numa_id]

    @cached_property
    def distances(self) -> dict[tuple[int, int], int]:
        """NUMA distance from zone ``a`` to zone ``b`` for every pair (from NRT ``costs``;
        10 to itself and 20 to others where NRT gives none)."""
        out: dict[tuple[int, int], int] = {}
        for a in self.zones:
            for b in self.zones:
                cost = a.costs.get(b.id)
                if cost is None:
                    cost = LOCAL_DISTANCE if a.id == b.id else REMOTE_DISTANCE
                out[(a.id, b.id)] = cost
        return out

    def distance(self, a: int, b: int) -> int:
        return self.distances[(a, b)]

    @cached_property
    def combinations(self) -> dict[int, tuple[tuple[tuple[int, ...], int, int], ...]]:
        """Width -> every combination of that many zones (lowest ids first) as
        ``(zone ids, mask, sum of distances over its ordered pairs)``."""
        d = self.distances
        return {
            width: tuple(
                (combo, mask_of(combo), sum(d[(a, b)] for a in combo for b in combo))
                for combo in combinations(self.zone_ids, width)
            )
            for width in range(1, len(self.zones) + 1)
        }

    @cached_property
    def mask_distances(self) -> dict[int, int]:
        """Mask -> sum of NUMA distances over the ordered pairs of its zones (what
        ``prefer-closest-numa-nodes`` ranks equally narrow masks by)."""
        return {mask: total for rows in self.combinations.values() for _, mask, total in rows}


#: The cached properties that depend only on the static part (not on ``available``):
#: computed once and shared by :meth:`NumaTopology.with_available`.
_SHARED = ("static", "reported", "unaligned", "distances", "combinations", "mask_distances")
