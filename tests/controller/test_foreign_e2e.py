"""Issue 11, item 1a, on the real control plane with the real exporter: a profile's
foreign `allocated` becomes a pod bound to the node, holding exactly those resources,
reported by the fake podresources socket and annotated by the exporter like any other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from fakenrt.controller.endpoints import socket_path, sysfs_root
from fakenrt.kubelet.foreign import FOREIGN_NAMESPACE
from fakenrt.nrt.loaded import foreign_pods
from fakenrt.podspec import pod_from_manifest
from tests.controller.conftest import make_profiles, unique
from tests.controller.harness import get_pod, running, wait_for
from tests.controller.test_exporter_e2e import REPO, _free_port, expected_annotations
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.helpers import ensure_namespace

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]


def test_foreign_allocated_is_a_pod_the_exporter_annotates(
    kube: KubeClient, control_plane: ControlPlane, api_client: client.ApiClient, tmp_path: Path
) -> None:
    ensure_namespace(api_client, FOREIGN_NAMESPACE)  # its default ServiceAccount
    name = unique("fgn")
    (profile,) = make_profiles(
        {
            "name": name,
            "kubelet": {"topologyManagerPolicy": "restricted"},
            "zones": [
                {
                    "id": 0,
                    "cpus": "0-3",
                    "memory": "8Gi",
                    "devices": {"nvidia.com/gpu": 2},
                    "allocated": {"cpu": 2, "memory": "2Gi", "nvidia.com/gpu": 1},
                },
                {"id": 1, "cpus": "4-7", "memory": "8Gi", "devices": {"nvidia.com/gpu": 2}},
            ],
        }
    )
    state = tmp_path / "s"
    with running(kube, [profile], state_dir=state) as ctl:
        assert ctl.fleet is not None
        ((spec, allocation),) = foreign_pods(ctl.fleet.nodes[name].state)

        def foreign() -> dict[str, object] | None:
            p = get_pod(kube, FOREIGN_NAMESPACE, spec.name)
            return p if (p.get("status") or {}).get("phase") == "Running" else None

        manifest = wait_for(foreign, what="the foreign pod Running")
        seen = pod_from_manifest(manifest)
        assert seen.node_name == name
        assert seen.containers == spec.containers  # exactly the zone's amounts
        placement, memory = expected_annotations(profile, allocation)
        assert placement != "[]"
        exporter = subprocess.Popen(
            [
                sys.executable, "-c", "from exporter.cli import main; main()", "run",
                "--node-name", name,
                "--podresources-socket", str(socket_path(state, name)),
                "--sysfs-root", str(sysfs_root(state, name)),
                "--kubeconfig", str(control_plane.kubeconfig),
                "--metrics-bind-address", f"127.0.0.1:{_free_port()}",
                "--poll-interval", "0.2",
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            observed = wait_for(
                lambda: (
                    get_pod(kube, FOREIGN_NAMESPACE, spec.name)["metadata"].get("annotations") or {}
                ).get(OBSERVED_PLACEMENT),
                timeout=60,
                what="the foreign pod observed",
            )
            annotations = get_pod(kube, FOREIGN_NAMESPACE, spec.name)["metadata"]["annotations"]
        finally:
            exporter.terminate()
            _, stderr = exporter.communicate(timeout=30)
        assert observed == placement, stderr[-2000:]
        assert annotations[OBSERVED_MEMORY_GROUPS] == memory
