"""A node's NUMA topology as the scheduler plugin sees it, read from its NRT object. Pure.

Units are whole numbers: ``cpu`` counts CPUs, ``memory`` / ``hugepages-*`` are bytes,
device resources count devices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

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
    and the NUMA zones, sorted by NUMA id."""

    node: str
    policy: str
    scope: str
    zones: tuple[ZoneResources, ...]

    @property
    def zone_ids(self) -> tuple[int, ...]:
        return tuple(z.id for z in self.zones)

    @property
    def reported(self) -> frozenset[str]:
        """Resources some zone reports (the per-zone resources the node can align)."""
        names: set[str] = set()
        for zone in self.zones:
            names.update(zone.capacity)
        return frozenset(names)

    def zone(self, numa_id: int) -> ZoneResources:
        for z in self.zones:
            if z.id == numa_id:
                return z
        raise KeyError(numa_id)

    def distance(self, a: int, b: int) -> int:
        """NUMA distance from zone ``a`` to zone ``b`` (from NRT ``costs``; 10 to itself and
        20 to others when NRT gives none)."""
        cost = self.zone(a).costs.get(b)
        if cost is not None:
            return cost
        return LOCAL_DISTANCE if a == b else REMOTE_DISTANCE
