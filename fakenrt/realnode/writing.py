"""Writes a rendered real-kubelet node to disk (the I/O edge of :mod:`fakenrt.realnode`).

``<out>/<node>/`` holds the machine files (``sys/...``, ``proc/...``), the kubeadm patch
(``kubeadm-patches/kubeletconfiguration+merge.yaml``) and ``kubelet-config.yaml`` (the
same document, for reading); ``<out>/kind-cluster.yaml`` the Kind cluster and
``<out>/device-plugins.yaml`` the device plugin Pods and, when a node has DRA drivers,
``<out>/dra-plugins.yaml`` the fake DRA kubelet plugin Pods with their DeviceClasses.
Files are world-readable: the node container reads them through bind mounts.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import yaml

from fakenrt.profiles.model import NodeProfile
from fakenrt.realnode.kind import (
    KUBELET_PATCH,
    device_plugin_manifests,
    dra_plugin_manifests,
    kind_cluster,
)
from fakenrt.realnode.kubeletconfig import kubelet_configuration
from fakenrt.realnode.machine import machine_files


def write_files(root: Path, files: dict[str, str]) -> None:
    """Writes ``files`` (``dir/`` keys are empty directories) under ``root``."""
    for relative, content in sorted(files.items()):
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        path.chmod(0o644)


def render_node(profile: NodeProfile, directory: Path) -> None:
    """Machine files and kubelet configuration of one node, replacing ``directory``."""
    files = machine_files(profile)
    config = yaml.safe_dump(kubelet_configuration(profile), sort_keys=False)
    if directory.exists():
        shutil.rmtree(directory)
    write_files(directory, files)
    write_files(directory, {f"kubeadm-patches/{KUBELET_PATCH}": config})
    write_files(directory, {"kubelet-config.yaml": config})


def render_cluster(
    *,
    nodes: Sequence[NodeProfile],
    out: Path,
    cluster: str,
    profiles_text: str,
    image: str,
) -> list[Path]:
    """Every node's directory, the Kind config, the device plugin manifests and, for
    nodes with DRA drivers, the DRA plugin manifests; returns the files written at the
    top of ``out``."""
    out = out.resolve()
    placed: list[tuple[NodeProfile, Path]] = []
    for profile in nodes:
        directory = out / profile.name
        render_node(profile, directory)
        placed.append((profile, directory))
    config = out / "kind-cluster.yaml"
    config.write_text(yaml.safe_dump(kind_cluster(cluster=cluster, nodes=placed), sort_keys=False))
    plugins = out / "device-plugins.yaml"
    plugins.write_text(
        yaml.safe_dump_all(
            device_plugin_manifests(nodes=nodes, profiles_text=profiles_text, image=image),
            sort_keys=False,
        )
    )
    written = [config, plugins]
    dra = dra_plugin_manifests(nodes=nodes, profiles_text=profiles_text, image=image)
    if dra:
        dra_path = out / "dra-plugins.yaml"
        dra_path.write_text(yaml.safe_dump_all(dra, sort_keys=False))
        written.append(dra_path)
    return written
