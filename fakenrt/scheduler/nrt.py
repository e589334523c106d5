"""Read a NodeResourceTopology v1alpha2 object (a dict) into a :class:`NumaTopology`. Pure.

Policy and scope come from the ``topologyManagerPolicy`` / ``topologyManagerScope``
attributes (the CPU / Memory Manager policies from ``cpuManagerPolicy`` /
``memoryManagerPolicy`` when present, and the pod fingerprint with its method); the
deprecated ``topologyPolicies`` list fills in what the attributes leave out. A legacy
value that names no scope (``Restricted``, ``BestEffort``...) means container scope, the
kubelet's default. Only zones of type ``Node`` are NUMA zones; they must be
named ``node-<id>`` and are ordered by that id.

An object no exporter can publish is refused, naming the field: a resource listed twice
in a zone, more allocatable than capacity or more available than allocatable (a kubelet
hands out at most what it has), costs naming a zone the object does not have, a negative
cost, a node name the API server would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.annotations import AnnotationFormatError, parse_zone_name
from exporter.quantities import QuantityError, parse_integer
from exporter.validation import dns_subdomain_problem, quoted
from fakenrt.kubelet.bitmask import MAX_BITS
from fakenrt.nrt.fingerprint import ATTRIBUTE as FINGERPRINT_ATTRIBUTE
from fakenrt.nrt.fingerprint import ATTRIBUTE_METHOD as FINGERPRINT_METHOD_ATTRIBUTE
from fakenrt.nrt.render import (
    CPU_MANAGER_POLICY_ATTRIBUTE,
    KIND,
    MEMORY_MANAGER_POLICY_ATTRIBUTE,
    ZONE_TYPE,
)
from fakenrt.profiles.limits import MAX_ALIGNED_NUMA_NODES
from fakenrt.scheduler.topology import (
    CPU_MANAGER_POLICIES,
    MEMORY_MANAGER_POLICIES,
    POLICIES,
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
    SCOPES,
    NumaTopology,
    ZoneResources,
)

POLICY_ATTRIBUTE = "topologyManagerPolicy"
SCOPE_ATTRIBUTE = "topologyManagerScope"

#: Legacy ``topologyPolicies`` values -> (policy, scope).
LEGACY_POLICIES: Mapping[str, tuple[str, str]] = {
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "Restricted": (POLICY_RESTRICTED, SCOPE_CONTAINER),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "BestEffort": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
    "None": (POLICY_NONE, SCOPE_CONTAINER),
}


class NRTError(ValueError):
    """An NRT object the plugin cannot read; the message names the source, node and field."""


def _name(raw: Any, where: str) -> str:
    """The ``name`` of a list item, which must be a mapping with a string ``name``."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise NRTError(f"{where} must be a mapping with a string 'name'")
    return str(raw["name"])


def _list(raw: Any, where: str) -> list[Any]:
    if not raw:
        return []
    if not isinstance(raw, list):
        raise NRTError(f"{where} must be a list")
    return raw


def _numa_id(name: str, where: str) -> int:
    """The NUMA id of a zone name ``node-<id>``; ``where`` names the field."""
    try:
        numa_id = parse_zone_name(name)
    except AnnotationFormatError as exc:
        raise NRTError(f"{where}: {exc}") from exc
    if numa_id >= MAX_BITS:
        raise NRTError(
            f"{where}: NUMA id {numa_id} is above {MAX_BITS - 1}, the kubelet's limit "
            "(its NUMA masks are 64 bits)"
        )
    return numa_id


def _attributes(raw: Any, where: str) -> dict[str, str]:
    if raw is not None and not isinstance(raw, list):
        raise NRTError(f"{where} must be a list of {{name, value}}")
    return {
        _name(item, f"{where}[{i}]"): str(item.get("value", "")) for i, item in enumerate(raw or [])
    }


def _quantity(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise NRTError(f"{where}: {quoted(raw)} is not a quantity")
    try:
        value = parse_integer(raw)
    except QuantityError as exc:
        raise NRTError(f"{where}: {exc}") from exc
    if value < 0:
        raise NRTError(f"{where}: {quoted(raw)} is negative")
    return value


_COLUMNS = ("capacity", "allocatable", "available")


def _resources(raw: Any, where: str) -> tuple[dict[str, int], ...]:
    """A zone's ``resources`` as one ``name -> amount`` table per column of _COLUMNS."""
    tables: tuple[dict[str, int], ...] = tuple({} for _ in _COLUMNS)
    for i, res in enumerate(_list(raw, where)):
        name = _name(res, f"{where}[{i}]")
        rwhere = f"{where}[{i}]({quoted(name)})"
        if name in tables[0]:
            raise NRTError(f"{rwhere}: the resource is listed twice in the zone")
        for key, into in zip(_COLUMNS, tables, strict=True):
            if key not in res:
                raise NRTError(f"{rwhere}.{key} is required")
            into[name] = _quantity(res[key], f"{rwhere}.{key}")
        capacity, allocatable, available = (table[name] for table in tables)
        if allocatable > capacity:
            raise NRTError(f"{rwhere}: allocatable {allocatable} is more than capacity {capacity}")
        if available > allocatable:
            raise NRTError(
                f"{rwhere}: available {available} is more than allocatable {allocatable}"
            )
    return tables


def _costs(raw: Any, where: str) -> dict[int, int]:
    costs: dict[int, int] = {}
    for i, cost in enumerate(_list(raw, where)):
        cwhere = f"{where}[{i}]"
        other = _numa_id(_name(cost, cwhere), f"{cwhere}.name")
        value = cost.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
            raise NRTError(f"{cwhere}.value must be a non-negative integer")
        if other in costs:
            raise NRTError(f"{cwhere}: zone node-{other} has a cost already")
        costs[other] = value
    return costs


def _zone(raw: Any, where: str) -> ZoneResources | None:
    name = _name(raw, where)
    if raw.get("type") != ZONE_TYPE:
        return None
    where = f"{where}({name})"
    numa_id = _numa_id(name, f"{where}.name")
    capacity, allocatable, available = _resources(raw.get("resources"), f"{where}.resources")
    return ZoneResources(
        id=numa_id,
        capacity=capacity,
        allocatable=allocatable,
        available=available,
        costs=_costs(raw.get("costs"), f"{where}.costs"),
    )


def read_nrt(obj: Mapping[str, Any], *, source: str = "nrt") -> NumaTopology:
    """Parse one NRT object. Raises :class:`NRTError` naming ``source``, the node and field."""
    if not isinstance(obj, Mapping):
        raise NRTError(f"{source}: an NRT object must be a mapping")
    kind = obj.get("kind", KIND)
    if kind != KIND:
        raise NRTError(f"{source}: expected kind {KIND}, found {kind!r}")
    meta = obj.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise NRTError(f"{source}: metadata.name is required")
    problem = dns_subdomain_problem(name)
    if problem:
        raise NRTError(f"{source}: metadata.name: {problem}")
    where = f"{source}: NRT {name}"
    attrs = _attributes(obj.get("attributes"), f"{where}: attributes")
    legacy = obj.get("topologyPolicies") or []
    if not isinstance(legacy, list) or not all(isinstance(v, str) for v in legacy):
        raise NRTError(f"{where}: topologyPolicies must be a list of strings")
    policy: str | None = attrs.get(POLICY_ATTRIBUTE)
    scope: str | None = attrs.get(SCOPE_ATTRIBUTE)
    if legacy:
        if legacy[0] not in LEGACY_POLICIES:
            raise NRTError(
                f"{where}: topologyPolicies[0] {legacy[0]!r} is not one of "
                f"{', '.join(LEGACY_POLICIES)}"
            )
        legacy_policy, legacy_scope = LEGACY_POLICIES[legacy[0]]
        policy = policy if policy is not None else legacy_policy
        scope = scope if scope is not None else legacy_scope
    policy = policy if policy is not None else POLICY_NONE
    scope = scope if scope is not None else SCOPE_CONTAINER
    if policy not in POLICIES:
        raise NRTError(
            f"{where}: attribute {POLICY_ATTRIBUTE} {policy!r} is not one of {', '.join(POLICIES)}"
        )
    if scope not in SCOPES:
        raise NRTError(
            f"{where}: attribute {SCOPE_ATTRIBUTE} {scope!r} is not one of {', '.join(SCOPES)}"
        )
    managers: dict[str, str | None] = {}
    for attribute, known in (
        (CPU_MANAGER_POLICY_ATTRIBUTE, CPU_MANAGER_POLICIES),
        (MEMORY_MANAGER_POLICY_ATTRIBUTE, MEMORY_MANAGER_POLICIES),
    ):
        value = attrs.get(attribute)
        if value is not None and value not in known:
            raise NRTError(
                f"{where}: attribute {attribute} {value!r} is not one of {', '.join(known)}"
            )
        managers[attribute] = value
    raw_zones = obj.get("zones")
    if not isinstance(raw_zones, list):
        raise NRTError(f"{where}: zones must be a list")
    zones: dict[int, ZoneResources] = {}
    for i, raw_zone in enumerate(raw_zones):
        zone = _zone(raw_zone, f"{where}: zones[{i}]")
        if zone is None:
            continue
        if zone.id in zones:
            raise NRTError(f"{where}: zones[{i}]: zone node-{zone.id} appears twice")
        zones[zone.id] = zone
    for zone in zones.values():
        for other in zone.costs:
            if other not in zones:
                raise NRTError(
                    f"{where}: zone node-{zone.id}: costs name node-{other}, which is not a "
                    "zone of this NRT"
                )
    if len(zones) > MAX_ALIGNED_NUMA_NODES:
        raise NRTError(
            f"{where}: {len(zones)} NUMA zones; the plugin reads at most "
            f"{MAX_ALIGNED_NUMA_NODES} (its NUMA search, like the kubelet's, visits every "
            f"subset of zones: 2^{len(zones)})"
        )
    return NumaTopology(
        node=name,
        policy=policy,
        scope=scope,
        zones=tuple(zones[i] for i in sorted(zones)),
        cpu_manager_policy=managers[CPU_MANAGER_POLICY_ATTRIBUTE],
        memory_manager_policy=managers[MEMORY_MANAGER_POLICY_ATTRIBUTE],
        fingerprint=attrs.get(FINGERPRINT_ATTRIBUTE) or None,
        fingerprint_method=attrs.get(FINGERPRINT_METHOD_ATTRIBUTE) or None,
    )
