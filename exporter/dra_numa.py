"""The NUMA node of an allocated DRA device, from the ResourceSlices of the node. Pure.

podresources names a container's DRA devices (driver, pool, device) but gives no
topology; the driver's ResourceSlice describes the device. Rules, first that answers:

1. ``numaNode`` - the standard attribute ``resource.kubernetes.io/numaNode`` (an int);
2. ``driverAttribute`` - a known driver's own NUMA attribute
   (:data:`exporter.dra_attributes.KNOWN_DRIVERS`: ``gpu.amd.com/numaNode``,
   ``gpu.nvidia.com/numa``, ``dra.cpu/numaNodeID``);
3. ``pciBusID`` - the device's PCI address (``resource.kubernetes.io/pciBusID``, else the
   known driver's own, ``gpu.nvidia.com/pcieBusID``) looked up in the node's sysfs
   (``/sys/bus/pci/devices/<address>/numa_node``; ``-1`` there: no NUMA affinity);
4. ``none`` - no rule answered (the device is in no zone, never guessed).

An attribute name without a domain is in the driver's domain, as the API defines it.
Slices: per (driver, pool) only those of the newest ``pool.generation`` count (older ones
are being replaced, as the scheduler's allocator treats them); a device listed twice in
the newest generation is ambiguous and resolves to ``none``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.dra_attributes import KNOWN_DRIVERS, NUMA_NODE, PCI_BUS_ID, is_pci_bus_id

RULE_STANDARD = "numaNode"
RULE_DRIVER = "driverAttribute"
RULE_PCI = "pciBusID"
RULE_NONE = "none"
RULES = (RULE_STANDARD, RULE_DRIVER, RULE_PCI, RULE_NONE)
#: The largest NUMA id the kubelet's 64-bit mask holds.
MAX_NUMA = 63

DeviceKey = tuple[str, str, str]  # driver, pool, device
#: Reads ``bus/pci/devices/<address>/numa_node``: the NUMA node, -1 for none, None when
#: it cannot be read.
PciNuma = Callable[[str], int | None]


@dataclass(frozen=True)
class DeviceNuma:
    """A device's NUMA node (None: unknown or no affinity), the rule that answered and
    what it read (the attribute name, or the PCI address)."""

    numa: int | None
    rule: str
    source: str = ""


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def device_attributes(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """A slice device's attributes, fully qualified, each as its one typed value."""
    out: dict[str, Any] = {}
    raw = device.get("attributes")
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        if isinstance(name, str) and isinstance(value, Mapping) and len(value) == 1:
            out[_qualified(name, driver)] = next(iter(value.values()))
    return out


def index_slices(slices: Iterable[Mapping[str, Any]]) -> dict[DeviceKey, dict[str, Any] | None]:
    """(driver, pool, device) -> its attributes, from the newest generation of each pool;
    None for a device listed twice there."""
    newest: dict[tuple[str, str], int] = {}
    kept: list[tuple[str, str, int, Mapping[str, Any]]] = []
    for item in slices:
        spec = item.get("spec")
        if not isinstance(spec, Mapping):
            continue
        driver, pool = spec.get("driver"), spec.get("pool")
        if not isinstance(driver, str) or not isinstance(pool, Mapping):
            continue
        name, generation = pool.get("name"), pool.get("generation")
        if not isinstance(name, str) or isinstance(generation, bool):
            continue
        if not isinstance(generation, int):
            continue
        newest[(driver, name)] = max(newest.get((driver, name), generation), generation)
        kept.append((driver, name, generation, spec))
    out: dict[DeviceKey, dict[str, Any] | None] = {}
    for driver, pool, generation, spec in kept:
        if generation != newest[(driver, pool)]:
            continue
        devices = spec.get("devices")
        for device in devices if isinstance(devices, list) else ():
            if not isinstance(device, Mapping) or not isinstance(device.get("name"), str):
                continue
            key = (driver, pool, device["name"])
            out[key] = None if key in out else device_attributes(driver, device)
    return out


def _numa_value(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_NUMA else None


def resolve(driver: str, attributes: Mapping[str, Any] | None, pci_numa: PciNuma) -> DeviceNuma:
    """The device's NUMA node by the rules of the module docstring."""
    if attributes is None:
        return DeviceNuma(None, RULE_NONE, "")
    numa = _numa_value(attributes.get(NUMA_NODE))
    if numa is not None:
        return DeviceNuma(numa, RULE_STANDARD, NUMA_NODE)
    known = KNOWN_DRIVERS.get(driver)
    if known is not None and known.numa_attribute is not None:
        numa = _numa_value(attributes.get(known.numa_attribute))
        if numa is not None:
            return DeviceNuma(numa, RULE_DRIVER, known.numa_attribute)
    names = [PCI_BUS_ID]
    if known is not None and known.pci_bus_attribute is not None:
        names.append(known.pci_bus_attribute)
    for name in names:
        address = attributes.get(name)
        if isinstance(address, str) and is_pci_bus_id(address):
            found = pci_numa(address.lower())
            if found is not None and 0 <= found <= MAX_NUMA:
                return DeviceNuma(found, RULE_PCI, address.lower())
            if found is not None:  # -1: the device has no NUMA affinity
                return DeviceNuma(None, RULE_NONE, address.lower())
    return DeviceNuma(None, RULE_NONE, "")
