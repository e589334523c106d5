"""The one owner of the ``kai.scheduler/numa-*`` pod annotation formats.

Pure: values in, strings out, and back. The exporter writes the observed annotations,
the reference scheduler writes the predicted one at bind and reads all three for
reconstruction, and the fake kubelet's tests compare against them. Format
(``shared/notes/interfaces.md``):

* placement (observed and predicted): a JSON array sorted by NUMA id, one entry per
  zone the pod holds aligned resources in, amounts as quantity strings; per-zone memory
  counts only single-NUMA blocks (a block over several NUMA nodes is in the groups)::

      [{"zone":"node-0","amount":{"cpu":"8","memory":"17179869184","nvidia.com/gpu":"2"}}]

  Amount keys are resource names (``cpu``, memory types, device-plugin resources) and,
  for DRA devices, the driver's name (``"gpu.nvidia.com":"1"``: a DNS subdomain without
  ``/``, so never a device-plugin resource; docs/exporter.md, "DRA devices").

* memory groups (observed and predicted): one entry per distinct NUMA-node set of the
  pod's memory blocks (single-node sets included), amounts summed per memory type; ``[]``
  = complete with no groups, ``null`` = incomplete or invalid observation, annotation
  absent = not observed (or not predicted) yet::

      [{"memoryNodes":["node-0","node-1"],"amount":{"memory":"17179869184"}}]

  ``kai.scheduler/numa-memory-groups-predicted`` is this project's addition next to the
  KAI-compatible three: the scheduler's prediction of the observed groups, so that a
  predicted placement accounts multi-NUMA memory as the observed pair does.

Writers emit compact JSON with sorted amount keys, so equal values give equal strings
and "patch only on change" can compare strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.quantities import QuantityError, format_integer, parse_integer

OBSERVED_PLACEMENT = "kai.scheduler/numa-placement-observed"
OBSERVED_MEMORY_GROUPS = "kai.scheduler/numa-memory-groups-observed"
PREDICTED_PLACEMENT = "kai.scheduler/numa-placement-predicted"
PREDICTED_MEMORY_GROUPS = "kai.scheduler/numa-memory-groups-predicted"

_ZONE_NAME = re.compile(r"^node-(0|[1-9][0-9]*)$")


class AnnotationFormatError(ValueError):
    """An annotation value that does not follow the format; the message says where."""


def zone_name(numa_id: int) -> str:
    """The NRT / annotation name of a NUMA zone: ``node-<id>``."""
    return f"node-{numa_id}"


def parse_zone_name(name: str) -> int:
    """The NUMA id in a zone name ``node-<id>``; raises AnnotationFormatError otherwise."""
    match = _ZONE_NAME.match(name)
    if match is None:
        raise AnnotationFormatError(f"zone name {name!r} is not of the form node-<id>")
    return int(match.group(1))


@dataclass(frozen=True)
class ZonePlacement:
    """What a pod holds in one NUMA zone: resource name -> whole amount (count or bytes)."""

    numa_id: int
    amounts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryGroup:
    """A Memory Manager group: the NUMA-node set of some of a pod's memory blocks, and the
    amounts per memory type (``memory``, ``hugepages-1Gi``...) summed over its containers."""

    numa_ids: frozenset[int]
    amounts: Mapping[str, int] = field(default_factory=dict)


def _amount_object(amounts: Mapping[str, int]) -> dict[str, str]:
    return {name: format_integer(v) for name, v in sorted(amounts.items()) if v != 0}


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=False)


def format_placement(zones: Iterable[ZonePlacement]) -> str:
    """The placement annotation value: zones sorted by NUMA id, zero amounts and zones
    with nothing left out. Zones with the same id are merged (amounts added)."""
    merged: dict[int, dict[str, int]] = {}
    for zone in zones:
        bucket = merged.setdefault(zone.numa_id, {})
        for name, value in zone.amounts.items():
            bucket[name] = bucket.get(name, 0) + value
    entries = []
    for numa_id in sorted(merged):
        amount = _amount_object(merged[numa_id])
        if amount:
            entries.append({"zone": zone_name(numa_id), "amount": amount})
    return _dumps(entries)


def format_memory_groups(groups: Iterable[MemoryGroup] | None) -> str:
    """The memory-groups annotation value; ``None`` (incomplete observation) is ``null``.

    Groups with the same NUMA-node set are merged; groups are sorted by their sorted ids.
    """
    if groups is None:
        return "null"
    merged: dict[tuple[int, ...], dict[str, int]] = {}
    for group in groups:
        if not group.numa_ids:
            raise ValueError("a memory group needs at least one NUMA node")
        bucket = merged.setdefault(tuple(sorted(group.numa_ids)), {})
        for name, value in group.amounts.items():
            bucket[name] = bucket.get(name, 0) + value
    entries = []
    for ids in sorted(merged):
        amount = _amount_object(merged[ids])
        if amount:
            entries.append({"memoryNodes": [zone_name(i) for i in ids], "amount": amount})
    return _dumps(entries)


def _load(value: str, what: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise AnnotationFormatError(f"{what}: not JSON ({exc.msg} at char {exc.pos})") from exc


def _parse_amount(obj: Any, where: str) -> dict[str, int]:
    if not isinstance(obj, dict):
        raise AnnotationFormatError(f"{where}.amount must be an object of quantities")
    amounts: dict[str, int] = {}
    for name, raw in obj.items():
        if not isinstance(raw, str | int) or isinstance(raw, bool):
            raise AnnotationFormatError(f"{where}.amount[{name!r}] must be a quantity string")
        try:
            amounts[name] = parse_integer(raw)
        except QuantityError as exc:
            raise AnnotationFormatError(f"{where}.amount[{name!r}]: {exc}") from exc
        if amounts[name] < 0:
            raise AnnotationFormatError(f"{where}.amount[{name!r}] is negative")
    return amounts


def parse_placement(value: str) -> tuple[ZonePlacement, ...]:
    """Parse a placement annotation (observed or predicted) into zones sorted by id."""
    data = _load(value, "placement")
    if not isinstance(data, list):
        raise AnnotationFormatError("placement must be a JSON array")
    zones: dict[int, ZonePlacement] = {}
    for i, entry in enumerate(data):
        where = f"placement[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("zone"), str):
            raise AnnotationFormatError(f"{where} must be an object with a string 'zone'")
        numa_id = parse_zone_name(entry["zone"])
        if numa_id in zones:
            raise AnnotationFormatError(f"{where}: zone {entry['zone']!r} appears twice")
        zones[numa_id] = ZonePlacement(numa_id, _parse_amount(entry.get("amount"), where))
    return tuple(zones[i] for i in sorted(zones))


def parse_memory_groups(value: str) -> tuple[MemoryGroup, ...] | None:
    """Parse a memory-groups annotation; ``None`` means ``null`` (incomplete observation)."""
    data = _load(value, "memory groups")
    if data is None:
        return None
    if not isinstance(data, list):
        raise AnnotationFormatError("memory groups must be a JSON array or null")
    groups: list[MemoryGroup] = []
    for i, entry in enumerate(data):
        where = f"memoryGroups[{i}]"
        nodes = entry.get("memoryNodes") if isinstance(entry, dict) else None
        if not isinstance(nodes, list) or not nodes:
            raise AnnotationFormatError(f"{where} must have a non-empty 'memoryNodes' list")
        ids = []
        for node in nodes:
            if not isinstance(node, str):
                raise AnnotationFormatError(f"{where}.memoryNodes must hold zone names")
            ids.append(parse_zone_name(node))
        groups.append(MemoryGroup(frozenset(ids), _parse_amount(entry.get("amount"), where)))
    return tuple(groups)
