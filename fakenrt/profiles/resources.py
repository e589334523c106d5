"""Resource totals a profile gives, per NUMA zone and per node. Pure.

Units: ``cpu`` is a count of logical CPUs, ``memory`` / ``hugepages-*`` are bytes, device
resources are counts, ``pods`` is a count. These are the numbers the simulator starts
from, the NRT ``capacity`` / ``allocatable`` columns and the Node object's status.

Per zone:

* capacity: everything the zone has - reserved CPUs and unhealthy devices included (the
  kubelet counts both for its preferred hint width), memory and hugepages with the
  zone's ``reservedMemory`` added back;
* allocatable: capacity minus the reserved CPUs, minus unhealthy devices, minus
  ``reservedMemory`` - that is the zone's ``memory`` / ``hugepages-<size>`` as written,
  the Memory Manager's allocatable.

Per node, as the kubelet computes its Node status (``pkg/kubelet/cm/
node_container_manager_linux.go`` ``GetNodeAllocatableReservation``,
``pkg/kubelet/nodestatus/setters.go`` ``MachineInfo``):

* capacity memory is the machine's memory: every zone's memory, reserved memory and
  hugepages (``/proc/meminfo`` ``MemTotal`` counts hugepages in);
* allocatable = capacity - ``systemReserved`` - ``kubeReserved`` - the hard eviction
  threshold (memory only), and memory further minus the hugepages capacity;
* cpu: ``reservedSystemCPUs``, when given, replaces the cpu of ``systemReserved`` and
  ``kubeReserved`` (``cmd/kubelet/app/server.go``).
"""

from __future__ import annotations

from fakenrt.profiles.model import NodeProfile, Zone

ZoneAmounts = dict[int, dict[str, int]]


def _zone_amounts(profile: NodeProfile, zone: Zone, *, allocatable: bool) -> dict[str, int]:
    reserved_cpus = profile.kubelet.reserved_cpus
    reserved = profile.kubelet.reserved_memory.get(zone.id, {})
    cpus = zone.cpus - reserved_cpus if allocatable else zone.cpus
    out: dict[str, int] = {"cpu": len(cpus), "memory": zone.memory}
    out.update(zone.hugepages)
    for name, amount in reserved.items():
        out.setdefault(name, 0)
        if not allocatable:
            out[name] += amount
    for name, devices in zone.devices.items():
        out[name] = len(devices.healthy) if allocatable else len(devices.ids)
    return out


def zone_capacity(profile: NodeProfile) -> ZoneAmounts:
    """Per zone id: resource -> everything the zone has."""
    return {z.id: _zone_amounts(profile, z, allocatable=False) for z in profile.zones}


def zone_allocatable(profile: NodeProfile) -> ZoneAmounts:
    """Per zone id: resource -> what pods may be given (minus reserved CPUs, unhealthy
    devices and reserved memory)."""
    return {z.id: _zone_amounts(profile, z, allocatable=True) for z in profile.zones}


def node_capacity(profile: NodeProfile) -> dict[str, int]:
    """Whole-node capacity (Node ``status.capacity``), including no-affinity devices."""
    total: dict[str, int] = {}
    for amounts in zone_capacity(profile).values():
        for name, value in amounts.items():
            total[name] = total.get(name, 0) + value
    total["memory"] = total.get("memory", 0) + sum(
        v for k, v in total.items() if k.startswith("hugepages-")
    )
    for name, devices in profile.devices.items():
        total[name] = total.get(name, 0) + len(devices.ids)
    total["pods"] = profile.max_pods
    return total


def node_reservation(profile: NodeProfile) -> dict[str, int]:
    """``GetNodeAllocatableReservation``: systemReserved + kubeReserved + the hard
    eviction threshold; ``cpu`` in millicores, memory and hugepages in bytes. The cpu is
    the number of reserved CPUs when ``reservedSystemCPUs`` is given."""
    cfg = profile.kubelet
    out: dict[str, int] = {}
    for part in (cfg.system_reserved, cfg.kube_reserved):
        for name, amount in part.items():
            out[name] = out.get(name, 0) + amount
    if cfg.cpu_reservation_millis is not None:
        out["cpu"] = cfg.cpu_reservation_millis
    else:
        out["cpu"] = len(cfg.reserved_cpus) * 1000
    if cfg.eviction_hard_memory is not None:
        capacity = node_capacity(profile)["memory"]
        out["memory"] = out.get("memory", 0) + cfg.eviction_hard_memory.bytes_of(capacity)
    return out


def node_allocatable_units(profile: NodeProfile) -> dict[str, int]:
    """Node allocatable for the kubelet's fit check: ``cpu`` in millicores, memory and
    hugepages in bytes, devices and pods as counts (never below zero)."""
    capacity = node_capacity(profile)
    capacity["cpu"] = capacity.get("cpu", 0) * 1000
    reservation = node_reservation(profile)
    out = {name: max(0, value - reservation.get(name, 0)) for name, value in capacity.items()}
    hugepages = sum(v for k, v in capacity.items() if k.startswith("hugepages-"))
    out["memory"] = max(0, out.get("memory", 0) - hugepages)
    for name, devices in profile.devices.items():
        out[name] = out.get(name, 0) - len(devices.ids) + len(devices.healthy)
    for zone in profile.zones:
        for name, devices in zone.devices.items():
            out[name] = out.get(name, 0) - len(devices.ids) + len(devices.healthy)
    return out


def node_allocatable(profile: NodeProfile) -> dict[str, int]:
    """Whole-node allocatable (Node ``status.allocatable``): cpu as whole CPUs (rounded
    down when a fractional cpu reservation leaves a fraction)."""
    out = node_allocatable_units(profile)
    out["cpu"] = out.get("cpu", 0) // 1000
    return out
