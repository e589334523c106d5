"""``fakenrt dra-plugin`` as a process against the real API server: it writes the CDI
spec, publishes the node's ResourceSlices (named after the Kubernetes node), is
registered by a (test-side) kubelet, prepares a claim it reads from the API server, and
cleans up on SIGTERM; bad input is a one-line error and a non-zero exit."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from exporter.kubeclient import MERGE_PATCH, KubeClient, path
from fakenrt.cli import main
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane
from tests.draplugin.kubelet import FakePluginWatcher

WAIT = 20.0
PROFILE = """\
nodes:
- name: dra-node
  shape:
    numaNodes: 2
    coresPerNumaNode: 2
    memoryPerNumaNode: 4Gi
    draDevicesPerNumaNode: {gpu.nvidia.com: 1}
- name: plain
  shape: {numaNodes: 1, coresPerNumaNode: 2, memoryPerNumaNode: 4Gi}
"""


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="drac-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _node(kube: KubeClient, name: str) -> None:
    kube.create(
        path("api", "v1", "nodes"),
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}},
    )


def _wait(probe: object, what: str) -> object:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        got = probe()  # type: ignore[operator]
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.controlplane
def test_serves_publishes_and_prepares_until_sigterm(
    control_plane: ControlPlane, namespace: str, root: Path
) -> None:
    kube = admin_kube(control_plane.server, control_plane)
    node = f"kind-worker-{uuid.uuid4().hex[:6]}"
    _node(kube, node)
    profile = root / "p.yaml"
    profile.write_text(PROFILE)
    plugins, registry, cdi = root / "plugins", root / "registry", root / "cdi"
    watcher = FakePluginWatcher(registry)
    fakenrt = Path(sys.executable).parent / "fakenrt"
    proc = subprocess.Popen(
        [
            str(fakenrt), "dra-plugin", "--profile", str(profile), "--node", "dra-node",
            "--node-name", node, "--kubeconfig", str(control_plane.kubeconfig),
            "--plugins-dir", str(plugins), "--registry-dir", str(registry), "--cdi-dir", str(cdi),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        _wait(lambda: "gpu.nvidia.com" in watcher.plugins, "registration")
        spec = json.loads((cdi / "k8s.gpu.nvidia.com-device.json").read_text())
        assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
        slices, _ = kube.list_all(
            path("apis", "resource.k8s.io", "v1", "resourceslices"),
            fieldSelector=f"spec.nodeName={node}",
        )
        (published,) = slices
        assert published["spec"]["pool"]["name"] == node  # the profile's pool follows the node
        assert published["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "fakenrt-dra-plugin"
        }
        assert published["metadata"]["ownerReferences"][0]["name"] == node

        claims = path("apis", "resource.k8s.io", "v1", "namespaces", namespace, "resourceclaims")
        claim = kube.create(
            claims,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c"},
                "spec": {
                    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "x"}}]}
                },
            },
        )
        result = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": "gpu-1"}
        kube.patch(
            f"{claims}/c/status",
            {"status": {"allocation": {"devices": {"results": [result]}}}},
            content_type=MERGE_PATCH,
        )
        response = watcher.prepare("gpu.nvidia.com", (namespace, claim["metadata"]["uid"], "c"))
        (device,) = response.claims[claim["metadata"]["uid"]].devices
        assert (device.pool_name, device.device_name) == (node, "gpu-1")

        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
        assert f"published 1 ResourceSlice(s) of node {node}" in err
        assert "serving gpu.nvidia.com (2 devices)" in err
        assert not list(cdi.glob("*.json"))
        assert not list(registry.glob("*.sock")) and not list(plugins.rglob("*.sock"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watcher.stop()
        kube.delete(path("api", "v1", "nodes", node))


def _kubeconfig(root: Path) -> Path:
    kubeconfig = root / "kc"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return kubeconfig


def test_without_a_kubelet_it_gives_up_with_one_line(root: Path) -> None:
    profile = root / "p.yaml"
    profile.write_text(PROFILE)
    result = CliRunner().invoke(
        main,
        [
            "dra-plugin", "--profile", str(profile), "--node", "dra-node", "--no-publish",
            "--register-timeout", "0.3", "--plugins-dir", str(root / "pl"),
            "--registry-dir", str(root / "reg"), "--cdi-dir", str(root / "cdi"),
            "--kubeconfig", str(_kubeconfig(root)),
        ],
    )  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: gpu.nvidia.com: not registered within 0.3s (")
    assert line.endswith("): no kubelet registered it")
    assert not list((root / "cdi").glob("*.json"))  # cleaned up


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--node", "plain"], "node plain has no DRA drivers", id="no-dra"),
        pytest.param(
            ["--node", "dra-node", "--driver", "gpu.amd.com"],
            "node dra-node has no DRA driver 'gpu.amd.com' (it has: gpu.nvidia.com)",
            id="no-such-driver",
        ),
        pytest.param([], "has 2 nodes (dra-node, plain): pick one with --node", id="which-node"),
    ],
)
def test_bad_input_is_one_clear_error(root: Path, args: list[str], message: str) -> None:
    profile = root / "p.yaml"
    profile.write_text(PROFILE)
    kubeconfig = _kubeconfig(root)
    result = CliRunner().invoke(
        main,
        ["dra-plugin", "--profile", str(profile), "--kubeconfig", str(kubeconfig), *args],
    )
    assert result.exit_code == 1
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
