"""What a fake device plugin advertises, and its deterministic preferred allocation. Pure.

A node profile's devices of one resource become the plugin's device list in profile order
(zones in ascending id order, then the node's no-affinity devices), each with its NUMA
node (none for no-affinity devices) and its health.

``GetPreferredAllocation`` decides which device ids the kubelet's device manager takes
when it has a choice (``devicesToAllocate`` in ``pkg/kubelet/cm/devicemanager/
manager.go`` asks the plugin, then takes the preferred ids it offered). Without it the
kubelet picks from a Go map - a different pick on every run. The rule here is the one the
simulator uses to pack devices (docs/kubelet-simulator.md), so the real kubelet with this
plugin and the simulator pick the same ids:

1. the ``must_include`` ids (devices the pod's init containers hold), in device order;
2. then devices with a NUMA node, the NUMA node with the fewest available devices first,
   then by NUMA id, and within a NUMA node in device order;
3. then devices without NUMA affinity, in device order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fakenrt.profiles.model import NodeProfile

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"


@dataclass(frozen=True)
class PluginDevice:
    id: str
    numa: int | None
    healthy: bool = True

    @property
    def health(self) -> str:
        return HEALTHY if self.healthy else UNHEALTHY


def resources(profile: NodeProfile) -> tuple[str, ...]:
    """Every device resource of the node, sorted."""
    names = {r for z in profile.zones for r in z.devices} | set(profile.devices)
    return tuple(sorted(names))


def plugin_devices(profile: NodeProfile, resource: str) -> tuple[PluginDevice, ...]:
    """The devices of ``resource``, in profile order. Raises ValueError for a resource the
    node does not have."""
    out: list[PluginDevice] = []
    for zone in profile.zones:
        devices = zone.devices.get(resource)
        if devices is not None:
            out += [PluginDevice(d, zone.id, d not in devices.unhealthy) for d in devices.ids]
    node_devices = profile.devices.get(resource)
    if node_devices is not None:
        out += [PluginDevice(d, None, d not in node_devices.unhealthy) for d in node_devices.ids]
    if not out:
        raise ValueError(
            f"node {profile.name} has no devices of {resource!r}; it has: "
            f"{', '.join(resources(profile)) or 'none'}"
        )
    return tuple(out)


def preferred_allocation(
    devices: Sequence[PluginDevice],
    *,
    available: Iterable[str],
    must_include: Iterable[str],
    size: int,
) -> list[str]:
    """``size`` ids out of ``available`` (``must_include`` first), chosen as the module
    docstring says. Unknown ids are ignored; fewer are returned when fewer are available."""
    order = {d.id: i for i, d in enumerate(devices)}
    numa_of = {d.id: d.numa for d in devices}
    pool = sorted({i for i in available if i in order}, key=order.__getitem__)
    chosen = sorted({i for i in must_include if i in order}, key=order.__getitem__)
    rest = [i for i in pool if i not in set(chosen)]
    per_numa: dict[int, int] = {}
    for device_id in rest:
        numa = numa_of[device_id]
        if numa is not None:
            per_numa[numa] = per_numa.get(numa, 0) + 1

    def rank(device_id: str) -> tuple[int, int, int, int]:
        numa = numa_of[device_id]
        if numa is None:
            return (1, 0, 0, order[device_id])
        return (0, per_numa[numa], numa, order[device_id])

    chosen += sorted(rest, key=rank)
    return chosen[: max(size, 0)]
