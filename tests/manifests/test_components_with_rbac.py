"""The harness's three components, run as processes with tokens of their own
ServiceAccounts (manifests/harness RBAC applied to the real API server), do their whole
job: the controller registers a fake node, the scheduler binds a pod there, the
controller runs it, the exporter annotates it, and the controller finishes its
deletion - with no request refused."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
import yaml
from kubernetes import client

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT
from exporter.kubeclient import KubeClient
from exporter.kubesettings import ClusterConfig
from fakenrt.controller.registration import remove_nodes
from tests.controlplane.cluster import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]

NS = "numa-harness"
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _token_kubeconfig(cp: ControlPlane, api: client.ApiClient, account: str, path: Path) -> Path:
    """A kubeconfig authenticating as ServiceAccount numa-harness/``account``."""
    response = client.CoreV1Api(api).create_namespaced_service_account_token(
        account,
        NS,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        ),
    )
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": cp.server, "certificate-authority": str(cp.ca_file)},
                    }
                ],
                "users": [{"name": account, "user": {"token": response.status.token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
                "current-context": "c",
            }
        )
    )
    return path


class Processes:
    """Component processes with their stderr in files; all terminated at the end."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self._procs: list[tuple[str, subprocess.Popen[bytes], TextIO]] = []

    def start(self, name: str, module: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from {module} import main; main()", *args],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._procs.append((name, proc, log))

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def check_alive(self) -> None:
        for name, proc, _ in self._procs:
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}:\n{self.log(name)}")

    def stop(self) -> None:
        for _, proc, _ in self._procs:
            proc.terminate()
        for _, proc, log in self._procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            log.close()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    yield procs
    procs.stop()


@pytest.fixture
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hr-", dir="/tmp"))  # unix socket paths are short
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _wait(probe: Callable[[], Any], procs: Processes, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check_alive()
        try:
            value = probe()
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _pod(
    name: str, limits: dict[str, str], *, scheduler_name: str = "", node_name: str = ""
) -> dict[str, Any]:
    """A Guaranteed one-container pod tolerating the fake nodes' taint, for
    ``scheduler_name`` or bound to ``node_name`` already."""
    spec: dict[str, Any] = {
        "tolerations": [{"key": "fakenrt.io/fake-node", "operator": "Exists"}],
        "containers": [{"name": "main", "image": "busybox", "resources": {"limits": limits}}],
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_components_do_their_job_with_their_own_accounts(
    *,
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    harness_identities: list[str],
    namespace: str,
    state_dir: Path,
    processes: Processes,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(api_client)
    label = uuid.uuid4().hex[:8]
    controller_name, node, scheduler_name = f"harness-{label}", f"hr-{label}", f"numa-{label}"
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "nodes": [
                    {
                        "name": node,
                        "kubelet": {"topologyManagerPolicy": "restricted"},
                        "shape": {
                            "numaNodes": 2,
                            "coresPerNumaNode": 4,
                            "threadsPerCore": 1,
                            "memoryPerNumaNode": "8Gi",
                            "devicesPerNumaNode": {"nvidia.com/gpu": 2},
                            "draDevicesPerNumaNode": {"gpu.nvidia.com": 1},
                        },
                    }
                ]
            }
        )
    )
    kubeconfigs = {
        account: _token_kubeconfig(control_plane, api_client, account, tmp_path / f"{account}.kc")
        for account in harness_identities
    }
    processes.start(
        "controller", "fakenrt.cli", "controller",
        "--kubeconfig", str(kubeconfigs["fakenrt-controller"]),
        "--profile", str(profile), "--state-dir", str(state_dir),
        "--controller-name", controller_name, "--lease-renew-interval", "1",
    )  # fmt: skip
    admin = KubeClient(
        ClusterConfig(
            server=control_plane.server,
            ca_file=control_plane.ca_file,
            token=control_plane.admin_token,
        )
    )
    try:
        _wait((state_dir / node / "kubelet.sock").exists, processes, "the node socket")
        processes.start(
            "exporter", "exporter.cli", "run",
            "--kubeconfig", str(kubeconfigs["fakenrt-exporter"]),
            "--node-name", node,
            "--podresources-socket", str(state_dir / node / "kubelet.sock"),
            "--sysfs-root", str(state_dir / node / "sys"),
            "--metrics-bind-address", f"127.0.0.1:{_free_port()}",
            "--poll-interval", "0.2",
        )  # fmt: skip
        processes.start(
            "scheduler", "fakenrt.cli", "scheduler", "run",
            "--kubeconfig", str(kubeconfigs["fakenrt-scheduler"]),
            "--scheduler-name", scheduler_name,
            "--node-selector", f"fakenrt.io/controller={controller_name}",
            "--period", "0.2", "--verbose",
        )  # fmt: skip
        limits = {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}
        core.create_namespaced_pod(namespace, _pod("train", limits, scheduler_name=scheduler_name))

        def annotated_and_running() -> Any:
            pod = core.read_namespaced_pod("train", namespace)
            annotations = pod.metadata.annotations or {}
            done = pod.status.phase == "Running" and OBSERVED_PLACEMENT in annotations
            return pod if done else None

        pod = _wait(annotated_and_running, processes, "train bound, Running and observed")
        assert pod.spec.node_name == node
        annotations = pod.metadata.annotations
        assert PREDICTED_PLACEMENT in annotations  # the scheduler's patch
        assert '"nvidia.com/gpu":"1"' in annotations[OBSERVED_PLACEMENT]  # the exporter's
        lease = client.CoordinationV1Api(api_client).read_namespaced_lease(node, "kube-node-lease")
        assert lease.spec.holder_identity == node
        nrt = client.CustomObjectsApi(api_client).get_cluster_custom_object(
            "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", node
        )
        assert nrt["metadata"]["labels"]["fakenrt.io/controller"] == controller_name
        # the node's DRA driver published its pool (RBAC: resourceslices, deviceclasses)
        slices = client.ResourceV1Api(api_client).list_resource_slice(
            field_selector=f"spec.nodeName={node}"
        )
        assert [s.spec.driver for s in slices.items] == ["gpu.nvidia.com"]
        assert slices.items[0].metadata.labels["fakenrt.io/controller"] == controller_name
        # Events: the scheduler's for a pod that fits nowhere, the controller's (as the
        # kubelet's) for a pod bound past the node's capacity, which it rejects.
        huge = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "5"}
        core.create_namespaced_pod(namespace, _pod("huge", huge, scheduler_name=scheduler_name))
        too_big = {"cpu": "16", "memory": "1Gi"}
        core.create_namespaced_pod(namespace, _pod("too-big", too_big, node_name=node))

        def reasons() -> Any:
            items = core.list_namespaced_event(namespace).items
            found = {(e.involved_object.name, e.type, e.reason) for e in items}
            return found if {name for name, _, _ in found} >= {"huge", "too-big"} else None

        found = _wait(reasons, processes, "events for huge and too-big")
        assert ("huge", "Warning", "FailedScheduling") in found
        assert core.read_namespaced_pod("too-big", namespace).status.phase == "Failed"
        assert [r for name, kind, r in found if name == "too-big" and kind == "Warning"]

        # A graceful delete: the controller (as the kubelet) finishes it with grace 0.
        core.delete_namespaced_pod("train", namespace)

        def gone() -> bool:
            try:
                core.read_namespaced_pod("train", namespace)
            except client.ApiException as exc:
                if exc.status == 404:
                    return True
                raise
            return False

        _wait(gone, processes, "train deleted by the controller")
        processes.check_alive()
    finally:
        processes.stop()
        remove_nodes(admin, controller=controller_name)
        admin.close()
    for name in ("controller", "exporter", "scheduler"):
        log = processes.log(name)
        assert "Forbidden" not in log and "forbidden" not in log, f"{name}:\n{log[-3000:]}"
