"""The real exporter, unchanged, on a fake DRA node: the GPU a claim got shows in the
observed placement on its NUMA node (from the ResourceSlices the controller published),
and the pod the simulated kubelet ran misaligned is named by the exporter's metric, log
line and Event."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.annotations import OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from fakenrt.controller.endpoints import socket_path, sysfs_root
from tests.controller.conftest import unique
from tests.controller.harness import create_pod, get_pod, phase_of, running, wait_for
from tests.controller.test_dra import (
    GPU,
    allocate,
    bind,
    claiming_pod,
    create_claim,
    dra_profile,
    events_of,
)
from tests.controller.test_exporter_e2e import REPO, _free_port
from tests.controlplane.cluster import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]


def misaligned_series(port: int) -> dict[tuple[str, str], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {
        (s.labels["namespace"], s.labels["pod"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "numa_exporter_dra_pod_misaligned"
        for s in family.samples
    }


def test_the_exporter_places_a_dra_gpu_and_names_the_misaligned_pod(
    kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    node = unique("dra")
    state = tmp_path / "s"
    with running(kube, [dra_profile(node)], state_dir=state):
        create_claim(kube, namespace, "train-gpu")
        pod = create_pod(
            kube,
            {
                **claiming_pod("train", "train-gpu", node=None),
                "metadata": {"name": "train", "namespace": namespace},
            },
        )
        allocate(kube, namespace, "train-gpu", node, devices=["gpu-2"], pod=pod)  # NUMA node 1
        bind(kube, namespace, "train", node)
        wait_for(phase_of(kube, namespace, "train", "Running"), what="train Running")

        port = _free_port()
        exporter = subprocess.Popen(
            [
                sys.executable, "-c", "from exporter.cli import main; main()", "run",
                "--node-name", node,
                "--podresources-socket", str(socket_path(state, node)),
                "--sysfs-root", str(sysfs_root(state, node)),
                "--kubeconfig", str(control_plane.kubeconfig),
                "--metrics-bind-address", f"127.0.0.1:{port}",
                "--poll-interval", "0.2",
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            observed = wait_for(
                lambda: (
                    get_pod(kube, namespace, "train")["metadata"].get("annotations") or {}
                ).get(OBSERVED_PLACEMENT),
                timeout=60,
                what="observed placement",
            )
            series = wait_for(lambda: misaligned_series(port), timeout=30, what="the metric")
            (event,) = wait_for(
                lambda: [
                    e for e in events_of(kube, namespace, "train") if e["reason"] == "DRAMisaligned"
                ],
                timeout=30,
                what="the DRAMisaligned event",
            )
        finally:
            exporter.terminate()
            _, stderr = exporter.communicate(timeout=30)
        # reserved CPU 0; the kubelet's 2 exclusive CPUs come from NUMA node 0 (1-3), the
        # claim's GPU is on NUMA node 1: no Topology Manager alignment for DRA
        assert observed == (
            '[{"zone":"node-0","amount":{"cpu":"2","memory":"1073741824"}},'
            f'{{"zone":"node-1","amount":{{"{GPU}":"1"}}}}]'
        ), stderr[-2000:]
        assert series == {(namespace, "train"): 1.0}
        assert f"pod {namespace}/train runs misaligned" in stderr
        assert event["type"] == "Warning" and event["source"]["host"] == node
        assert event["message"].startswith(f"pod {namespace}/train runs misaligned: container main")
