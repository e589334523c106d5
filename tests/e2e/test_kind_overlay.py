"""The per-scenario overlay of the Kind backend, rendered with kubectl (no cluster): the
scenario's nodes, controller flags, exporters and scheduler mode on top of
manifests/overlays/kind-harness, with the image kind/up.sh loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from schedulers.adapter import Adapter
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.e2e.deployment import Topology
from tests.e2e.kind_deployment import CONTROLLER, SCHEDULER, write_overlay
from tests.e2e.schedulers import from_options
from tests.e2e.topologies import two_zone_node
from tests.manifests.tools import Kubectl, kubectl_path

IMAGE = "numa-testkit/numa-testkit:local"
CUSTOM = from_options(name="mine", command="my-scheduler --kubeconfig {kubeconfig}", reason=".")


def _render(tmp_path: Path, topology: Topology, scheduler: Adapter) -> list[Any]:
    overlay = write_overlay(
        tmp_path / "o",
        topology=topology,
        controller_name="e2e-ctl",
        scheduler=scheduler,
        image=IMAGE,
    )
    return Kubectl(kubectl_path(), tmp_path / "unused").render(overlay)


def _deployments(objects: list[Any]) -> dict[str, Any]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}


def _args(deployment: Any) -> list[str]:
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def _data(objects: list[Any], prefix: str) -> dict[str, str]:
    (cm,) = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith(prefix)
    ]
    return dict(cm["data"])


@pytest.mark.parametrize(
    ("mode", "args"),
    [
        pytest.param(RECONSTRUCTION, {}, id="reconstruction"),
        pytest.param(STALE_NRT, {"reconstructAvailable": False}, id="stale-nrt"),
    ],
)
def test_the_overlay_deploys_the_scenario_and_the_reference_mode(
    tmp_path: Path, mode: Adapter, args: dict[str, Any]
) -> None:
    nodes = tuple(two_zone_node(policy="single-numa-node", gpus=2) for _ in range(2))
    topology = Topology(nodes=nodes, controller_args=("--seed", "7", "--nrt-delay", "2s"))
    objects = _render(tmp_path, topology, mode)
    deployments = _deployments(objects)
    names = [n["name"] for n in nodes]
    # one production exporter per scenario node, none of the base's
    assert sorted(deployments) == sorted(
        [CONTROLLER, SCHEDULER, *(f"numa-exporter-{n}" for n in names)]
    )
    for d in deployments.values():
        (container,) = d["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == (IMAGE, "Never")
    for n in names:
        env = deployments[f"numa-exporter-{n}"]["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "NODE_NAME", "value": n} in env
    assert yaml.safe_load(_data(objects, "fakenrt-profile")["profile.yaml"]) == {
        "nodes": [dict(n) for n in nodes]
    }
    controller = _args(deployments[CONTROLLER])
    assert controller[-6:] == [
        "--controller-name=e2e-ctl", "--workers=4", "--seed", "7", "--nrt-delay", "2s"
    ]  # fmt: skip
    assert (yaml.safe_load(_data(objects, "fakenrt-scheduler")["args.yaml"]) or {}) == args
    assert _args(deployments[SCHEDULER])[-3:] == [
        f"--scheduler-name={mode.scheduler_name}-e2e-ctl",
        "--node-selector=fakenrt.io/controller=e2e-ctl",
        "--period=0.5",
    ]


def test_another_scheduler_replaces_the_reference_one(tmp_path: Path) -> None:
    assert CUSTOM is not None and CUSTOM.in_cluster_args is None
    nodes = (two_zone_node(policy="restricted"),)
    deployments = _deployments(_render(tmp_path, Topology(nodes=nodes), CUSTOM))
    assert SCHEDULER not in deployments
    assert CONTROLLER in deployments


def test_another_project_image_tag_is_the_one_the_pods_run(tmp_path: Path) -> None:
    """$NUMA_TESTKIT_IMAGE with a tag other than kind-harness's ``local``."""
    mine = "numa-testkit/numa-testkit:mine"
    overlay = write_overlay(
        tmp_path / "o",
        topology=Topology(nodes=(two_zone_node(policy="restricted"),)),
        controller_name="e2e-ctl",
        scheduler=RECONSTRUCTION,
        image=mine,
    )
    objects = Kubectl(kubectl_path(), tmp_path / "unused").render(overlay)
    images = {
        c["image"]
        for d in _deployments(objects).values()
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images == {mine}


def test_without_exporters_no_exporter_is_deployed(tmp_path: Path) -> None:
    nodes = (two_zone_node(policy="restricted"),)
    topology = Topology(nodes=nodes, exporters=False)
    deployments = _deployments(_render(tmp_path, topology, RECONSTRUCTION))
    assert sorted(deployments) == sorted([CONTROLLER, SCHEDULER])
