"""The Kind cluster config and device plugin Pods of real-kubelet nodes, and the
``fakenrt realnode render`` command."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from exporter.kubeclient import path
from fakenrt.cli import main
from fakenrt.profiles import parse_profiles
from fakenrt.realnode.kind import (
    device_plugin_manifests,
    dra_plugin_manifests,
    kind_cluster,
    worker_name,
)
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane

DRA_TEXT = """\
nodes:
- name: dra-a
  kubelet: {topologyManagerPolicy: single-numa-node, reservedSystemCPUs: "0",
            memoryManagerPolicy: None}
  dra: {cpu: {}}
  shape: {numaNodes: 2, coresPerNumaNode: 4, memoryPerNumaNode: 8Gi,
          draDevicesPerNumaNode: {gpu.nvidia.com: 2}}
- name: plain
  kubelet: {reservedSystemCPUs: "0", memoryManagerPolicy: None}
  shape: {numaNodes: 1, coresPerNumaNode: 2, memoryPerNumaNode: 1Gi}
"""

PROFILE_TEXT = """\
nodes:
- name: gpu-a
  kubelet:
    topologyManagerPolicy: single-numa-node
    memoryManagerPolicy: Static
    reservedSystemCPUs: "0"
    systemReserved: {memory: 1Gi}
    reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]
  shape: {numaNodes: 2, coresPerNumaNode: 4, memoryPerNumaNode: 8Gi,
          devicesPerNumaNode: {nvidia.com/gpu: 2}}
- name: cpu-b
  labels: {example.com/pool: cpu}
  kubelet: {memoryManagerPolicy: None, kubeReserved: {cpu: 500m}}
  shape: {numaNodes: 4, coresPerNumaNode: 2, memoryPerNumaNode: 2Gi}
"""


def _profiles() -> tuple:  # type: ignore[type-arg]
    return parse_profiles(yaml.safe_load(PROFILE_TEXT), source="p.yaml")


def test_one_worker_per_node_with_its_mounts(tmp_path: Path) -> None:
    a, b = _profiles()
    doc = kind_cluster(cluster="c", nodes=[(a, tmp_path / "a"), (b, tmp_path / "b")])
    roles = [n["role"] for n in doc["nodes"]]
    assert roles == ["control-plane", "worker", "worker"]
    worker = doc["nodes"][1]
    assert worker["labels"] == {"numa-testkit.io/profile-node": "gpu-a"}
    mounts = {m["containerPath"]: m["hostPath"] for m in worker["extraMounts"]}
    assert mounts == {
        "/sys/devices/system/node": f"{tmp_path}/a/sys/devices/system/node",
        "/sys/devices/system/cpu": f"{tmp_path}/a/sys/devices/system/cpu",
        "/proc/cpuinfo": f"{tmp_path}/a/proc/cpuinfo",
        "/proc/meminfo": f"{tmp_path}/a/proc/meminfo",
        "/sys/kernel/mm/hugepages": f"{tmp_path}/a/sys/kernel/mm/hugepages",
        "/etc/numa-testkit/kubeadm-patches": f"{tmp_path}/a/kubeadm-patches",
    }
    assert all(m["readOnly"] for m in worker["extraMounts"])
    (patch,) = worker["kubeadmConfigPatches"]
    assert yaml.safe_load(patch) == {
        "kind": "JoinConfiguration",
        "patches": {"directory": "/etc/numa-testkit/kubeadm-patches"},
    }
    assert yaml.safe_load(doc["kubeadmConfigPatches"][0])["failCgroupV1"] is False
    assert [worker_name("c", i) for i in range(3)] == ["c-worker", "c-worker2", "c-worker3"]


def test_device_plugin_pods_only_for_nodes_with_devices() -> None:
    docs = device_plugin_manifests(nodes=_profiles(), profiles_text=PROFILE_TEXT, image="img:1")
    config, pod = docs
    assert config["kind"] == "ConfigMap"
    assert config["data"]["profiles.yaml"] == PROFILE_TEXT
    assert pod["spec"]["nodeSelector"] == {"numa-testkit.io/profile-node": "gpu-a"}
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "img:1"
    assert container["command"] + container["args"] == [
        "fakenrt", "device-plugin", "--profile", "/etc/numa-testkit/profiles.yaml",
        "--node", "gpu-a", "--dir", "/var/lib/kubelet/device-plugins",
    ]  # fmt: skip
    assert pod["spec"]["volumes"][0]["hostPath"] == {"path": "/var/lib/kubelet/device-plugins"}


def test_render_command_writes_every_node(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE_TEXT)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["realnode", "render", "--profile", str(profile), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.split() == [
        str(out / "kind-cluster.yaml"),
        str(out / "device-plugins.yaml"),
    ]
    cluster = yaml.safe_load((out / "kind-cluster.yaml").read_text())
    assert [n.get("labels") for n in cluster["nodes"][1:]] == [
        {"numa-testkit.io/profile-node": "gpu-a"},
        {"example.com/pool": "cpu", "numa-testkit.io/profile-node": "cpu-b"},
    ]
    patch = out / "gpu-a/kubeadm-patches/kubeletconfiguration+merge.yaml"
    assert yaml.safe_load(patch.read_text())["topologyManagerPolicy"] == "single-numa-node"
    assert (out / "cpu-b/sys/devices/system/node/node3/cpu7/topology/core_id").read_text() == "7\n"
    assert yaml.safe_load((out / "cpu-b/kubelet-config.yaml").read_text())["kubeReserved"] == {
        "cpu": "500m"
    }


def test_render_one_node_and_errors(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_text(PROFILE_TEXT)
    out = tmp_path / "out"
    args = ["realnode", "render", "--profile", str(profile), "--out", str(out)]
    assert CliRunner().invoke(main, [*args, "--node", "cpu-b"]).exit_code == 0
    assert not (out / "gpu-a").exists()
    missing = CliRunner().invoke(main, [*args, "--node", "nope"])
    assert missing.exit_code == 1
    assert "--node 'nope': no such node in " in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "nodes:\n- name: x\n  shape: {numaNodes: 1, coresPerNumaNode: 1, memoryPerNumaNode: 1Gi}\n"
    )
    refused = CliRunner().invoke(
        main, ["realnode", "render", "--profile", str(bad), "--out", str(out)]
    )
    assert refused.exit_code == 1
    assert "bad.yaml: node x: kubelet: the static CPU Manager policy needs" in refused.output


def _dra_docs() -> list[dict[str, object]]:
    nodes = parse_profiles(yaml.safe_load(DRA_TEXT), source="dra.yaml")
    return dra_plugin_manifests(nodes=nodes, profiles_text=DRA_TEXT, image="img:1")


def test_dra_plugin_pods_only_for_nodes_with_dra_drivers() -> None:
    docs = _dra_docs()
    kinds = [d["kind"] for d in docs]
    assert kinds == [
        "ConfigMap",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DeviceClass",
        "DeviceClass",
        "Pod",
    ]
    pod = docs[-1]
    spec = pod["spec"]
    assert isinstance(spec, dict)
    assert spec["nodeSelector"] == {"numa-testkit.io/profile-node": "dra-a"}
    assert spec["serviceAccountName"] == "fakenrt-dra-plugin"
    (container,) = spec["containers"]
    assert container["command"] + container["args"] == [
        "fakenrt", "dra-plugin", "--profile", "/etc/numa-testkit/profiles.yaml",
        "--node", "dra-a", "--plugins-dir", "/var/lib/kubelet/plugins",
        "--registry-dir", "/var/lib/kubelet/plugins_registry", "--cdi-dir", "/var/run/cdi",
    ]  # fmt: skip
    assert container["env"][0]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"] == [  # type: ignore[index]
        "dra.cpu",
        "gpu.nvidia.com",
    ]
    nodes = parse_profiles(yaml.safe_load(PROFILE_TEXT), source="p.yaml")
    assert dra_plugin_manifests(nodes=nodes, profiles_text=PROFILE_TEXT, image="i") == []


@pytest.mark.controlplane
def test_dra_plugin_manifests_are_accepted_by_the_api_server(control_plane: ControlPlane) -> None:
    kube = admin_kube(control_plane.server, control_plane)
    collections = {
        "ConfigMap": ("api", "v1", "namespaces", "kube-system", "configmaps"),
        "ServiceAccount": ("api", "v1", "namespaces", "kube-system", "serviceaccounts"),
        "Pod": ("api", "v1", "namespaces", "kube-system", "pods"),
        "ClusterRole": ("apis", "rbac.authorization.k8s.io", "v1", "clusterroles"),
        "ClusterRoleBinding": ("apis", "rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
        "DeviceClass": ("apis", "resource.k8s.io", "v1", "deviceclasses"),
    }
    docs = _dra_docs()
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    # a Pod is admitted only when its ServiceAccount exists: that one for real
    kube.create(path(*collections["ServiceAccount"]), account)
    # cluster-scoped objects of the same names may exist on the suite's shared API server
    # (the controller's DeviceClasses): validated under a name of this test's
    suffix = uuid.uuid4().hex[:8]
    try:
        for doc in docs:
            if doc is not account:
                kind = str(doc["kind"])
                body = doc
                if "namespaces" not in collections[kind]:
                    metadata = doc["metadata"]
                    assert isinstance(metadata, dict)
                    renamed = {**metadata, "name": f"t{suffix}.{kind.lower()}"}
                    body = {**doc, "metadata": renamed}
                kube.request("POST", path(*collections[kind]), body=body, query={"dryRun": "All"})
    finally:
        kube.delete(path(*collections["ServiceAccount"], "fakenrt-dra-plugin"))


def test_render_writes_the_dra_plugins(tmp_path: Path) -> None:
    profile = tmp_path / "dra.yaml"
    profile.write_text(DRA_TEXT)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["realnode", "render", "--profile", str(profile), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.split()[-1] == str(out / "dra-plugins.yaml")
    written = list(yaml.safe_load_all((out / "dra-plugins.yaml").read_text()))
    assert [d["kind"] for d in written][-1] == "Pod"
