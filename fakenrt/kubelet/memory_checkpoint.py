"""The static Memory Manager's checkpoint as one compact JSON string, and the check a
restarting kubelet makes on it. Pure.

A real kubelet keeps ``memory_manager_state``: the machine state (per NUMA node the number
of blocks, the node's group and, per memory type, the allocatable, free and reserved
bytes) and every container's blocks. Restarted, its static policy recomputes the machine
state from the checkpointed blocks and refuses to start when the result differs from
the checkpointed machine state (``validateState`` / ``areMachineStatesEqual`` in
``pkg/kubelet/cm/memorymanager/policy_static.go``). :class:`MemoryCheckpoint` is that
file's content, the controller's stand-in for it; both parts are recorded together, so a
checkpoint is consistent in itself whatever the moment it was written. Example (one line)::

    {"v":1,"numa":{"0":{"assignments":1,"cells":"0-1",
     "tables":{"memory":[4294967296,0,4294967296]}},...},
     "blocks":[{"type":"memory","size":6442450944,"numa":"0-1"}]}

* ``numa``: NUMA node id -> ``assignments`` (blocks counted on the node), ``cells`` (the
  node's group, a cpulist) and ``tables``: memory type -> ``[allocatable, free,
  reserved]`` bytes;
* ``blocks``: every block the node's pods hold, in admission order (the kubelet iterates
  a map), ``numa`` as a cpulist.

The parser is strict; its errors (:class:`MemoryCheckpointError`) name the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exporter.cpulist import CpuListError, format_cpulist, parse_cpulist
from fakenrt.kubelet.provider_memory import (
    Block,
    MachineState,
    MemoryTable,
    NumaMemory,
    clone_state,
    expected_machine_state,
    is_memory_type,
    machine_state_difference,
)
from fakenrt.kubelet.strict_json import loads_strict

VERSION = 1
#: NUMA ids are one or two digits (a kubelet bitmask holds 64), which also bounds what a
#: hostile list such as ``0-999999999`` could make the parser build.
_NUMA_LIST = re.compile(r"[0-9]{1,2}(-[0-9]{1,2})?(,[0-9]{1,2}(-[0-9]{1,2})?)*")
_NUMA_ID = re.compile(r"[0-9]{1,2}")


class MemoryCheckpointError(ValueError):
    """A string that is not an encoded checkpoint; the message names the field."""


@dataclass(frozen=True)
class MemoryCheckpoint:
    """What ``memory_manager_state`` holds: the machine state and the blocks."""

    machine_state: MachineState
    blocks: tuple[Block, ...]


def checkpoint_problem(initial: MachineState, checkpoint: MemoryCheckpoint) -> str | None:
    """Why a static Memory Manager whose empty machine state is ``initial`` refuses
    ``checkpoint`` at start (``validateState``), or None: a block on a NUMA node or of a
    memory type the node lacks, or a checkpointed machine state that differs from the one
    recomputed from the blocks."""
    for i, b in enumerate(checkpoint.blocks):
        for node in b.numa:
            if node not in initial:
                return f"block {i} ({b.type}) uses NUMA node {node}, which the node does not have"
            if b.type not in initial[node].tables:
                return f"block {i} uses {b.type}, which NUMA node {node} does not have"
    expected = expected_machine_state(initial, checkpoint.blocks)
    return machine_state_difference(checkpoint.machine_state, expected)


def encode_memory_checkpoint(checkpoint: MemoryCheckpoint) -> str:
    numa = {
        str(node): {
            "assignments": ns.assignments,
            "cells": format_cpulist(ns.cells),
            "tables": {
                kind: [t.allocatable, t.free, t.reserved] for kind, t in sorted(ns.tables.items())
            },
        }
        for node, ns in sorted(checkpoint.machine_state.items())
    }
    blocks = [
        {"type": b.type, "size": b.size, "numa": format_cpulist(b.numa)} for b in checkpoint.blocks
    ]
    return json.dumps({"v": VERSION, "numa": numa, "blocks": blocks}, separators=(",", ":"))


def decode_memory_checkpoint(text: str) -> MemoryCheckpoint:
    """Parse :func:`encode_memory_checkpoint`'s output."""
    raw = loads_strict(text, MemoryCheckpointError)
    obj = _object(raw, "the checkpoint", ("v", "numa", "blocks"))
    if type(obj["v"]) is not int or obj["v"] != VERSION:
        raise MemoryCheckpointError(f"v: unsupported version {obj['v']!r} (expected {VERSION})")
    if not isinstance(obj["numa"], Mapping) or not obj["numa"]:
        raise MemoryCheckpointError("numa: expected a non-empty object")
    state: MachineState = {}
    for key, value in obj["numa"].items():
        if not _NUMA_ID.fullmatch(key) or str(int(key)) != key:
            raise MemoryCheckpointError(f"numa[{key!r}]: expected a NUMA node id")
        state[int(key)] = _numa(value, f"numa[{key!r}]")
    if not isinstance(obj["blocks"], list):
        raise MemoryCheckpointError("blocks: expected a list")
    blocks = tuple(_block(b, f"blocks[{i}]") for i, b in enumerate(obj["blocks"]))
    return MemoryCheckpoint(clone_state(state), blocks)


def _numa(raw: Any, where: str) -> NumaMemory:
    obj = _object(raw, where, ("assignments", "cells", "tables"))
    assignments = _count(obj["assignments"], f"{where}.assignments")
    cells = _cpulist(obj["cells"], f"{where}.cells")
    if not isinstance(obj["tables"], Mapping):
        raise MemoryCheckpointError(f"{where}.tables: expected an object")
    tables: dict[str, MemoryTable] = {}
    for kind, row in obj["tables"].items():
        at = f"{where}.tables[{kind!r}]"
        if not is_memory_type(kind):
            raise MemoryCheckpointError(f"{at}: not memory or hugepages-<size>")
        if not isinstance(row, list) or len(row) != 3:
            raise MemoryCheckpointError(f"{at}: expected [allocatable, free, reserved]")
        allocatable, free, reserved = (_count(v, at) for v in row)
        tables[kind] = MemoryTable(allocatable, free, reserved)
    return NumaMemory(assignments, tuple(sorted(cells)), tables)


def _block(raw: Any, where: str) -> Block:
    obj = _object(raw, where, ("type", "size", "numa"))
    kind = obj["type"]
    if not isinstance(kind, str) or not is_memory_type(kind):
        raise MemoryCheckpointError(f"{where}.type: not memory or hugepages-<size>")
    size = _count(obj["size"], f"{where}.size")
    return Block(kind, size, tuple(sorted(_cpulist(obj["numa"], f"{where}.numa"))))


def _object(raw: Any, where: str, fields: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise MemoryCheckpointError(f"{where}: expected an object")
    for key in fields:
        if key not in raw:
            raise MemoryCheckpointError(f"{where}: missing field {key!r}")
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise MemoryCheckpointError(f"{where}: unknown field {unknown[0]!r}")
    return raw


def _count(raw: Any, where: str) -> int:
    if type(raw) is not int or raw < 0:
        raise MemoryCheckpointError(f"{where}: expected a whole number >= 0")
    return raw


def _cpulist(raw: Any, where: str) -> frozenset[int]:
    if not isinstance(raw, str) or not _NUMA_LIST.fullmatch(raw):
        raise MemoryCheckpointError(f"{where}: expected a list of NUMA ids such as 0-1,3")
    try:
        return parse_cpulist(raw)
    except CpuListError as exc:
        raise MemoryCheckpointError(f"{where}: {exc}") from None
