"""A node's NUMA machine as sysfs shows it, parsed from the files' text. Pure.

Per NUMA node ``<sysfs>/devices/system/node/node<N>/``: ``cpulist`` (its CPUs),
``distance`` (its row of the distance matrix, in node-id order), ``meminfo`` (the line
``Node <N> MemTotal: <kB> kB``) and ``hugepages/hugepages-<kB>kB/nr_hugepages``. These are
the files the kernel writes and :mod:`fakenrt.realnode.machine` generates for a real
kubelet on a fake topology; reading them is :mod:`fakenrt.nrtpub.inputs`.

Hostile sizes are bad input: at most :data:`MAX_NUMA_NODES` nodes, CPU ids below
:data:`MAX_CPU_ID`, so a corrupt ``cpulist`` such as ``0-999999999`` is refused rather
than expanded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.cpulist import CpuListError, parse_cpulist
from fakenrt.profiles.names import HUGEPAGES_PREFIX, canonical_binary

MAX_NUMA_NODES = 1024
MAX_CPU_ID = 1 << 16
#: The largest count a sysfs number may carry (memory in kB, pages): 2**62.
_MAX_NUMBER = 1 << 62
_MEM_TOTAL = re.compile(r"^Node\s+\d+\s+MemTotal:\s+(\d+)\s+kB\s*$", re.MULTILINE)
_NUMBER = re.compile(r"\d+")


class MachineError(ValueError):
    """sysfs does not describe a NUMA machine; the message names the file."""


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node: its CPUs, its distance row, ``MemTotal`` and hugepages."""

    id: int
    cpus: frozenset[int]
    #: Distance to every node of the machine, in node-id order (itself included).
    distances: tuple[int, ...]
    #: ``MemTotal`` in bytes: all the node's memory, hugepages included.
    mem_total: int
    #: Page size in bytes -> number of pages (``nr_hugepages``).
    hugepages: Mapping[int, int] = field(default_factory=dict)

    def hugepage_bytes(self) -> dict[str, int]:
        """``hugepages-<size>`` -> bytes, as the kubelet names the resources."""
        return {
            hugepage_resource(size): size * count for size, count in sorted(self.hugepages.items())
        }

    @property
    def memory(self) -> int:
        """The node's ``memory`` capacity: ``MemTotal`` without its hugepages (what the
        Memory Manager counts as the node's regular memory, ``getDefaultMachineState`` in
        ``pkg/kubelet/cm/memorymanager/policy_static.go``); never below 0."""
        return max(0, self.mem_total - sum(s * c for s, c in self.hugepages.items()))


@dataclass(frozen=True)
class Machine:
    """Every NUMA node, sorted by id."""

    nodes: tuple[NumaNode, ...]

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(n.id for n in self.nodes)

    def distance(self, a: int, b: int) -> int:
        ids = self.node_ids
        return self.nodes[ids.index(a)].distances[ids.index(b)]

    def numa_of_cpu(self) -> dict[int, int]:
        return {cpu: node.id for node in self.nodes for cpu in node.cpus}


def hugepage_resource(size: int) -> str:
    """``hugepages-2Mi`` for a page size of 2097152 bytes."""
    return HUGEPAGES_PREFIX + canonical_binary(size)


def _number(text: str, where: str) -> int:
    stripped = text.strip()
    if not stripped.isdigit() or len(stripped) > 19 or int(stripped) > _MAX_NUMBER:
        raise MachineError(f"{where}: {stripped[:40]!r} is not a count")
    return int(stripped)


def parse_cpus(text: str, where: str) -> frozenset[int]:
    """A ``cpulist`` file, CPU ids bounded by :data:`MAX_CPU_ID`."""
    if any(len(n) > 6 or int(n) >= MAX_CPU_ID for n in _NUMBER.findall(text)):
        raise MachineError(f"{where}: CPU ids must be below {MAX_CPU_ID}")
    try:
        return parse_cpulist(text)
    except CpuListError as exc:
        raise MachineError(f"{where}: {exc}") from None


def parse_mem_total(text: str, where: str) -> int:
    """``MemTotal`` of a node ``meminfo`` file, in bytes."""
    match = _MEM_TOTAL.search(text)
    if match is None:
        raise MachineError(f"{where}: no 'Node <N> MemTotal: <n> kB' line")
    return _number(match.group(1), where) * 1024


def parse_distances(text: str, where: str, *, count: int) -> tuple[int, ...]:
    """A ``distance`` row: one value per NUMA node of the machine."""
    parts = text.split()
    if len(parts) != count:
        raise MachineError(f"{where}: {len(parts)} distances for {count} NUMA nodes")
    return tuple(_number(p, where) for p in parts)


@dataclass(frozen=True)
class NodeFiles:
    """The text of one NUMA node's files (``hugepages``: page size in bytes -> the
    ``nr_hugepages`` text); ``where`` names the node's directory in messages."""

    id: int
    where: str
    cpulist: str
    distance: str
    meminfo: str
    hugepages: Mapping[int, str] = field(default_factory=dict)


def parse_machine(files: list[NodeFiles]) -> Machine:
    """The machine from every node's files. Raises MachineError naming the file."""
    if not files:
        raise MachineError("no NUMA node directories")
    if len(files) > MAX_NUMA_NODES:
        raise MachineError(f"{len(files)} NUMA nodes: more than {MAX_NUMA_NODES}")
    ordered = sorted(files, key=lambda f: f.id)
    nodes = []
    seen: dict[int, int] = {}
    for f in ordered:
        cpus = parse_cpus(f.cpulist, f"{f.where}/cpulist")
        for cpu in cpus:
            if cpu in seen:
                raise MachineError(
                    f"{f.where}/cpulist: CPU {cpu} is also listed under node{seen[cpu]}"
                )
            seen[cpu] = f.id
        nodes.append(
            NumaNode(
                id=f.id,
                cpus=cpus,
                distances=parse_distances(f.distance, f"{f.where}/distance", count=len(files)),
                mem_total=parse_mem_total(f.meminfo, f"{f.where}/meminfo"),
                hugepages={
                    size: _number(text, f"{f.where}/hugepages/hugepages-{size // 1024}kB")
                    for size, text in sorted(f.hugepages.items())
                },
            )
        )
    return Machine(tuple(nodes))
