"""A pod's allocation as one compact JSON string, and back. Pure.

The fake kubelet's stand-in for its checkpoints: the controller stores the string on the
pod (annotation ``fakenrt.io/allocation``) when it admits it and, after a restart, gives
the decoded value to :meth:`fakenrt.kubelet.node.NodeState.restore`. The pod's namespace
and name are not stored (the pod carries them); its uid is, so an allocation copied onto
another pod is refused. Example (one line)::

    {"v":1,"uid":"6f1c...","containers":[{"name":"c1","cpus":"2-5",
     "devices":{"nvidia.com/gpu":["GPU-0"]},
     "memory":[{"type":"memory","size":1073741824,"numa":"0"}]}]}

* ``v``: the format version, 1.
* per container, in the pod's order (init containers first): ``name``; ``kind``
  (``init`` or ``sidecar``; absent for a regular container); ``cpus`` as a Linux cpulist;
  ``devices``: resource -> device ids in allocation order; ``memory``: blocks in
  allocation order, ``numa`` as a cpulist-style list of NUMA node ids. Empty fields are
  left out.

The parser is strict: unknown or missing fields, wrong types, duplicate ids, negative
sizes all raise :class:`AllocationCodecError` naming the field
(``containers[1].memory[0].size``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from exporter.cpulist import CpuListError, format_cpulist, parse_cpulist
from fakenrt.kubelet.allocation import (
    INIT,
    REGULAR,
    SIDECAR,
    ContainerAllocation,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.kubelet.strict_json import loads_strict

VERSION = 1
_KINDS = (INIT, SIDECAR, REGULAR)


class AllocationCodecError(ValueError):
    """A string that is not an encoded allocation; the message names the field."""


def encode_allocation(allocation: PodAllocation) -> str:
    """The allocation as compact JSON (namespace and name left out)."""
    return json.dumps(
        {
            "v": VERSION,
            "uid": allocation.uid,
            "containers": [_encode_container(c) for c in allocation.containers],
        },
        separators=(",", ":"),
    )


def _encode_container(c: ContainerAllocation) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name}
    if c.kind != REGULAR:
        out["kind"] = c.kind
    if c.cpus:
        out["cpus"] = format_cpulist(c.cpus)
    devices = {name: list(ids) for name, ids in c.devices.items() if ids}
    if devices:
        out["devices"] = devices
    if c.memory:
        out["memory"] = [
            {"type": b.type, "size": b.size, "numa": format_cpulist(b.numa)} for b in c.memory
        ]
    return out


def decode_allocation(text: str, *, namespace: str, name: str) -> PodAllocation:
    """Parse :func:`encode_allocation`'s output for the pod ``namespace/name``."""
    raw = loads_strict(text, AllocationCodecError)
    obj = _object(raw, "the allocation", required=("v", "uid", "containers"))
    if type(obj["v"]) is not int or obj["v"] != VERSION:
        raise AllocationCodecError(f"v: unsupported version {obj['v']!r} (expected {VERSION})")
    uid = _string(obj["uid"], "uid", allow_empty=True)
    items = _list(obj["containers"], "containers")
    containers = tuple(_decode_container(c, f"containers[{i}]") for i, c in enumerate(items))
    seen: set[str] = set()
    for i, c in enumerate(containers):
        if c.name in seen:
            raise AllocationCodecError(f"containers[{i}].name: duplicate container {c.name!r}")
        seen.add(c.name)
    return PodAllocation(namespace, name, uid, containers)


def _decode_container(raw: Any, where: str) -> ContainerAllocation:
    obj = _object(raw, where, required=("name",), optional=("kind", "cpus", "devices", "memory"))
    name = _string(obj["name"], f"{where}.name")
    kind = _string(obj.get("kind", REGULAR), f"{where}.kind")
    if kind not in _KINDS or ("kind" in obj and kind == REGULAR):
        raise AllocationCodecError(f"{where}.kind: {kind!r} is not one of init, sidecar")
    cpus = _cpulist(obj.get("cpus", ""), f"{where}.cpus", allow_empty="cpus" not in obj)
    devices: dict[str, tuple[str, ...]] = {}
    raw_devices = obj.get("devices", {})
    if not isinstance(raw_devices, Mapping) or ("devices" in obj and not raw_devices):
        raise AllocationCodecError(f"{where}.devices: expected a non-empty object")
    for resource, ids in raw_devices.items():
        at = f"{where}.devices[{resource!r}]"
        _string(resource, at)
        listed = tuple(_string(i, f"{at}[{j}]") for j, i in enumerate(_list(ids, at)))
        if not listed:
            raise AllocationCodecError(f"{at}: expected at least one device id")
        if len(set(listed)) != len(listed):
            raise AllocationCodecError(f"{at}: a device id is listed twice")
        devices[resource] = listed
    blocks = _list(obj.get("memory", []), f"{where}.memory")
    if "memory" in obj and not blocks:
        raise AllocationCodecError(f"{where}.memory: expected a non-empty list")
    memory = tuple(_decode_block(b, f"{where}.memory[{j}]") for j, b in enumerate(blocks))
    return ContainerAllocation(name, cpus, devices, memory, kind)


def _decode_block(raw: Any, where: str) -> MemoryBlock:
    obj = _object(raw, where, required=("type", "size", "numa"))
    kind = _string(obj["type"], f"{where}.type")
    if kind != "memory" and not kind.startswith("hugepages-"):
        raise AllocationCodecError(f"{where}.type: {kind!r} is not memory or hugepages-<size>")
    size = obj["size"]
    if type(size) is not int or size < 0:
        raise AllocationCodecError(f"{where}.size: expected a whole number of bytes >= 0")
    numa = _cpulist(obj["numa"], f"{where}.numa", allow_empty=False)
    return MemoryBlock(kind, size, numa)


def _object(
    raw: Any, where: str, *, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise AllocationCodecError(f"{where}: expected an object")
    for key in required:
        if key not in raw:
            raise AllocationCodecError(f"{where}: missing field {key!r}")
    unknown = sorted(set(raw) - set(required) - set(optional))
    if unknown:
        raise AllocationCodecError(f"{where}: unknown field {unknown[0]!r}")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise AllocationCodecError(f"{where}: expected a list")
    return raw


def _string(raw: Any, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(raw, str) or (not raw and not allow_empty):
        raise AllocationCodecError(f"{where}: expected a non-empty string")
    return raw


def _cpulist(raw: Any, where: str, *, allow_empty: bool) -> frozenset[int]:
    text = _string(raw, where, allow_empty=allow_empty)
    try:
        return parse_cpulist(text)
    except CpuListError as exc:
        raise AllocationCodecError(f"{where}: {exc}") from None
