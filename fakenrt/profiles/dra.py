"""DRA devices of a profile: the zones' ``dra`` entries and the node's ``dra`` section,
read and validated into :class:`~fakenrt.profiles.model.DraDriver` values. Pure.

A zone lists DRA devices per driver, like device-plugin devices:

* a count: ``gpu.nvidia.com: 4`` - names generated as the driver names its devices;
* a list: ``["gpu-0", {name: gpu-1, pciBusID: "0000:3b:00.0"}]`` - names, or mappings with
  ``name`` and optionally ``pciBusID``, ``pcieRoot`` and ``attributes``.

The node's ``dra`` section holds ``drivers`` (per driver: ``pool``, ``deviceClass``,
``publish``, ``attributes``, ``capacity``), ``devices`` (DRA devices without NUMA
affinity) and ``cpu`` (the CPU driver ``dra.cpu``, one device per NUMA node). Names and
values follow the resource.k8s.io/v1 validation (``pkg/apis/resource/validation``): a
driver name is a DNS subdomain of at most 63 characters, a device name a DNS label, an
attribute or capacity name a C identifier of at most 32 characters with an optional
domain of at most 63, a string or version value at most 64 characters, at most 32
attributes and capacities per device. The format is documented in docs/profiles.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from exporter.dra_attributes import CPU_DRIVER, NUMA_NODE, PCI_BUS_ID, PCIE_ROOT
from exporter.quantities import QuantityError, parse_decimal
from fakenrt.profiles import dradrivers
from fakenrt.profiles.fields import (
    FieldError,
    check_keys,
    child,
    describe,
    integer,
    mapping,
    sequence,
    string,
)
from fakenrt.profiles.limits import MAX_DEVICES_PER_RESOURCE
from fakenrt.profiles.model import CpuInfo, DraAttribute, DraDevice, DraDriver
from fakenrt.profiles.names import dns_subdomain_problem

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PCI_BUS_ID = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([01][0-9a-f])\.([0-7])$")
_PCIE_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
# semver 2.0.0 (https://semver.org), as the API server parses version attributes
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
MAX_DRIVER_NAME = 63
MAX_DOMAIN = 63
MAX_ID = 32
MAX_VALUE = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
_INT64 = (-(2**63), 2**63 - 1)
#: PCI domain of generated addresses of devices without NUMA affinity (zones use their id).
NO_AFFINITY_PCI_DOMAIN = 0x100

_SECTION_KEYS = ("drivers", "devices", "cpu")
_DRIVER_KEYS = ("pool", "deviceClass", "publish", "attributes", "capacity")
_CPU_KEYS = ("pool", "deviceClass", "publish")
_ITEM_KEYS = ("name", "pciBusID", "pcieRoot", "attributes")


@dataclass(frozen=True)
class DraItem:
    """One device as written: ``name`` None means generate it."""

    name: str | None = None
    pci_bus_id: str | None = None
    pcie_root: str | None = None
    attributes: Mapping[str, DraAttribute] | None = None


@dataclass(frozen=True)
class DraSpec:
    """The devices of one driver in one place (a zone, or the node for no affinity)."""

    field: str
    driver: str
    items: tuple[DraItem, ...]


def driver_name_problem(name: str) -> str | None:
    if len(name) > MAX_DRIVER_NAME:
        return f"must be at most {MAX_DRIVER_NAME} characters"
    problem = dns_subdomain_problem(name)
    return None if problem is None else problem


def _driver(name: str, field: str) -> str:
    problem = driver_name_problem(name)
    if problem is not None:
        raise FieldError(field, f"{name!r} is not a DRA driver name: it {problem}")
    if name == CPU_DRIVER:
        raise FieldError(
            field, f"{CPU_DRIVER} devices stand for the node's CPUs: declare them with dra.cpu"
        )
    return name


def parse_dra_map(value: object, field: str, *, allow_list: bool = True) -> list[DraSpec]:
    """The ``dra`` mapping of a zone, ``dra.devices`` of the node, or a shape's
    ``draDevicesPerNumaNode`` (``allow_list=False``: counts only)."""
    specs = []
    for driver, entry in mapping(value, field).items():
        entry_field = child(field, driver)
        _driver(driver, entry_field)
        specs.append(DraSpec(entry_field, driver, _items(entry, entry_field, allow_list)))
    return specs


def _items(entry: object, field: str, allow_list: bool) -> tuple[DraItem, ...]:
    if isinstance(entry, list):
        if not allow_list:
            raise FieldError(field, "give a count here, not a list of devices")
        return tuple(_item(item, child(field, i)) for i, item in enumerate(entry))
    if isinstance(entry, bool) or not isinstance(entry, int):
        raise FieldError(field, f"expected a count or a list of devices, got {describe(entry)}")
    count = integer(entry, field, minimum=0)
    if count > MAX_DEVICES_PER_RESOURCE:
        raise FieldError(field, f"more than {MAX_DEVICES_PER_RESOURCE} devices of one driver")
    return tuple(DraItem() for _ in range(count))


def _item(value: object, field: str) -> DraItem:
    if isinstance(value, str):
        return DraItem(name=_device_name(value, field))
    data = mapping(value, field)
    check_keys(data, field, _ITEM_KEYS, required=("name",))
    bus = root = None
    if "pciBusID" in data:
        bus = string(data["pciBusID"], child(field, "pciBusID"))
        if not _PCI_BUS_ID.match(bus):
            raise FieldError(
                child(field, "pciBusID"),
                f"{bus!r} is not a PCI address in extended BDF form, such as 0000:3b:00.0",
            )
    if "pcieRoot" in data:
        root = string(data["pcieRoot"], child(field, "pcieRoot"))
        if not _PCIE_ROOT.match(root):
            raise FieldError(
                child(field, "pcieRoot"), f"{root!r} is not a PCIe root such as pci0000:3a"
            )
    attributes = None
    if "attributes" in data:
        attributes = parse_attributes(data["attributes"], child(field, "attributes"), domain="")
    return DraItem(
        name=_device_name(string(data["name"], child(field, "name")), child(field, "name")),
        pci_bus_id=bus,
        pcie_root=root,
        attributes=attributes,
    )


def _device_name(name: str, field: str) -> str:
    if len(name) > 63 or not _DNS_LABEL.match(name):
        raise FieldError(
            field,
            f"{name!r} is not a DRA device name: a DNS label (at most 63 lower-case letters, "
            "digits and '-', starting and ending with a letter or digit)",
        )
    return name


def qualified(name: str, field: str, *, domain: str) -> str:
    """``name`` fully qualified: ``domain/name`` when it has no domain (a device's own
    attributes: ``domain`` is filled in later, so "" keeps it as written)."""
    prefix, slash, ident = name.rpartition("/")
    if slash and (len(prefix) > MAX_DOMAIN or dns_subdomain_problem(prefix) is not None):
        raise FieldError(
            field, f"domain {prefix!r} must be a DNS subdomain of at most {MAX_DOMAIN} chars"
        )
    if len(ident) > MAX_ID or not _C_IDENTIFIER.match(ident):
        raise FieldError(
            field,
            f"{ident!r} must be a C identifier (letters, digits, '_', not starting with a "
            f"digit) of at most {MAX_ID} characters",
        )
    if slash or not domain:
        return name
    return f"{domain}/{name}"


def parse_attributes(value: object, field: str, *, domain: str) -> dict[str, DraAttribute]:
    """``attributes``: name -> a string, an integer, a boolean, or ``{version: "1.2.3"}``
    (also ``{string: ...}``, ``{int: ...}``, ``{bool: ...}``, as in a ResourceSlice)."""
    out: dict[str, DraAttribute] = {}
    for name, raw in mapping(value, field).items():
        name_field = child(field, name)
        out[qualified(name, name_field, domain=domain)] = _attribute(raw, name_field)
    return out


def _attribute(raw: object, field: str) -> DraAttribute:
    if isinstance(raw, dict):
        data = mapping(raw, field)
        check_keys(data, field, ("string", "int", "bool", "version"))
        if len(data) != 1:
            raise FieldError(field, "give exactly one of string, int, bool and version")
        ((kind, inner),) = data.items()
        inner_field = child(field, kind)
        if kind == "int":
            return _attribute(integer(inner, inner_field), inner_field)
        if kind == "bool":
            if not isinstance(inner, bool):
                raise FieldError(inner_field, f"expected true or false, got {describe(inner)}")
            return DraAttribute("bool", inner)
        text = string(inner, inner_field)
        if len(text) > MAX_VALUE:
            raise FieldError(inner_field, f"at most {MAX_VALUE} characters")
        if kind == "version" and not _SEMVER.match(text):
            raise FieldError(inner_field, f"{text!r} is not a semantic version such as 1.2.3")
        return DraAttribute(kind, text)
    if isinstance(raw, bool):
        return DraAttribute("bool", raw)
    if isinstance(raw, int):
        if not _INT64[0] <= raw <= _INT64[1]:
            raise FieldError(field, f"{raw} does not fit a 64-bit integer")
        return DraAttribute("int", raw)
    if isinstance(raw, str):
        if len(raw) > MAX_VALUE:
            raise FieldError(field, f"at most {MAX_VALUE} characters")
        return DraAttribute("string", raw)
    raise FieldError(
        field, f"expected a string, an integer, true/false or {{version: ...}}, got {describe(raw)}"
    )


def _capacity(value: object, field: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, raw in mapping(value, field).items():
        name_field = child(field, name)
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise FieldError(name_field, f"expected a quantity such as 80Gi, got {describe(raw)}")
        try:
            amount = parse_decimal(raw)
        except QuantityError:
            raise FieldError(name_field, f"{describe(raw)} is not a Kubernetes quantity") from None
        if amount < 0:
            raise FieldError(name_field, "must not be negative")
        # kept as written: the allocator matches a claim's capacity requests against
        # these names exactly (a driver's own "memory" is not "gpu.nvidia.com/memory")
        out[qualified(name, name_field, domain="")] = str(raw)
    return out


def _publish(value: object, field: str, driver: str) -> frozenset[str]:
    chosen = set()
    for i, raw in enumerate(sequence(value, field)):
        item_field = child(field, i)
        text = string(raw, item_field)
        if text not in dradrivers.PUBLISH_CHOICES:
            choices = ", ".join(dradrivers.PUBLISH_CHOICES)
            raise FieldError(item_field, f"unknown value {text!r}; one of: {choices}")
        own = text in (dradrivers.DRIVER_NUMA_NODE, dradrivers.DRIVER_PCI_BUS_ID)
        if own and dradrivers.own_attribute(driver, text) is None:
            what = "NUMA" if text == dradrivers.DRIVER_NUMA_NODE else "PCI address"
            raise FieldError(
                item_field, f"fakenrt knows no own {what} attribute of driver {driver}"
            )
        chosen.add(text)
    return frozenset(chosen)


@dataclass(frozen=True)
class _Settings:
    pool: str
    device_class: str
    publish: frozenset[str]
    attributes: Mapping[str, DraAttribute]
    capacity: Mapping[str, str]


def _settings(
    raw: Mapping[str, object], field: str, driver: str, *, node: str, keys: Sequence[str]
) -> _Settings:
    check_keys(raw, field, keys)
    preset = dradrivers.preset(driver)
    pool = node
    if "pool" in raw:
        pool = string(raw["pool"], child(field, "pool"))
        problem = dns_subdomain_problem(pool)
        if problem is not None:
            raise FieldError(child(field, "pool"), f"{pool!r} {problem}")
    device_class = dradrivers.class_name(driver)
    if "deviceClass" in raw:
        device_class = string(raw["deviceClass"], child(field, "deviceClass"))
        problem = dns_subdomain_problem(device_class)
        if problem is not None:
            raise FieldError(child(field, "deviceClass"), f"{device_class!r} {problem}")
    publish = preset.publish
    if "publish" in raw:
        publish = _publish(raw["publish"], child(field, "publish"), driver)
    attributes = dict(preset.attributes)
    if "attributes" in raw:
        attributes.update(
            parse_attributes(raw["attributes"], child(field, "attributes"), domain=driver)
        )
    capacity = dict(preset.capacity)
    if "capacity" in raw:
        capacity.update(_capacity(raw["capacity"], child(field, "capacity")))
    return _Settings(pool, device_class, publish, attributes, capacity)


def _topology_attributes(
    driver: str, publish: frozenset[str], numa: int | None, bus: str | None, root: str | None
) -> dict[str, DraAttribute]:
    out: dict[str, DraAttribute] = {}
    if numa is not None:
        if dradrivers.NUMA_NODE in publish:
            out[NUMA_NODE] = DraAttribute("int", numa)
        own = dradrivers.own_attribute(driver, dradrivers.DRIVER_NUMA_NODE)
        if own is not None and dradrivers.DRIVER_NUMA_NODE in publish:
            out[own] = DraAttribute("int", numa)
    if bus is not None:
        if dradrivers.PCI_BUS_ID in publish:
            out[PCI_BUS_ID] = DraAttribute("string", bus)
        own = dradrivers.own_attribute(driver, dradrivers.DRIVER_PCI_BUS_ID)
        if own is not None and dradrivers.DRIVER_PCI_BUS_ID in publish:
            out[own] = DraAttribute("string", bus)
    if root is not None and dradrivers.PCIE_ROOT in publish:
        out[PCIE_ROOT] = DraAttribute("string", root)
    return out


def build_dra(
    section: object,
    zone_specs: Sequence[tuple[int, Sequence[DraSpec]]],
    *,
    node: str,
    topology: Mapping[int, CpuInfo],
    zone_cpus: Mapping[int, frozenset[int]],
    reserved_cpus: frozenset[int],
) -> tuple[DraDriver, ...]:
    """Every DRA driver of the node: zone devices (zones in id order), then the node's
    devices without NUMA affinity, per driver; and the CPU driver. Raises FieldError."""
    raw = mapping(section, "dra")
    check_keys(raw, "dra", _SECTION_KEYS)
    node_specs = parse_dra_map(raw.get("devices", {}), child("dra", "devices"))
    placed: dict[str, list[tuple[int | None, DraSpec, DraItem]]] = {}
    for zone_id, specs in zone_specs:
        for spec in specs:
            placed.setdefault(spec.driver, []).extend((zone_id, spec, i) for i in spec.items)
    for spec in node_specs:
        placed.setdefault(spec.driver, []).extend((None, spec, i) for i in spec.items)
    drivers_field = child("dra", "drivers")
    configured = mapping(raw.get("drivers", {}), drivers_field)
    for driver in configured:
        _driver(driver, child(drivers_field, driver))
        if driver not in placed:
            raise FieldError(
                child(drivers_field, driver), "the driver has no devices in any zone or dra.devices"
            )
    used_buses: dict[str, str] = {}
    next_device = dict.fromkeys([*list(zone_cpus), None], 0)  # per zone: PCI slot counter
    drivers: list[DraDriver] = []
    for driver in sorted(placed):
        field = child(drivers_field, driver)
        settings = _settings(
            mapping(configured.get(driver, {}), field), field, driver, node=node, keys=_DRIVER_KEYS
        )
        entries = placed[driver]
        if len(entries) > MAX_DEVICES_PER_RESOURCE:
            raise FieldError(
                entries[0][1].field, f"more than {MAX_DEVICES_PER_RESOURCE} {driver} devices"
            )
        preset = dradrivers.preset(driver)
        seen: dict[str, str] = {}
        devices = []
        for n, (numa, spec, item) in enumerate(entries):
            name = item.name if item.name is not None else preset.device_name(n)
            if name in seen:
                raise FieldError(spec.field, f"device name {name!r} is also in {seen[name]}")
            seen[name] = spec.field
            bus = item.pci_bus_id
            if bus is None:
                slot = next_device[numa]
                next_device[numa] += 1
                domain = NO_AFFINITY_PCI_DOMAIN if numa is None else numa
                bus = f"{domain:04x}:{1 + slot // 32:02x}:{slot % 32:02x}.0"
            if bus in used_buses:
                raise FieldError(spec.field, f"PCI address {bus} is also in {used_buses[bus]}")
            used_buses[bus] = spec.field
            root = item.pcie_root or f"pci{bus[:4]}:00"
            attributes = {**preset.per_device(node, n), **(item.attributes or {})}
            attributes = {(k if "/" in k else f"{driver}/{k}"): v for k, v in attributes.items()}
            attributes.update(_topology_attributes(driver, settings.publish, numa, bus, root))
            total = len({**settings.attributes, **attributes}) + len(settings.capacity)
            if total > MAX_ATTRIBUTES_AND_CAPACITIES:
                raise FieldError(
                    spec.field,
                    f"device {name} has {total} attributes and capacities; a ResourceSlice "
                    f"allows {MAX_ATTRIBUTES_AND_CAPACITIES}",
                )
            devices.append(DraDevice(name, numa, bus, root, attributes))
        drivers.append(
            DraDriver(
                name=driver,
                pool=settings.pool,
                device_class=settings.device_class,
                class_selector=dradrivers.class_selector(driver),
                publish=settings.publish,
                attributes=settings.attributes,
                capacity=settings.capacity,
                devices=tuple(devices),
            )
        )
    if "cpu" in raw:
        drivers.append(_cpu_driver(raw["cpu"], node, topology, zone_cpus, reserved_cpus))
    return tuple(sorted(drivers, key=lambda d: d.name))


def _cpu_driver(
    value: object,
    node: str,
    topology: Mapping[int, CpuInfo],
    zone_cpus: Mapping[int, frozenset[int]],
    reserved_cpus: frozenset[int],
) -> DraDriver:
    """The CPU driver grouped by NUMA node: a device per zone with allocatable CPUs."""
    field = child("dra", "cpu")
    settings = _settings(mapping(value, field), field, CPU_DRIVER, node=node, keys=_CPU_KEYS)
    threads = {info.core: 0 for info in topology.values()}
    for info in topology.values():
        threads[info.core] += 1
    smt = any(count > 1 for count in threads.values())
    devices = []
    for zone_id, cpus in sorted(zone_cpus.items()):
        allocatable = cpus - reserved_cpus
        if not allocatable:
            continue
        socket = topology[min(allocatable)].socket
        attributes = {
            f"{CPU_DRIVER}/socketID": DraAttribute("int", socket),
            f"{CPU_DRIVER}/smtEnabled": DraAttribute("bool", smt),
            f"{CPU_DRIVER}/numCPUs": DraAttribute("int", len(allocatable)),
            **_topology_attributes(CPU_DRIVER, settings.publish, zone_id, None, None),
        }
        if dradrivers.DRIVER_NUMA_NODE in settings.publish:
            attributes["dra.net/numaNode"] = DraAttribute("int", zone_id)
        devices.append(
            DraDevice(
                dradrivers.preset(CPU_DRIVER).device_name(zone_id),
                zone_id,
                attributes=attributes,
                cpus=frozenset(allocatable),
                capacity={f"{CPU_DRIVER}/cpu": str(len(allocatable))},
            )
        )
    return DraDriver(
        name=CPU_DRIVER,
        pool=settings.pool,
        device_class=settings.device_class,
        class_selector=dradrivers.class_selector(CPU_DRIVER),
        publish=settings.publish,
        devices=tuple(devices),
        cpu=True,
    )
