"""What the real-kubelet backend deploys, rendered with kubectl (no cluster): the
reference scheduler alone, in the scenario's mode, on the control-plane node; the
production exporter DaemonSet with the local image and no cpu request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakenrt.profiles import parse_profiles
from schedulers.adapter import Adapter
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.e2e.realnode_deployment import (
    CONTROL_PLANE_ROLE,
    EXPORTER_OVERLAY,
    _local_image,
    _no_cpu_requests,
    _rendered,
    nrt_publisher,
    reference_scheduler,
)
from tests.e2e.realnode_profiles import for_real_kubelet
from tests.e2e.topologies import two_zone_node
from tests.kind.cluster import KindCluster
from tests.manifests.tools import kubectl_path

IMAGE = "numa-testkit/numa-testkit:e2e"


def _cluster(tmp_path: Path) -> KindCluster:
    return KindCluster(name="unused", kubeconfig=tmp_path / "unused", kubectl=kubectl_path())


def _workloads(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] in ("Deployment", "DaemonSet")}


@pytest.mark.parametrize("mode", [RECONSTRUCTION, STALE_NRT], ids=lambda s: s.id)
def test_reference_scheduler_alone_on_the_control_plane(tmp_path: Path, mode: Adapter) -> None:
    docs = reference_scheduler(
        _cluster(tmp_path),
        scheduler=mode,
        controller_name="e2e-ctl",
        image=IMAGE,
        directory=tmp_path / "s",
    )
    (name,) = _workloads(docs)  # no fake-node controller, no harness exporters
    spec = _workloads(docs)[name]["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {CONTROL_PLANE_ROLE: ""}
    container = spec["containers"][0]
    assert container["image"] == IMAGE and container["imagePullPolicy"] == "Never"
    assert container["args"][-3:] == [
        f"--scheduler-name={mode.scheduler_name}-e2e-ctl",
        "--node-selector=fakenrt.io/controller=e2e-ctl",
        "--period=0.5",
    ]
    (args,) = [
        d["data"]["args.yaml"]
        for d in docs
        if d["kind"] == "ConfigMap" and "args.yaml" in (d.get("data") or {})
    ]
    assert args == mode.in_cluster_args


def test_exporter_daemonset_requests_no_cpu(tmp_path: Path) -> None:
    docs = _no_cpu_requests(_local_image(_rendered(_cluster(tmp_path), EXPORTER_OVERLAY), "x:1"))
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "x:1" and container["imagePullPolicy"] == "Never"
    assert "cpu" not in container["resources"]["requests"]
    assert container["resources"]["requests"]["memory"]


def test_nrt_publisher_on_the_scenario_nodes_with_their_lag(tmp_path: Path) -> None:
    lag = {"delay": "2s", "jitter": "6s"}
    raw = [
        for_real_kubelet(two_zone_node(policy="single-numa-node", nrt=lag), name=f"w{i}")
        for i in range(2)
    ]
    profiles = parse_profiles({"nodes": raw}, source="test")
    docs = nrt_publisher(
        _cluster(tmp_path), profiles=profiles, controller_name="e2e-ctl", image=IMAGE
    )
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    spec = daemonset["spec"]["template"]["spec"]
    assert spec["nodeSelector"]["fakenrt.io/controller"] == "e2e-ctl"
    container = spec["containers"][0]
    assert container["image"] == IMAGE and container["imagePullPolicy"] == "Never"
    # The commands take the last value of a repeated option.
    assert container["args"][-4:] == [
        "--delay=2s",
        "--jitter=6s",
        "--seed=7",
        "--poll-interval=0.5s",
    ]
    assert "cpu" not in container["resources"]["requests"]


def test_nrt_publisher_refuses_nodes_of_different_lags(tmp_path: Path) -> None:
    raw = [
        for_real_kubelet(two_zone_node(policy="single-numa-node", nrt=nrt), name=f"w{i}")
        for i, nrt in enumerate(({"delay": "1s"}, None))
    ]
    profiles = parse_profiles({"nodes": raw}, source="test")
    with pytest.raises(AssertionError, match="lags differ"):
        nrt_publisher(_cluster(tmp_path), profiles=profiles, controller_name="c", image=IMAGE)
