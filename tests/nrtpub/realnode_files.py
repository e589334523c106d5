"""Test side: a profile node served as a real-kubelet node shows itself to the publisher -
the machine files the real kubelet's node gets (:mod:`fakenrt.realnode.machine`), its
KubeletConfiguration (:mod:`fakenrt.realnode.kubeletconfig`) and the project's fake
podresources gRPC server on a real unix socket, answering with the simulator's
allocations."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fakenrt.controller.endpoints import NodeSnapshot
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.podresources_server import PodResourcesServer
from fakenrt.profiles.model import NodeProfile
from fakenrt.realnode.kubeletconfig import kubelet_configuration
from fakenrt.realnode.machine import RenderError, machine_files
from fakenrt.realnode.writing import write_files


def kubelet_config_doc(profile: NodeProfile) -> dict[str, Any]:
    """The profile's KubeletConfiguration; for a profile a real kubelet refuses (static
    CPU Manager without a cpu reservation, Static Memory Manager without reservedMemory),
    the same document without that start-up check - what the publisher reads is the same."""
    try:
        return kubelet_configuration(profile)
    except RenderError:
        cfg = profile.kubelet
        doc: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "topologyManagerPolicy": cfg.topology_manager_policy,
            "topologyManagerScope": cfg.topology_manager_scope,
            "cpuManagerPolicy": cfg.cpu_manager_policy,
            "memoryManagerPolicy": cfg.memory_manager_policy,
        }
        if cfg.reserved_cpus and cfg.cpu_reservation_millis is None:
            doc["reservedSystemCPUs"] = ",".join(str(c) for c in sorted(cfg.reserved_cpus))
        return doc


def machine_profile(profile: NodeProfile) -> NodeProfile:
    """The profile without foreign ``allocated`` amounts: the machine files do not depend
    on them, and a real node shows them as pods (which the server lists)."""
    zones = tuple(dataclasses.replace(z, allocated={}) for z in profile.zones)
    return dataclasses.replace(profile, zones=zones)


@dataclass
class ServedNode:
    root: Path
    source: NodeSnapshot

    @property
    def socket(self) -> Path:
        return self.root / "kubelet.sock"

    @property
    def sysfs_root(self) -> Path:
        return self.root / "sys"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet-config.yaml"

    def serve(self, allocations: Sequence[PodAllocation]) -> None:
        self.source.set(allocations)


def write_node_files(profile: NodeProfile, root: Path) -> None:
    write_files(root, machine_files(machine_profile(profile)))
    (root / "kubelet-config.yaml").write_text(
        yaml.safe_dump(kubelet_config_doc(profile), sort_keys=False)
    )


@contextmanager
def served_node(profile: NodeProfile) -> Iterator[ServedNode]:
    """The node's files under a short temporary directory (unix socket paths are limited
    to 107 bytes) and its podresources server, serving no pod until told."""
    root = Path(tempfile.mkdtemp(prefix="nrtpub-", dir="/tmp"))
    try:
        write_node_files(profile, root)
        node = ServedNode(root=root, source=NodeSnapshot(profile))
        with PodResourcesServer(node.socket, node.source):
            yield node
    finally:
        shutil.rmtree(root, ignore_errors=True)
