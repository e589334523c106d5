"""The controller end to end against the real API server: R1 nodes and NRT, R2 admission
and lifecycle, R3 lag (driven by an injected clock), restart recovery, ownership."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from exporter.podresources_client import PodResourcesClient
from exporter.resources import PodResources
from fakenrt.controller.endpoints import socket_path
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL, FAKE_NODE_LABEL
from fakenrt.controller.pods import SEQUENCE_ANNOTATION
from fakenrt.controller.writers import lease_path, nrt_path
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
from tests.controlplane.helpers import create_fake_node

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]

FULL = {"node-0": 4, "node-1": 4}


def cpus_available(kube: KubeClient, node: str) -> dict[str, int]:
    return {zone: res["cpu"] for zone, res in available(get_nrt(kube, node)).items()}


def test_r1_nodes_leases_and_nrt(kube: KubeClient) -> None:
    profiles = make_profiles(two_numa_profile(unique("fake")), two_numa_profile(unique("fake")))
    with running(kube, profiles) as ctl:
        for p in profiles:
            node = kube.get(path("api", "v1", "nodes", p.name))
            assert node["metadata"]["labels"][FAKE_NODE_LABEL] == "true"
            assert node["metadata"]["labels"][CONTROLLER_LABEL] == "fakenrt-test"
            nrt = wait_for(partial(get_nrt, kube, p.name), what="NRT")
            assert [z["name"] for z in nrt["zones"]] == ["node-0", "node-1"]
            assert {z["type"] for z in nrt["zones"]} == {"Node"}
            attrs = {a["name"]: a["value"] for a in nrt["attributes"]}
            assert attrs["topologyManagerPolicy"] == "single-numa-node"
            assert attrs["nodeTopologyPodsFingerprintMethod"] == "with-exclusive-resources"
            assert nrt["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
            assert nrt["metadata"]["ownerReferences"][0]["uid"] == ctl.node_uids[p.name]
            lease = wait_for(partial(kube.get, lease_path(p.name)), what="lease")
            assert lease["spec"]["holderIdentity"] == p.name


def test_r2_admission_rejection_and_deletion(
    kube: KubeClient, api_client: client.ApiClient, namespace: str
) -> None:
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    node = profile.name
    with running(kube, profiles=[profile]):
        create_pod(kube, pod("ok", node, namespace=namespace, cpu="2", gpus=1))
        ok = wait_for(phase_of(kube, namespace, "ok", "Running"), what="ok Running")
        status = ok["status"]
        assert status["podIP"].startswith("10.1.") and status["startTime"]
        assert all(c["ready"] for c in status["containerStatuses"])
        assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
        assert ok["metadata"]["annotations"][SEQUENCE_ANNOTATION] == "1"

        create_pod(kube, pod("toobig", node, namespace=namespace, cpu="1", gpus=3))
        bad = wait_for(phase_of(kube, namespace, "toobig", "Failed"), what="toobig Failed")
        assert bad["status"]["reason"] == "TopologyAffinityError"
        assert bad["status"]["message"] == (
            "Pod was rejected: Resources cannot be allocated with Topology locality"
        )
        events = wait_for(
            lambda: (
                client.CoreV1Api(api_client)
                .list_namespaced_event(namespace, field_selector="involvedObject.name=toobig")
                .items
            ),
            what="event",
        )
        assert [(e.type, e.reason) for e in events] == [("Warning", "TopologyAffinityError")]

        wait_for(lambda: sum(cpus_available(kube, node).values()) == 6, what="NRT after admit")
        # A normal delete (grace 30s) sets deletionTimestamp; the fake kubelet releases and
        # removes the pod at once.
        client.CoreV1Api(api_client).delete_namespaced_pod("ok", namespace)

        def deleted() -> bool:
            try:
                get_pod(kube, namespace, "ok")
            except NotFound:
                return True
            return False

        wait_for(deleted, what="pod removed")
        wait_for(lambda: cpus_available(kube, node) == FULL, what="NRT after release")


def test_r3_lag_nrt_unchanged_before_the_delay(kube: KubeClient, namespace: str) -> None:
    clock = ManualClock()
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    node = profile.name
    with running(kube, [profile], clock=clock, nrt_delay=30.0, nrt_jitter=5.0, seed=1) as ctl:
        wait_for(lambda: get_nrt(kube, node), what="initial NRT")
        assert cpus_available(kube, node) == FULL
        create_pod(kube, pod("p", node, namespace=namespace, cpu="3"))
        wait_for(phase_of(kube, namespace, "p", "Running"), what="Running")
        assert ctl.executor is not None and ctl.executor.wait_idle(10)
        clock.advance(29.9)
        turns = ctl.turns
        ctl.wake()
        # Two whole turns: the second one surely started after the clock moved.
        wait_for(lambda: ctl.turns >= turns + 2, what="loop turns")
        assert ctl.executor.wait_idle(10)
        assert cpus_available(kube, node) == FULL  # the allocation is not visible yet
        clock.advance(5.2)  # past delay + the largest jitter
        ctl.wake()
        wait_for(lambda: sum(cpus_available(kube, node).values()) == 5, what="lagged NRT")


def test_refresh_repairs_an_edited_nrt(kube: KubeClient) -> None:
    clock = ManualClock()
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    with running(kube, [profile], clock=clock, nrt_refresh=60.0) as ctl:
        nrt = wait_for(lambda: get_nrt(kube, profile.name), what="NRT")
        nrt["zones"] = nrt["zones"][:1]
        kube.replace(nrt_path(profile.name), nrt)
        clock.advance(61)
        ctl.wake()
        wait_for(lambda: len(get_nrt(kube, profile.name)["zones"]) == 2, what="repaired NRT")


def test_restart_recovers_without_double_allocation(kube: KubeClient, namespace: str) -> None:
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    node = profile.name
    with running(kube, [profile]) as first:
        for i in range(3):
            create_pod(kube, pod(f"p{i}", node, namespace=namespace, cpu="2", gpus=1))
            wait_for(phase_of(kube, namespace, f"p{i}", "Running"), what=f"p{i} Running")
        assert first.fleet is not None
        before = first.fleet.nodes[node].state.allocations()
    # While the controller is down, a pod is bound and one is deleted.
    kube.delete(path("api", "v1", "namespaces", namespace, "pods", "p1"), {"gracePeriodSeconds": 0})
    create_pod(kube, pod("p3", node, namespace=namespace, cpu="2", gpus=1))
    with running(kube, [profile]) as second:
        wait_for(phase_of(kube, namespace, "p3", "Running"), what="p3 Running after restart")
        assert second.fleet is not None
        after = second.fleet.nodes[node].state.allocations()
        assert list(after) == [f"{namespace}/p0", f"{namespace}/p2", f"{namespace}/p3"]
        # p0 and p2 get back exactly what they held (their recorded allocations).
        assert after[f"{namespace}/p0"] == before[f"{namespace}/p0"]
        assert after[f"{namespace}/p2"] == before[f"{namespace}/p2"]
        cpus = [c for a in after.values() for c in a.containers[0].cpus]
        gpus = [g for a in after.values() for g in a.containers[0].devices["nvidia.com/gpu"]]
        assert len(cpus) == len(set(cpus)) == 6 and len(gpus) == len(set(gpus)) == 3
        wait_for(lambda: sum(cpus_available(kube, node).values()) == 2, what="NRT consistent")
        p3 = get_pod(kube, namespace, "p3")
        assert p3["metadata"]["annotations"][SEQUENCE_ANNOTATION] == "4"


def _listed(state: Path, node: str, names: tuple[str, ...]) -> dict[str, PodResources]:
    """The node's podresources ``List`` for the pods ``names``."""
    client = PodResourcesClient(socket_path(state, node), timeout_s=5)
    try:
        return {p.name: p for p in client.list() if p.name in names}
    finally:
        client.close()


def test_restart_keeps_exact_ids_after_releases(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """Admit a and b, release a, admit c (it takes a's CPUs and GPU), restart: b and c keep
    exactly their CPU ids, device ids and memory blocks, as the podresources API reports
    them - the recorded allocation is restored, not recomputed."""
    (profile,) = make_profiles(two_numa_profile(unique("fake")))
    node, state = profile.name, tmp_path / "s"
    with running(kube, [profile], state_dir=state):
        for name in ("a", "b"):
            create_pod(kube, pod(name, node, namespace=namespace, cpu="2", gpus=1))
            wait_for(phase_of(kube, namespace, name, "Running"), what=f"{name} Running")
        a_held = _listed(state, node, ("a",))["a"].containers
        kube.delete(
            path("api", "v1", "namespaces", namespace, "pods", "a"), {"gracePeriodSeconds": 0}
        )
        wait_for(lambda: not _listed(state, node, ("a",)), what="a released")
        create_pod(kube, pod("c", node, namespace=namespace, cpu="2", gpus=1))
        wait_for(phase_of(kube, namespace, "c", "Running"), what="c Running")
        before = _listed(state, node, ("b", "c"))
        assert before["c"].containers == a_held  # the case a re-admission in order gets wrong
    with running(kube, [profile], state_dir=state) as second:
        assert second.fleet is not None
        assert list(second.fleet.nodes[node].state.allocations()) == [
            f"{namespace}/b",
            f"{namespace}/c",
        ]
        assert _listed(state, node, ("b", "c")) == before
        wait_for(lambda: sum(cpus_available(kube, node).values()) == 4, what="NRT consistent")


def _not_by_kcm(obj: Mapping[str, Any]) -> list[Any]:
    """The object's managed-fields entries (who wrote what, when) but kube-controller-
    manager's."""
    entries = obj["metadata"].get("managedFields") or []
    return [e for e in entries if e["manager"] != "kube-controller-manager"]


def test_pods_on_a_node_it_does_not_own_are_never_touched(
    kube: KubeClient, api_client: client.ApiClient, namespace: str
) -> None:
    theirs = unique("real")
    create_fake_node(api_client, theirs)
    mine = make_profiles(two_numa_profile(unique("fake")))[0]
    profiles = [mine, make_profiles(two_numa_profile(theirs))[0]]
    create_pod(kube, pod("foreign", theirs, namespace=namespace))
    before = get_pod(kube, namespace, "foreign")
    node_before = kube.get(path("api", "v1", "nodes", theirs))
    with running(kube, profiles) as ctl:
        assert ctl.foreign == (theirs,)
        create_pod(kube, pod("mine", mine.name, namespace=namespace))
        wait_for(phase_of(kube, namespace, "mine", "Running"), what="own pod Running")
        assert ctl.executor is not None and ctl.executor.wait_idle(10)
    # Not the resourceVersions: the session's kube-controller-manager may mark the node
    # (no lease behind it) and act on its pod meanwhile, as it would in a real cluster.
    # Every write but its own is the same as before: the controller wrote nothing.
    after = get_pod(kube, namespace, "foreign")
    assert _not_by_kcm(after) == _not_by_kcm(before)
    node_after = kube.get(path("api", "v1", "nodes", theirs))
    assert _not_by_kcm(node_after) == _not_by_kcm(node_before)
    with pytest.raises(NotFound):
        get_nrt(kube, theirs)
