"""Resource totals a profile gives, per NUMA zone and per node. Pure.

Units: ``cpu`` is a count of logical CPUs, ``memory`` / ``hugepages-*`` are bytes, device
resources are counts, ``pods`` is a count. These are the numbers the simulator starts
from, the NRT ``capacity`` / ``allocatable`` columns and the Node object's status.

* capacity: everything the zone has - reserved CPUs and unhealthy devices included (the
  kubelet counts both for its preferred hint width).
* allocatable: capacity minus ``reservedSystemCPUs`` and minus unhealthy devices.
"""

from __future__ import annotations

from fakenrt.profiles.model import NodeProfile, Zone

ZoneAmounts = dict[int, dict[str, int]]


def _zone_amounts(
    zone: Zone, reserved_cpus: frozenset[int], *, allocatable: bool
) -> dict[str, int]:
    cpus = zone.cpus - reserved_cpus if allocatable else zone.cpus
    out: dict[str, int] = {"cpu": len(cpus), "memory": zone.memory}
    out.update(zone.hugepages)
    for name, devices in zone.devices.items():
        out[name] = len(devices.healthy) if allocatable else len(devices.ids)
    return out


def zone_capacity(profile: NodeProfile) -> ZoneAmounts:
    """Per zone id: resource -> everything the zone has."""
    return {
        z.id: _zone_amounts(z, profile.kubelet.reserved_cpus, allocatable=False)
        for z in profile.zones
    }


def zone_allocatable(profile: NodeProfile) -> ZoneAmounts:
    """Per zone id: resource -> what pods may be given (minus reserved CPUs, unhealthy devices)."""
    return {
        z.id: _zone_amounts(z, profile.kubelet.reserved_cpus, allocatable=True)
        for z in profile.zones
    }


def _node_totals(
    profile: NodeProfile, per_zone: ZoneAmounts, *, allocatable: bool
) -> dict[str, int]:
    total: dict[str, int] = {}
    for amounts in per_zone.values():
        for name, value in amounts.items():
            total[name] = total.get(name, 0) + value
    for name, devices in profile.devices.items():
        count = len(devices.healthy) if allocatable else len(devices.ids)
        total[name] = total.get(name, 0) + count
    total["pods"] = profile.max_pods
    return total


def node_capacity(profile: NodeProfile) -> dict[str, int]:
    """Whole-node capacity (Node ``status.capacity``), including no-affinity devices."""
    return _node_totals(profile, zone_capacity(profile), allocatable=False)


def node_allocatable(profile: NodeProfile) -> dict[str, int]:
    """Whole-node allocatable (Node ``status.allocatable``), the kubelet's fit check input."""
    return _node_totals(profile, zone_allocatable(profile), allocatable=True)
