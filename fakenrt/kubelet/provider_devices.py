"""The device manager as a hint provider. Pure.

Mirrors ``pkg/kubelet/cm/devicemanager/topology_hints.go`` and ``manager.go``:

* requests come from container *limits* of device-plugin resources, for any QoS class;
* a resource none of whose devices has NUMA affinity has no preference (no hints);
* hints (``generateDeviceTopologyHints``): every NUMA mask holding enough free healthy
  devices plus all devices reused from the pod's init containers; preferred when its
  width equals the fewest NUMA nodes whose devices - *all* of them, unhealthy and
  allocated ones included - could hold the request; devices without NUMA affinity count
  for neither; not enough free devices at all gives an empty list (impossible);
* allocation (``devicesToAllocate`` without ``GetPreferredAllocation``): reused init
  container devices first, then devices on the hint's NUMA nodes, then devices on other
  NUMA nodes, then devices without NUMA affinity.

The kubelet picks among equally good devices in Go map order (random). This model picks
deterministically: NUMA nodes in ``filterByAffinity`` order (inside the hint first, the
node with fewer free devices first, then by id), devices in profile order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.provider import AllocationError
from fakenrt.kubelet.quantities import value
from fakenrt.podspec import ContainerSpec, PodSpec, pod_level
from fakenrt.profiles.model import NodeProfile


@dataclass(frozen=True)
class Device:
    id: str
    numa: int | None
    healthy: bool


@dataclass(frozen=True)
class DeviceInventory:
    """Every device of every device-plugin resource, in profile order (zones by id, then
    devices without NUMA affinity)."""

    numa_nodes: tuple[int, ...]
    devices: Mapping[str, tuple[Device, ...]]
    #: The device manager's hints, by (resource, free ids, reusable ids, request):
    #: :func:`generate_hints` is a pure function of them and of the inventory.
    hinted: dict[tuple[str, frozenset[str], frozenset[str], int], tuple[TopologyHint, ...]] = field(
        init=False, default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def from_profile(cls, profile: NodeProfile) -> DeviceInventory:
        devices: dict[str, list[Device]] = {}
        for zone in profile.zones:
            for name, dset in zone.devices.items():
                devices.setdefault(name, []).extend(
                    Device(i, zone.id, i not in dset.unhealthy) for i in dset.ids
                )
        for name, dset in profile.devices.items():
            devices.setdefault(name, []).extend(
                Device(i, None, i not in dset.unhealthy) for i in dset.ids
            )
        return cls(
            numa_nodes=tuple(sorted(profile.zone_ids)),
            devices={k: tuple(v) for k, v in devices.items()},
        )

    def has_topology(self, resource: str) -> bool:
        return any(d.numa is not None for d in self.devices.get(resource, ()))

    def numa_of(self, resource: str) -> dict[str, int | None]:
        return {d.id: d.numa for d in self.devices.get(resource, ())}

    def healthy(self, resource: str) -> tuple[str, ...]:
        return tuple(d.id for d in self.devices.get(resource, ()) if d.healthy)


def container_device_requests(
    container: ContainerSpec, inventory: DeviceInventory
) -> dict[str, int]:
    """``getContainerDeviceRequest``: limits of device-plugin resources."""
    return {
        name: value(amount)
        for name, amount in sorted(container.limits.items())
        if name in inventory.devices
    }


def pod_device_requests(pod: PodSpec, inventory: DeviceInventory) -> dict[str, int]:
    """``getPodDeviceRequest``: the pod's effective *limits* (``PodLimits``)."""

    totals = pod_level(
        ((c.restartable, c.limits) for c in pod.init_containers),
        (c.limits for c in pod.containers),
    )
    # PodLimits keeps a resource whose limits add up to zero (addResourceList inserts the
    # key); pod_level drops it. Limits are never negative, so a device resource
    # some container limits but missing from the totals is exactly a zero total.
    for c in (*pod.init_containers, *pod.containers):
        for name in c.limits:
            totals.setdefault(name, Decimal(0))
    return {
        name: value(amount) for name, amount in sorted(totals.items()) if name in inventory.devices
    }


def _count_per_node(nodes: Iterable[int | None]) -> dict[int, int]:
    out: dict[int, int] = {}
    for n in nodes:
        if n is not None:
            out[n] = out.get(n, 0) + 1
    return out


#: Hints kept per inventory (:attr:`DeviceInventory.hinted`) before they are started
#: afresh.
MAX_HINTED = 4096


def generate_hints(
    inventory: DeviceInventory,
    resource: str,
    available: frozenset[str],
    reusable: frozenset[str],
    request: int,
) -> tuple[TopologyHint, ...]:
    """``generateDeviceTopologyHints``. A pure function of its arguments: the hints are
    kept on the inventory (a node's states recur)."""
    key = (resource, available, reusable, request)
    known = inventory.hinted.get(key)
    if known is None:
        known = _generate_hints(inventory, resource, available, reusable, request)
        if len(inventory.hinted) >= MAX_HINTED:
            inventory.hinted.clear()
        inventory.hinted[key] = known
    return known


def _generate_hints(
    inventory: DeviceInventory,
    resource: str,
    available: frozenset[str],
    reusable: frozenset[str],
    request: int,
) -> tuple[TopologyHint, ...]:
    numa_of = inventory.numa_of(resource)
    per_node_all = _count_per_node(d.numa for d in inventory.devices[resource])
    per_node_free = _count_per_node(numa_of[d] for d in available)
    reused_nodes = {numa_of[d] for d in reusable if numa_of[d] is not None}
    reused = sum(1 for d in reusable if numa_of[d] is not None)
    min_width = len(inventory.numa_nodes)
    masks: list[BitMask] = []
    for mask in iterate_masks(inventory.numa_nodes):
        bits = mask.bits()
        width = len(bits)
        if width < min_width and sum(per_node_all.get(n, 0) for n in bits) >= request:
            min_width = width
        if not reused_nodes.issubset(bits):
            continue
        if reused + sum(per_node_free.get(n, 0) for n in bits) < request:
            continue
        masks.append(mask)
    return tuple(TopologyHint(m, m.count() == min_width) for m in masks)


class DeviceProvider:
    """The device manager for one admission (see module docstring)."""

    name = "devices"

    def __init__(self, inventory: DeviceInventory, allocated: Mapping[str, frozenset[str]]) -> None:
        self.inventory = inventory
        #: resource -> device ids in use on the node (foreign pods included).
        self.allocated: dict[str, frozenset[str]] = dict(allocated)
        #: container name -> resource -> device ids, for the pod being admitted.
        self.assigned: dict[str, dict[str, tuple[str, ...]]] = {}
        self._reuse: dict[str, frozenset[str]] = {}
        self._notes: list[str] = []

    def notes(self) -> list[str]:
        out, self._notes = self._notes, []
        return out

    def available(self, resource: str) -> frozenset[str]:
        return frozenset(self.inventory.healthy(resource)) - self.allocated.get(
            resource, frozenset()
        )

    def _hints(self, requests: Mapping[str, int], *, reuse: bool) -> ProviderHints:
        out: dict[str, tuple[TopologyHint, ...] | None] = {}
        for resource, requested in requests.items():
            if not self.inventory.has_topology(resource):
                self._notes.append(f"{resource}: no device has NUMA affinity (no preference)")
                out[resource] = None
                continue
            available = self.available(resource)
            reusable = self._reuse.get(resource, frozenset()) if reuse else frozenset()
            if len(available | reusable) < requested:
                self._notes.append(
                    f"{resource}: {requested} requested, only {len(available | reusable)} "
                    "free healthy devices"
                )
                out[resource] = ()
                continue
            out[resource] = generate_hints(self.inventory, resource, available, reusable, requested)
        return out

    def container_hints(self, pod: PodSpec, container: ContainerSpec) -> ProviderHints:
        return self._hints(container_device_requests(container, self.inventory), reuse=True)

    def pod_hints(self, pod: PodSpec) -> ProviderHints:
        return self._hints(pod_device_requests(pod, self.inventory), reuse=False)

    def _ordered_candidates(self, resource: str, hint: TopologyHint) -> list[str]:
        """Free healthy devices in allocation order (``filterByAffinity``)."""
        available = self.available(resource)
        devices = [d for d in self.inventory.devices[resource] if d.id in available]
        if not self.inventory.has_topology(resource) or hint.affinity is None:
            return [d.id for d in devices]
        affinity = hint.affinity
        per_node: dict[int, int] = {}
        for d in devices:
            if d.numa is not None:
                per_node[d.numa] = per_node.get(d.numa, 0) + 1

        def rank(d: Device) -> tuple[int, int, int]:
            if d.numa is None:
                return (2, 0, 0)
            return (0 if affinity.is_set(d.numa) else 1, per_node[d.numa], d.numa)

        return [d.id for d in sorted(devices, key=rank)]

    def allocate(self, pod: PodSpec, container: ContainerSpec, hint: TopologyHint) -> None:
        got: dict[str, tuple[str, ...]] = {}
        for resource, needed in container_device_requests(container, self.inventory).items():
            healthy = self.inventory.healthy(resource)
            if not healthy:
                raise AllocationError(
                    f"no healthy devices present; cannot allocate unhealthy devices {resource}"
                )
            if needed == 0:
                continue
            order = {d.id: i for i, d in enumerate(self.inventory.devices[resource])}
            taken: list[str] = []
            for dev in sorted(self._reuse.get(resource, frozenset()), key=order.__getitem__):
                if len(taken) == needed:
                    break
                taken.append(dev)
            remaining = needed - len(taken)
            if remaining:
                available = self.available(resource)
                if len(available) < remaining:
                    raise AllocationError(
                        f"requested number of devices unavailable for {resource}. "
                        f"Requested: {remaining}, Available: {len(available)}"
                    )
                taken.extend(self._ordered_candidates(resource, hint)[:remaining])
            self.allocated[resource] = self.allocated.get(resource, frozenset()) | set(taken)
            got[resource] = tuple(taken)
        self.assigned[container.name] = got
        regular_init = any(
            c.name == container.name and not c.restartable for c in pod.init_containers
        )
        for resource, ids in got.items():
            current = self._reuse.get(resource, frozenset())
            self._reuse[resource] = current | set(ids) if regular_init else current - set(ids)
