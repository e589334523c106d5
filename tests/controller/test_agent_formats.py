"""The other agents' formats on the real API server: Volcano's Numatopology (its CRD from
the Volcano source) and koordlet's NRT v1alpha1, published from the same simulated
kubelet state and lag as the NRT v1alpha2, opted into per node or per controller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from exporter.cpulist import format_cpulist, parse_cpulist
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL
from fakenrt.controller.pods import ALLOCATION_ANNOTATION
from fakenrt.controller.registration import remove_nodes
from fakenrt.controller.writers import NUMATOPOLOGY, nrt_path
from fakenrt.nrt import koordlet
from fakenrt.nrt.volcano import render_numatopology
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile, unique
from tests.controller.harness import (
    available,
    create_pod,
    get_nrt,
    get_pod,
    phase_of,
    running,
    wait_for,
)
from tests.controller.podmanifests import pod

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd", "volcano_crd")]


def _numatopology(kube: KubeClient, node: str) -> dict[str, Any]:
    return kube.get(NUMATOPOLOGY.path(node))


def _koordlet_nrt(kube: KubeClient, node: str) -> dict[str, Any]:
    return kube.get(nrt_path(node).replace("/v1alpha2/", "/v1alpha1/"))


def _held_cpus(kube: KubeClient, namespace: str, name: str) -> set[int]:
    """The CPUs the simulated kubelet gave the pod (its recorded allocation)."""
    recorded = json.loads(
        get_pod(kube, namespace, name)["metadata"]["annotations"][ALLOCATION_ANNOTATION]
    )
    return {c for container in recorded["containers"] for c in parse_cpulist(container["cpus"])}


def _node(nrt: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    raw = two_numa_profile(unique("agents"), **kwargs)
    if nrt is not None:
        raw["nrt"] = nrt
    return raw


@pytest.mark.parametrize(
    ("setting", "profile_nrt", "published"),
    [
        pytest.param(False, None, False, id="default-off"),
        pytest.param(True, None, True, id="controller-setting"),
        pytest.param(False, {"volcano": True}, True, id="profile-on"),
        pytest.param(True, {"volcano": False}, False, id="profile-off"),
    ],
)
def test_volcano_numatopology_is_opted_into(
    kube: KubeClient, setting: bool, profile_nrt: dict[str, Any] | None, published: bool
) -> None:
    (profile,) = make_profiles(_node(profile_nrt))
    with running(kube, [profile], nrt_volcano=setting):
        wait_for(lambda: get_nrt(kube, profile.name), what="NRT published")
        if published:
            body = wait_for(lambda: _numatopology(kube, profile.name), what="Numatopology")
            # The API server kept every field (nothing pruned by Volcano's schema).
            assert body["spec"] == render_numatopology(profile, [])["spec"]
        else:
            with pytest.raises(NotFound):
                _numatopology(kube, profile.name)


def test_numatopology_follows_the_pods_owned_by_the_node(kube: KubeClient, namespace: str) -> None:
    (profile,) = make_profiles(_node({"volcano": True}))
    node = profile.name
    controller = unique("ctl")
    with running(kube, [profile], controller=controller):
        first = wait_for(lambda: _numatopology(kube, node), what="Numatopology")
        meta = first["metadata"]
        assert meta["labels"][CONTROLLER_LABEL] == controller
        node_uid = kube.get(path("api", "v1", "nodes", node))["metadata"]["uid"]
        assert [(o["kind"], o["uid"]) for o in meta["ownerReferences"]] == [("Node", node_uid)]
        create_pod(kube, pod("two", node, namespace=namespace, cpu="2"))
        create_pod(kube, pod("shared", node, namespace=namespace, cpu="500m", guaranteed=False))
        wait_for(phase_of(kube, namespace, "two", "Running"), what="two Running")
        held = _held_cpus(kube, namespace, "two")
        free = format_cpulist(set(range(8)) - held)

        def shows_the_pod() -> dict[str, Any] | None:
            spec = _numatopology(kube, node)["spec"]
            return spec if spec.get("podAllocations") else None

        spec = wait_for(shows_the_pod, what="the pod in the Numatopology")
        cpus = spec["podAllocations"][0]["containerAllocations"][0]["allocations"]["cpu"]
        assert spec["podAllocations"] == [
            {
                "name": "two",
                "namespace": namespace,
                "containerAllocations": [{"name": "main", "allocations": {"cpu": cpus}}],
            }
        ]
        assert parse_cpulist(cpus) == held
        assert spec["numares"]["cpu"]["allocatable"] == free
    assert remove_nodes(kube, controller=controller) == [node]
    with pytest.raises(NotFound):
        _numatopology(kube, node)


def test_numatopology_lags_with_the_nrt(kube: KubeClient, namespace: str) -> None:
    """One state, one lag: both objects show an admission only once its moment came."""
    clock = ManualClock()
    (profile,) = make_profiles(_node({"volcano": True}))
    node = profile.name
    with running(kube, [profile], clock=clock, nrt_delay=30.0, nrt_jitter=5.0, seed=1) as ctl:
        wait_for(lambda: _numatopology(kube, node), what="Numatopology")
        create_pod(kube, pod("p", node, namespace=namespace, cpu="3"))
        wait_for(phase_of(kube, namespace, "p", "Running"), what="Running")
        assert ctl.executor is not None and ctl.executor.wait_idle(10)
        clock.advance(29.9)
        turns = ctl.turns
        ctl.wake()
        wait_for(lambda: ctl.turns >= turns + 2, what="loop turns")
        assert ctl.executor.wait_idle(10)
        assert "podAllocations" not in _numatopology(kube, node)["spec"]
        assert sum(z["cpu"] for z in available(get_nrt(kube, node)).values()) == 8
        clock.advance(5.2)
        ctl.wake()
        wait_for(lambda: "podAllocations" in _numatopology(kube, node)["spec"], what="lagged")
        wait_for(
            lambda: sum(z["cpu"] for z in available(get_nrt(kube, node)).values()) == 5,
            what="lagged NRT",
        )


def test_koordlet_nrt_is_written_through_v1alpha1(kube: KubeClient, namespace: str) -> None:
    raw = _node({"koordlet": True})
    raw["kubelet"]["topologyManagerScope"] = "pod"
    (profile,) = make_profiles(raw)
    node = profile.name
    with running(kube, [profile]):
        nrt = wait_for(lambda: _koordlet_nrt(kube, node), what="koordlet's NRT")
        assert nrt["apiVersion"] == koordlet.API_VERSION
        assert nrt["topologyPolicies"] == ["SingleNUMANodePodLevel"]
        expected = koordlet.render_koordlet_nrt(profile, [], {})
        assert nrt["zones"] == expected["zones"]
        annotations = nrt["metadata"]["annotations"]
        assert {k: annotations[k] for k in expected["metadata"]["annotations"]} == expected[
            "metadata"
        ]["annotations"]
        assert nrt["metadata"]["labels"][koordlet.MANAGED_BY_LABEL] == koordlet.MANAGED_BY
        # The same object, served as v1alpha2 too (one CRD), without v1alpha2's attributes.
        assert "attributes" not in get_nrt(kube, node)
        created = create_pod(kube, pod("kubelet-cpus", node, namespace=namespace, cpu="2"))
        labelled = pod("koordinator-ls", node, namespace=namespace, cpu="1")
        labelled["metadata"]["labels"] = {koordlet.QOS_LABEL: "LS"}
        kube.create(
            path("api", "v1", "namespaces", namespace, "pods"),
            {k: v for k, v in labelled.items() if k != "status"}
            | {"metadata": {k: labelled["metadata"][k] for k in ("name", "namespace", "labels")}},
        )
        wait_for(phase_of(kube, namespace, "koordinator-ls", "Running"), what="LS Running")
        wait_for(phase_of(kube, namespace, "kubelet-cpus", "Running"), what="Running")
        held = _held_cpus(kube, namespace, "kubelet-cpus")

        def allocs() -> list[dict[str, Any]] | None:
            value = _koordlet_nrt(kube, node)["metadata"]["annotations"][koordlet.POD_CPU_ALLOCS]
            return json.loads(value) or None

        (entry,) = wait_for(allocs, what="pod-cpu-allocs")
        assert entry == {
            "namespace": namespace,
            "name": "kubelet-cpus",
            "uid": created["metadata"]["uid"],
            "cpuset": format_cpulist(held),
            "managedByKubelet": True,
        }
        kube.delete(path("api", "v1", "namespaces", namespace, "pods", "kubelet-cpus"))
        wait_for(lambda: allocs() is None, what="pod-cpu-allocs emptied")
