"""A Kind cluster whose workers are real-kubelet nodes of a profile. Pure: returns the
documents; :mod:`fakenrt.realnode.writing` puts them on disk.

* One control-plane node (kubeadm's, untouched but for ``failCgroupV1: false``), then one
  worker per profile node, with the profile's labels and ``numa-testkit.io/profile-node:
  <name>`` (Kind names workers ``<cluster>-worker``, ``-worker2``, ... in this order).
* Each worker bind-mounts its generated machine files (:data:`machine.MOUNTS`) read-only
  over the container's own, and a kubeadm patches directory whose
  ``kubeletconfiguration+merge.yaml`` (the profile's KubeletConfiguration) kubeadm merges
  into the kubelet config it writes on ``join`` - a joining node otherwise takes the
  cluster-wide one.
* The fake device plugin runs as one Pod per node that has devices (the project image,
  ``fakenrt device-plugin``, hostPath ``/var/lib/kubelet/device-plugins``), its profile
  in a ConfigMap.
* The fake DRA kubelet plugin runs as one Pod per node with DRA drivers (``fakenrt
  dra-plugin``, hostPaths ``/var/lib/kubelet/plugins``, ``/var/lib/kubelet/
  plugins_registry`` and ``/var/run/cdi``), with a ServiceAccount allowed to read claims
  and nodes and write ResourceSlices; the drivers' DeviceClasses go with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from fakenrt.deviceplugin.inventory import resources
from fakenrt.dra.slices import device_classes
from fakenrt.profiles.model import NodeProfile
from fakenrt.realnode.machine import MOUNTS

KIND_API = "kind.x-k8s.io/v1alpha4"
PROFILE_LABEL = "numa-testkit.io/profile-node"
PATCHES_DIR = "/etc/numa-testkit/kubeadm-patches"
#: The file name kubeadm's ``--patches`` expects: target ``kubeletconfiguration``, a JSON
#: merge patch, YAML.
KUBELET_PATCH = "kubeletconfiguration+merge.yaml"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
PLUGIN_NAMESPACE = "kube-system"
PROFILES_CONFIGMAP = "numa-testkit-profiles"
PROFILE_KEY = "profiles.yaml"
DRA_PLUGINS_DIR = "/var/lib/kubelet/plugins"
DRA_REGISTRY_DIR = "/var/lib/kubelet/plugins_registry"
CDI_DIR = "/var/run/cdi"
DRA_PLUGIN = "fakenrt-dra-plugin"
DRA_PLUGIN_LABEL = "app.kubernetes.io/name"


def worker_name(cluster: str, index: int) -> str:
    """The Node name Kind gives the index-th worker (0-based)."""
    return f"{cluster}-worker" if index == 0 else f"{cluster}-worker{index + 1}"


def kind_cluster(*, cluster: str, nodes: Sequence[tuple[NodeProfile, Path]]) -> dict[str, Any]:
    """The Kind ``Cluster`` config: ``nodes`` pairs each profile node with the absolute
    directory its files were rendered into."""
    workers: list[dict[str, Any]] = []
    for profile, directory in nodes:
        mounts = [
            {"hostPath": str(directory / rel), "containerPath": target, "readOnly": True}
            for rel, target in MOUNTS
        ]
        mounts.append(
            {
                "hostPath": str(directory / "kubeadm-patches"),
                "containerPath": PATCHES_DIR,
                "readOnly": True,
            }
        )
        workers.append(
            {
                "role": "worker",
                "labels": {**profile.labels, PROFILE_LABEL: profile.name},
                "extraMounts": mounts,
                "kubeadmConfigPatches": [
                    yaml.safe_dump(
                        {
                            "kind": "JoinConfiguration",
                            "patches": {"directory": PATCHES_DIR},
                        },
                        sort_keys=False,
                    )
                ],
            }
        )
    return {
        "kind": "Cluster",
        "apiVersion": KIND_API,
        "name": cluster,
        # kindnetd cannot be had offline; the node image carries a static per-node CNI
        # config (docs/kind.md). Pods here are pause containers: no cross-node traffic.
        "networking": {"disableDefaultCNI": True},
        "kubeadmConfigPatches": [
            yaml.safe_dump({"kind": "KubeletConfiguration", "failCgroupV1": False})
        ],
        "nodes": [{"role": "control-plane"}, *workers],
    }


def device_plugin_manifests(
    *, nodes: Sequence[NodeProfile], profiles_text: str, image: str
) -> list[dict[str, Any]]:
    """The ConfigMap holding the profile file and one device plugin Pod per node with
    devices, pinned by the profile-node label."""
    docs: list[dict[str, Any]] = [_profiles_configmap(profiles_text)]
    for profile in nodes:
        if not resources(profile):
            continue
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"fakenrt-device-plugin-{profile.name}"[:63].rstrip("-."),
                    "namespace": PLUGIN_NAMESPACE,
                    "labels": {"app.kubernetes.io/name": "fakenrt-device-plugin"},
                },
                "spec": {
                    "nodeSelector": {PROFILE_LABEL: profile.name},
                    "tolerations": [{"operator": "Exists"}],
                    "restartPolicy": "Always",
                    "containers": [
                        {
                            "name": "device-plugin",
                            "image": image,
                            "imagePullPolicy": "Never",
                            "command": ["fakenrt", "device-plugin"],
                            "args": [
                                "--profile",
                                f"/etc/numa-testkit/{PROFILE_KEY}",
                                "--node",
                                profile.name,
                                "--dir",
                                DEVICE_PLUGIN_DIR,
                            ],
                            # The kubelet's device-plugins directory is root's.
                            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
                            "volumeMounts": [
                                {"name": "plugins", "mountPath": DEVICE_PLUGIN_DIR},
                                {"name": "profiles", "mountPath": "/etc/numa-testkit"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "plugins", "hostPath": {"path": DEVICE_PLUGIN_DIR}},
                        {"name": "profiles", "configMap": {"name": PROFILES_CONFIGMAP}},
                    ],
                },
            }
        )
    return docs


def _profiles_configmap(profiles_text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PROFILES_CONFIGMAP, "namespace": PLUGIN_NAMESPACE},
        "data": {PROFILE_KEY: profiles_text},
    }


def dra_plugin_access() -> list[dict[str, Any]]:
    """The fake DRA plugin's ServiceAccount and what it may do: read the claims it
    prepares and its Node (the owner of its slices), write ResourceSlices."""
    meta = {"name": DRA_PLUGIN, "labels": {DRA_PLUGIN_LABEL: DRA_PLUGIN}}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {**meta, "namespace": PLUGIN_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta,
            "rules": [
                {
                    "apiGroups": ["resource.k8s.io"],
                    "resources": ["resourceclaims"],
                    "verbs": ["get"],
                },
                {
                    "apiGroups": ["resource.k8s.io"],
                    "resources": ["resourceslices"],
                    "verbs": ["list", "create", "update", "delete"],
                },
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": DRA_PLUGIN,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": DRA_PLUGIN, "namespace": PLUGIN_NAMESPACE}
            ],
        },
    ]


def dra_plugin_pod(profile: NodeProfile, *, image: str) -> dict[str, Any]:
    """The fake DRA kubelet plugin of one node, pinned by the profile-node label."""
    host_paths = (
        ("plugins", DRA_PLUGINS_DIR),
        ("registry", DRA_REGISTRY_DIR),
        ("cdi", CDI_DIR),
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{DRA_PLUGIN}-{profile.name}"[:63].rstrip("-."),
            "namespace": PLUGIN_NAMESPACE,
            "labels": {DRA_PLUGIN_LABEL: DRA_PLUGIN},
        },
        "spec": {
            "nodeSelector": {PROFILE_LABEL: profile.name},
            "tolerations": [{"operator": "Exists"}],
            "restartPolicy": "Always",
            "serviceAccountName": DRA_PLUGIN,
            "containers": [
                {
                    "name": "dra-plugin",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["fakenrt", "dra-plugin"],
                    "args": [
                        "--profile",
                        f"/etc/numa-testkit/{PROFILE_KEY}",
                        "--node",
                        profile.name,
                        "--plugins-dir",
                        DRA_PLUGINS_DIR,
                        "--registry-dir",
                        DRA_REGISTRY_DIR,
                        "--cdi-dir",
                        CDI_DIR,
                    ],
                    "env": [
                        {
                            "name": "NODE_NAME",
                            "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                        }
                    ],
                    # The kubelet's plugin directories are root's.
                    "securityContext": {"runAsUser": 0, "runAsGroup": 0},
                    "volumeMounts": [
                        *({"name": name, "mountPath": where} for name, where in host_paths),
                        {"name": "profiles", "mountPath": "/etc/numa-testkit"},
                    ],
                }
            ],
            "volumes": [
                *(
                    {"name": name, "hostPath": {"path": where, "type": "DirectoryOrCreate"}}
                    for name, where in host_paths
                ),
                {"name": "profiles", "configMap": {"name": PROFILES_CONFIGMAP}},
            ],
        },
    }


def dra_plugin_manifests(
    *, nodes: Sequence[NodeProfile], profiles_text: str, image: str
) -> list[dict[str, Any]]:
    """The profiles ConfigMap, the plugin's access, the drivers' DeviceClasses and one
    fake DRA kubelet plugin Pod per node with DRA drivers (none without)."""
    with_dra = [p for p in nodes if p.dra]
    if not with_dra:
        return []
    return [
        _profiles_configmap(profiles_text),
        *dra_plugin_access(),
        *device_classes(with_dra, labels={DRA_PLUGIN_LABEL: DRA_PLUGIN}),
        *(dra_plugin_pod(p, image=image) for p in with_dra),
    ]
