"""A test-side reader of machine files the way cAdvisor v0.56 reads them for the kubelet
(``utils/sysinfo/sysinfo.go`` ``GetNodesInfo``, ``machine/machine.go``): NUMA node
directories, their ``cpu<M>/topology`` files, ``meminfo`` ``MemTotal``, ``distance`` and
hugepages; ``/proc/cpuinfo`` sockets and ``/proc/meminfo`` ``MemTotal``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from exporter.cpulist import parse_cpulist

_NODE = re.compile(r"^node(\d+)$")
_CPU = re.compile(r"^cpu(\d+)$")
_PAGES = re.compile(r"^hugepages-(\d+)kB$")


@dataclass(frozen=True)
class NumaNode:
    id: int
    #: cpu -> (core_id, physical_package_id)
    cpus: dict[int, tuple[int, int]]
    mem_total: int
    distances: tuple[int, ...]
    #: page size in bytes -> pages
    hugepages: dict[int, int]


@dataclass(frozen=True)
class Machine:
    nodes: dict[int, NumaNode]
    online: frozenset[int]
    sockets: frozenset[int]
    mhz: frozenset[str]
    mem_total: int
    hugepages: dict[int, int]


def _pages(directory: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in directory.iterdir():
        match = _PAGES.match(entry.name)
        if match:
            out[int(match.group(1)) * 1024] = int((entry / "nr_hugepages").read_text())
    return out


def _mem_total(text: str) -> int:
    match = re.search(r"MemTotal:\s*(\d+) kB", text)
    assert match, text
    return int(match.group(1)) * 1024


def read_machine(root: Path) -> Machine:
    base = root / "sys/devices/system/node"
    nodes: dict[int, NumaNode] = {}
    for entry in sorted(base.iterdir()):
        match = _NODE.match(entry.name)
        if not match:
            continue
        cpus: dict[int, tuple[int, int]] = {}
        for cpu_dir in entry.iterdir():
            cpu = _CPU.match(cpu_dir.name)
            topology = cpu_dir / "topology"
            if cpu is None or not (topology / "core_id").exists():
                continue
            cpus[int(cpu.group(1))] = (
                int((topology / "core_id").read_text()),
                int((topology / "physical_package_id").read_text()),
            )
        node_id = int(match.group(1))
        nodes[node_id] = NumaNode(
            id=node_id,
            cpus=cpus,
            mem_total=_mem_total((entry / "meminfo").read_text()),
            distances=tuple(int(d) for d in (entry / "distance").read_text().split()),
            hugepages=_pages(entry / "hugepages"),
        )
    cpuinfo = (root / "proc/cpuinfo").read_text()
    return Machine(
        nodes=nodes,
        online=frozenset(parse_cpulist((root / "sys/devices/system/cpu/online").read_text())),
        sockets=frozenset(int(s) for s in re.findall(r"physical id\s*:\s*(\d+)", cpuinfo)),
        mhz=frozenset(re.findall(r"cpu MHz\s*:\s*([0-9]+\.[0-9]+)", cpuinfo)),
        mem_total=_mem_total((root / "proc/meminfo").read_text()),
        hugepages=_pages(root / "sys/kernel/mm/hugepages"),
    )
