"""Reading what the publisher computes from: sysfs, the kubelet configuration file and the
kubelet's podresources socket. The I/O edge of :mod:`fakenrt.nrtpub` (the mapping is
:mod:`fakenrt.nrtpub.compute`).

Every failure is an :class:`InputError` whose message names the file, socket or field, so
the daemon logs one clear line and tries again at the next poll.
"""

from __future__ import annotations

import re
from pathlib import Path

from exporter.podresources_client import PodResourcesClient, PodResourcesError
from fakenrt.nrtpub.compute import Observation
from fakenrt.nrtpub.kubeletconfig import (
    KubeletConfigError,
    PublisherKubeletConfig,
    parse_kubelet_config,
)
from fakenrt.nrtpub.machine import MAX_NUMA_NODES, Machine, MachineError, NodeFiles, parse_machine
from fakenrt.textfiles import TextFileError, read_text
from fakenrt.yamltext import YamlError, load_one

_NODE_DIR = re.compile(r"^node(0|[1-9][0-9]{0,5})$")
_PAGES_DIR = re.compile(r"^hugepages-([1-9][0-9]{0,12})kB$")
#: sysfs files are tiny; a larger one is not a sysfs file.
_SYSFS_LIMIT = 64 * 1024
#: A kubelet configuration file is a few KiB.
_CONFIG_LIMIT = 1024 * 1024


class InputError(RuntimeError):
    """An input of the publisher cannot be read; the message says which and why."""


def _read(path: Path, limit: int) -> str:
    try:
        return read_text(path, limit=limit)
    except TextFileError as exc:
        raise InputError(str(exc)) from None


def read_machine(sysfs_root: Path) -> Machine:
    """The NUMA machine under ``<sysfs_root>/devices/system/node``."""
    base = sysfs_root / "devices" / "system" / "node"
    try:
        entries = sorted(base.iterdir())
    except OSError as exc:
        raise InputError(f"{base}: cannot list NUMA nodes ({exc.strerror or exc})") from None
    files: list[NodeFiles] = []
    for entry in entries:
        match = _NODE_DIR.match(entry.name)
        if match is None:
            continue
        if len(files) >= MAX_NUMA_NODES:
            raise InputError(f"{base}: more than {MAX_NUMA_NODES} NUMA nodes")
        pages: dict[int, str] = {}
        hugepages = entry / "hugepages"
        if hugepages.is_dir():
            for page_dir in sorted(hugepages.iterdir()):
                page = _PAGES_DIR.match(page_dir.name)
                if page is not None:
                    pages[int(page.group(1)) * 1024] = _read(
                        page_dir / "nr_hugepages", _SYSFS_LIMIT
                    )
        files.append(
            NodeFiles(
                id=int(match.group(1)),
                where=str(entry),
                cpulist=_read(entry / "cpulist", _SYSFS_LIMIT),
                distance=_read(entry / "distance", _SYSFS_LIMIT),
                meminfo=_read(entry / "meminfo", _SYSFS_LIMIT),
                hugepages=pages,
            )
        )
    if not files:
        raise InputError(f"{base}: no node<N> directories (is --sysfs-root the host's /sys?)")
    try:
        return parse_machine(files)
    except MachineError as exc:
        raise InputError(str(exc)) from None


def read_kubelet_config(path: Path) -> PublisherKubeletConfig:
    """The kubelet's settings from its KubeletConfiguration file."""
    text = _read(path, _CONFIG_LIMIT)
    try:
        doc = load_one(text)
    except YamlError as exc:
        raise InputError(f"{path}: {exc}") from None
    try:
        return parse_kubelet_config(doc)
    except KubeletConfigError as exc:
        raise InputError(f"{path}: {exc}") from None


def observe(*, client: PodResourcesClient, sysfs_root: Path, kubelet_config: Path) -> Observation:
    """One poll: the machine, the kubelet settings, then GetAllocatableResources and List."""
    machine = read_machine(sysfs_root)
    config = read_kubelet_config(kubelet_config)
    try:
        allocatable = client.allocatable()
        pods = client.list()
    except PodResourcesError as exc:
        raise InputError(str(exc)) from None
    return Observation(machine=machine, config=config, allocatable=allocatable, pods=pods)
