"""Device entries of a profile: the three accepted forms, and deterministic ids. Pure.

A zone (or the node, for devices without NUMA affinity) lists devices per resource as

* a count: ``nvidia.com/gpu: 4`` - ids are generated;
* a list of ids: ``rdma/hca: ["mlx5_0", "mlx5_1"]``;
* a mapping: ``{count: 2, unhealthy: 1}`` or ``{ids: [a, b], unhealthy: [b]}`` (``unhealthy``
  is a count - the last M ids - or, with ``ids``, the unhealthy ids themselves).

Generated ids are numbered node-wide per resource, zones in ascending id order and the
node's no-affinity devices last, with the upper-cased name part of the resource as prefix:
``nvidia.com/gpu: 4`` on zones 0 and 1 gives ``GPU-0..GPU-3`` and ``GPU-4..GPU-7``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
from fakenrt.profiles.model import DeviceSet
from fakenrt.profiles.names import device_id_prefix, extended_resource_problem


@dataclass(frozen=True)
class DeviceSpec:
    """Devices of one resource as written: ``ids`` None means generate ``count`` ids."""

    field: str
    resource: str
    count: int
    ids: tuple[str, ...] | None = None
    unhealthy_count: int = 0
    unhealthy_ids: frozenset[str] | None = None


def parse_device_map(value: object, field: str, *, allow_ids: bool = True) -> list[DeviceSpec]:
    """The ``devices`` mapping of a zone or node (``allow_ids=False`` for shapes, where
    one list of ids cannot be repeated on every NUMA node)."""
    specs = []
    for resource, entry in mapping(value, field).items():
        entry_field = child(field, resource)
        problem = extended_resource_problem(resource)
        if problem is not None:
            raise FieldError(entry_field, f"{resource!r} is not a device resource: {problem}")
        specs.append(_parse_entry(entry, entry_field, resource, allow_ids=allow_ids))
    return specs


def _parse_entry(entry: object, field: str, resource: str, *, allow_ids: bool) -> DeviceSpec:
    if isinstance(entry, list):
        if not allow_ids:
            raise FieldError(field, "give a count or {count, unhealthy} here, not a list of ids")
        listed = _id_list(entry, field)
        return DeviceSpec(field=field, resource=resource, count=len(listed), ids=listed)
    if isinstance(entry, dict):
        data = mapping(entry, field)
        allowed = ("count", "ids", "unhealthy") if allow_ids else ("count", "unhealthy")
        check_keys(data, field, allowed)
        if ("count" in data) == ("ids" in data):
            raise FieldError(field, "give exactly one of count and ids")
        given: tuple[str, ...] | None = None
        if "ids" in data:
            given = _id_list(data["ids"], child(field, "ids"))
            count = len(given)
        else:
            count = integer(data["count"], child(field, "count"), minimum=0)
        unhealthy = data.get("unhealthy", 0)
        unhealthy_field = child(field, "unhealthy")
        if isinstance(unhealthy, list):
            if given is None:
                raise FieldError(
                    unhealthy_field, "a list of ids needs ids; with count give a count"
                )
            bad = _id_list(unhealthy, unhealthy_field)
            unknown = [i for i in bad if i not in given]
            if unknown:
                raise FieldError(unhealthy_field, f"{unknown[0]!r} is not one of the ids")
            return DeviceSpec(
                field=field, resource=resource, count=count, ids=given, unhealthy_ids=frozenset(bad)
            )
        n_bad = integer(unhealthy, unhealthy_field, minimum=0)
        if n_bad > count:
            raise FieldError(unhealthy_field, f"{n_bad} unhealthy of only {count} devices")
        return DeviceSpec(
            field=field, resource=resource, count=count, ids=given, unhealthy_count=n_bad
        )
    if isinstance(entry, bool) or not isinstance(entry, int):
        raise FieldError(
            field, f"expected a count, a list of ids or {{count, unhealthy}}, got {describe(entry)}"
        )
    return DeviceSpec(field=field, resource=resource, count=integer(entry, field, minimum=0))


def _id_list(value: object, field: str) -> tuple[str, ...]:
    ids = tuple(string(item, child(field, i)) for i, item in enumerate(sequence(value, field)))
    for i, device_id in enumerate(ids):
        if not device_id:
            raise FieldError(child(field, i), "a device id must not be empty")
        if device_id in ids[:i]:
            raise FieldError(child(field, i), f"duplicate device id {device_id!r}")
    return ids


def assign_ids(specs: Sequence[DeviceSpec]) -> list[DeviceSet]:
    """One DeviceSet per spec, generating ids in the given order (zones by id, then the
    node). Raises FieldError when an id repeats within a resource across the node."""
    totals: dict[str, int] = {}
    for spec in specs:
        totals[spec.resource] = totals.get(spec.resource, 0) + spec.count
        if totals[spec.resource] > MAX_DEVICES_PER_RESOURCE:
            raise FieldError(
                spec.field,
                f"more than {MAX_DEVICES_PER_RESOURCE} {spec.resource} devices on the node "
                f"(the most fakenrt simulates)",
            )
    next_number: dict[str, int] = {}
    owner: dict[tuple[str, str], str] = {}
    out = []
    for spec in specs:
        if spec.ids is None:
            start = next_number.get(spec.resource, 0)
            prefix = device_id_prefix(spec.resource)
            ids = tuple(f"{prefix}-{n}" for n in range(start, start + spec.count))
            next_number[spec.resource] = start + spec.count
        else:
            ids = spec.ids
        for device_id in ids:
            where = owner.setdefault((spec.resource, device_id), spec.field)
            if where != spec.field:
                raise FieldError(spec.field, f"device id {device_id!r} is also in {where}")
        if spec.unhealthy_ids is not None:
            unhealthy = spec.unhealthy_ids
        else:
            unhealthy = (
                frozenset(ids[len(ids) - spec.unhealthy_count :])
                if spec.unhealthy_count
                else frozenset()
            )
        out.append(DeviceSet(ids=ids, unhealthy=unhealthy))
    return out
