"""The Kind overlays: the locally built image at the project's version, never pulled;
the production exporter kept off fake nodes and without the operator's objects."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt import __version__
from tests.manifests.tools import MANIFESTS, Kubectl

pytestmark = pytest.mark.controlplane  # the kubectl fixture is bound to the control plane


def _containers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        c
        for o in objects
        if o["kind"] in {"Deployment", "DaemonSet"}
        for c in o["spec"]["template"]["spec"]["containers"]
    ]


@pytest.mark.parametrize("base", ["exporter", "harness"])
def test_bases_use_the_published_image_at_the_version(kubectl: Kubectl, base: str) -> None:
    containers = _containers(kubectl.render(MANIFESTS / base))
    assert containers
    for c in containers:
        assert c["image"] == f"ghcr.io/numa-testkit/numa-testkit:{__version__}", c["name"]


@pytest.mark.parametrize("overlay", ["kind-exporter", "kind-harness"])
def test_kind_overlays_use_the_local_image_never_pulled(kubectl: Kubectl, overlay: str) -> None:
    containers = _containers(kubectl.render(MANIFESTS / "overlays" / overlay))
    assert containers
    for c in containers:
        assert c["image"] == "numa-testkit/numa-testkit:local", c["name"]
        assert c["imagePullPolicy"] == "Never", c["name"]


def test_kind_exporter_stays_off_fake_nodes_and_needs_no_operator(kubectl: Kubectl) -> None:
    objects = kubectl.render(MANIFESTS / "overlays" / "kind-exporter")
    kinds = {o["kind"] for o in objects}
    assert not kinds & {"PodMonitor", "PrometheusRule"}
    base_kinds = {o["kind"] for o in kubectl.render(MANIFESTS / "exporter")}
    assert base_kinds - kinds == {"PodMonitor", "PrometheusRule"}
    (ds,) = [o for o in objects if o["kind"] == "DaemonSet"]
    affinity = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "fakenrt.io/fake-node", "operator": "DoesNotExist"}]}
    ]
