"""Read a NodeResourceTopology v1alpha2 object (a dict) into a :class:`NumaTopology`. Pure.

Policy and scope come from the ``topologyManagerPolicy`` / ``topologyManagerScope``
attributes; the deprecated ``topologyPolicies`` list fills in what the attributes leave
out. A legacy value that names no scope (``Restricted``, ``BestEffort``...) means container
scope, the kubelet's default. Only zones of type ``Node`` are NUMA zones; they must be
named ``node-<id>`` and are ordered by that id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.annotations import AnnotationFormatError, parse_zone_name
from exporter.quantities import QuantityError, parse_integer
from fakenrt.kubelet.bitmask import MAX_BITS
from fakenrt.nrt.render import KIND, ZONE_TYPE
from fakenrt.scheduler.topology import (
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


def _attributes(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise NRTError(f"{where} must be a list of {{name, value}}")
    out: dict[str, str] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise NRTError(f"{where}[{i}] must be a mapping with a string 'name'")
        out[item["name"]] = str(item.get("value", ""))
    return out


def _quantity(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise NRTError(f"{where}: {raw!r} is not a quantity")
    try:
        value = parse_integer(raw)
    except QuantityError as exc:
        raise NRTError(f"{where}: {exc}") from exc
    if value < 0:
        raise NRTError(f"{where}: {raw!r} is negative")
    return value


def _zone(raw: Any, where: str) -> ZoneResources | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise NRTError(f"{where} must be a mapping with a string 'name'")
    if raw.get("type") != ZONE_TYPE:
        return None
    where = f"{where}({raw['name']})"
    try:
        numa_id = parse_zone_name(raw["name"])
    except AnnotationFormatError as exc:
        raise NRTError(f"{where}.name: {exc}") from exc
    if numa_id >= MAX_BITS:
        raise NRTError(
            f"{where}.name: NUMA id {numa_id} is above {MAX_BITS - 1}, the kubelet's limit "
            "(its NUMA masks are 64 bits)"
        )
    capacity: dict[str, int] = {}
    allocatable: dict[str, int] = {}
    available: dict[str, int] = {}
    resources = raw.get("resources") or []
    if not isinstance(resources, list):
        raise NRTError(f"{where}.resources must be a list")
    for i, res in enumerate(resources):
        rwhere = f"{where}.resources[{i}]"
        if not isinstance(res, Mapping) or not isinstance(res.get("name"), str):
            raise NRTError(f"{rwhere} must be a mapping with a string 'name'")
        name = res["name"]
        rwhere = f"{where}.resources[{i}]({name})"
        for key, into in (
            ("capacity", capacity),
            ("allocatable", allocatable),
            ("available", available),
        ):
            if key not in res:
                raise NRTError(f"{rwhere}.{key} is required")
            into[name] = _quantity(res[key], f"{rwhere}.{key}")
    costs: dict[int, int] = {}
    raw_costs = raw.get("costs") or []
    if not isinstance(raw_costs, list):
        raise NRTError(f"{where}.costs must be a list")
    for i, cost in enumerate(raw_costs):
        cwhere = f"{where}.costs[{i}]"
        if not isinstance(cost, Mapping) or not isinstance(cost.get("name"), str):
            raise NRTError(f"{cwhere} must be a mapping with a string 'name'")
        try:
            other = parse_zone_name(cost["name"])
        except AnnotationFormatError as exc:
            raise NRTError(f"{cwhere}.name: {exc}") from exc
        value = cost.get("value")
        if isinstance(value, bool) or not isinstance(value, int):
            raise NRTError(f"{cwhere}.value must be an integer")
        costs[other] = value
    return ZoneResources(
        id=numa_id, capacity=capacity, allocatable=allocatable, available=available, costs=costs
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
    return NumaTopology(
        node=name, policy=policy, scope=scope, zones=tuple(zones[i] for i in sorted(zones))
    )
