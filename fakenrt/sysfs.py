"""A fake sysfs tree for a node profile, so sysfs readers (the exporter's CPU -> NUMA map,
or any tool that reads Linux topology files) work against a fake node.

Written under ``<root>``, as Linux lays them out:

* ``devices/system/node/node<N>/cpulist`` - the CPUs of NUMA node N (canonical cpulist);
* ``devices/system/node/node<N>/distance`` - the node's row of the distance matrix;
* ``devices/system/node/{online,possible,has_cpu,has_memory}`` - NUMA node id lists;
* ``devices/system/cpu/{online,possible,present}`` - every CPU of the node;
* with ``cpu_topology=True``, per CPU ``devices/system/cpu/cpu<C>/topology/`` files
  ``core_id`` (the profile's core id: the lowest CPU id of the core), ``physical_package_id``,
  ``thread_siblings_list`` and ``core_siblings_list`` (CPUs of the same socket);
* per DRA device with a PCI address, ``bus/pci/devices/<address>/numa_node`` - its NUMA
  node, ``-1`` for a device without NUMA affinity (what Linux writes for one).

Writing is idempotent: files whose content is already right are left alone, others are
replaced atomically (write then rename, so a reader never sees half a file), and
``node<N>`` / ``cpu<C>`` directories the profile no longer has are removed.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

from exporter.cpulist import format_cpulist
from fakenrt.profiles.model import NodeProfile

_NODE_DIR = re.compile(r"^node(0|[1-9][0-9]*)$")
_CPU_DIR = re.compile(r"^cpu(0|[1-9][0-9]*)$")
_PCI_DIR = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def node_root(root: Path) -> Path:
    return root / "devices" / "system" / "node"


def cpu_root(root: Path) -> Path:
    return root / "devices" / "system" / "cpu"


def pci_root(root: Path) -> Path:
    return root / "bus" / "pci" / "devices"


def _pci_devices(profile: NodeProfile) -> dict[str, int]:
    """PCI address -> NUMA node (-1: none) of the node's DRA devices."""
    return {
        device.pci_bus_id: -1 if device.numa is None else device.numa
        for driver in profile.dra
        for device in driver.devices
        if device.pci_bus_id is not None
    }


def sysfs_files(profile: NodeProfile, *, cpu_topology: bool = False) -> dict[str, str]:
    """Relative path -> content of every file the tree holds for ``profile``. Pure."""
    files: dict[str, str] = {}
    node_base = "devices/system/node"
    cpu_base = "devices/system/cpu"
    ids = profile.zone_ids
    for zone in profile.zones:
        files[f"{node_base}/node{zone.id}/cpulist"] = format_cpulist(zone.cpus) + "\n"
        row = " ".join(str(profile.distance(zone.id, other)) for other in ids)
        files[f"{node_base}/node{zone.id}/distance"] = row + "\n"
    files[f"{node_base}/online"] = format_cpulist(ids) + "\n"
    files[f"{node_base}/possible"] = format_cpulist(ids) + "\n"
    files[f"{node_base}/has_cpu"] = format_cpulist(z.id for z in profile.zones if z.cpus) + "\n"
    files[f"{node_base}/has_memory"] = (
        format_cpulist(z.id for z in profile.zones if z.memory) + "\n"
    )
    every_cpu = format_cpulist(c for z in profile.zones for c in z.cpus) + "\n"
    for name in ("online", "possible", "present"):
        files[f"{cpu_base}/{name}"] = every_cpu
    if cpu_topology:
        siblings: dict[int, list[int]] = defaultdict(list)
        package: dict[int, list[int]] = defaultdict(list)
        for info in profile.cpu_topology.values():
            siblings[info.core].append(info.cpu)
            package[info.socket].append(info.cpu)
        for info in profile.cpu_topology.values():
            base = f"{cpu_base}/cpu{info.cpu}/topology"
            files[f"{base}/core_id"] = f"{info.core}\n"
            files[f"{base}/physical_package_id"] = f"{info.socket}\n"
            files[f"{base}/thread_siblings_list"] = format_cpulist(siblings[info.core]) + "\n"
            files[f"{base}/core_siblings_list"] = format_cpulist(package[info.socket]) + "\n"
    for address, numa in _pci_devices(profile).items():
        files[f"bus/pci/devices/{address}/numa_node"] = f"{numa}\n"
    return files


def write_sysfs(root: str | Path, profile: NodeProfile, *, cpu_topology: bool = False) -> None:
    """Write (or bring up to date) the fake sysfs tree of ``profile`` under ``root``."""
    base = Path(root)
    files = sysfs_files(profile, cpu_topology=cpu_topology)
    for relative, content in files.items():
        _write_if_changed(base / relative, content)
    _prune(node_root(base), _NODE_DIR, {f"node{z}" for z in profile.zone_ids})
    keep_cpus = {f"cpu{c}" for c in profile.cpu_topology} if cpu_topology else set()
    _prune(cpu_root(base), _CPU_DIR, keep_cpus)
    _prune(pci_root(base), _PCI_DIR, set(_pci_devices(profile)))


def _write_if_changed(path: Path, content: str) -> None:
    try:
        if path.read_text() == content:
            return
    except (FileNotFoundError, NotADirectoryError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(content)
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _prune(directory: Path, pattern: re.Pattern[str], keep: set[str]) -> None:
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        if pattern.match(entry.name) and entry.name not in keep and entry.is_dir():
            shutil.rmtree(entry)
