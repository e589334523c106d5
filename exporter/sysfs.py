"""The node's CPU -> NUMA-node map, and a PCI device's NUMA node, read from sysfs.

``<root>/devices/system/node/node<N>/cpulist`` lists the CPUs of NUMA node N;
``<root>/bus/pci/devices/<address>/numa_node`` holds a PCI device's NUMA node (``-1``:
none). The root is a constructor argument (``--sysfs-root``) so tests and the fake
kubelet point it at a fixture tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from exporter.cpulist import CpuListError, parse_cpulist
from exporter.dra_attributes import is_pci_bus_id

_NODE_DIR = re.compile(r"^node(0|[1-9][0-9]*)$")


class SysfsError(RuntimeError):
    """sysfs cannot be read as a NUMA topology; the message names the file."""


def node_dir(root: Path) -> Path:
    return root / "devices" / "system" / "node"


def read_cpu_numa_map(root: Path) -> dict[int, int]:
    """CPU id -> NUMA node id for every CPU listed under ``<root>/devices/system/node``.

    Raises SysfsError when the directory has no ``node<N>`` entries, a cpulist does not
    parse, or a CPU is listed under two nodes.
    """
    base = node_dir(root)
    try:
        entries = sorted(base.iterdir())
    except OSError as exc:
        raise SysfsError(f"{base}: cannot list NUMA nodes ({exc.strerror})") from exc
    mapping: dict[int, int] = {}
    found = False
    for entry in entries:
        match = _NODE_DIR.match(entry.name)
        if match is None:
            continue
        found = True
        numa_id = int(match.group(1))
        path = entry / "cpulist"
        try:
            cpus = parse_cpulist(path.read_text())
        except OSError as exc:
            raise SysfsError(f"{path}: cannot read ({exc.strerror})") from exc
        except CpuListError as exc:
            raise SysfsError(f"{path}: {exc}") from exc
        for cpu in cpus:
            if cpu in mapping:
                raise SysfsError(
                    f"{path}: CPU {cpu} is also listed under node{mapping[cpu]}; "
                    "a CPU belongs to one NUMA node"
                )
            mapping[cpu] = numa_id
    if not found:
        raise SysfsError(f"{base}: no node<N> directories (is --sysfs-root right?)")
    return mapping


#: ``numa_node`` is a short decimal; more than this is not a numa_node file.
_MAX_NUMA_NODE_BYTES = 32


def read_pci_numa_node(root: Path, address: str) -> int | None:
    """The NUMA node of PCI device ``address`` (extended BDF, lower case): ``-1`` when
    the kernel reports none, None when it cannot be read (no such device, not a number).
    ``address`` must be an extended BDF: anything else (a path in disguise) is None."""
    if not is_pci_bus_id(address):
        return None
    path = root / "bus" / "pci" / "devices" / address / "numa_node"
    try:
        with path.open("rb") as handle:
            text = handle.read(_MAX_NUMA_NODE_BYTES + 1)
    except OSError:
        return None
    if len(text) > _MAX_NUMA_NODE_BYTES:
        return None
    try:
        return int(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None


def write_fixture(root: Path, nodes: dict[int, str]) -> None:
    """Write a minimal sysfs tree (node<N>/cpulist) under root: for tests and tools."""
    for numa_id, cpulist in nodes.items():
        path = node_dir(root) / f"node{numa_id}"
        path.mkdir(parents=True, exist_ok=True)
        (path / "cpulist").write_text(cpulist + "\n")
