"""The Kubernetes writers against the real API server: NRT create/update with conflicts,
Lease heartbeats, pod status with a uid precondition, events, kubelet-style deletion."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound
from fakenrt.controller.effects import (
    DeletePod,
    PatchPodStatus,
    PublishNrt,
    RecordMemoryCheckpoint,
    RecordNodeEvent,
    RecordPodEvent,
    RenewLease,
)
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL, MEMORY_STATE_ANNOTATION
from fakenrt.controller.writers import (
    NrtWriter,
    delete_pod,
    lease_path,
    nrt_path,
    patch_pod_status,
    record_event,
    record_memory_checkpoint,
    record_node_event,
    renew_lease,
)
from fakenrt.nrt import render_nrt
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controlplane.helpers import create_fake_node

pytestmark = pytest.mark.controlplane


def _pod(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    body = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": unique("nowhere"), "containers": [{"name": "c", "image": "busybox"}]},
    }
    return kube.create(path("api", "v1", "namespaces", namespace, "pods"), body)


@pytest.mark.usefixtures("nrt_crd")
def test_nrt_create_then_update_and_overwrite_a_concurrent_edit(kube: KubeClient) -> None:
    profile = make_profiles(two_numa_profile(unique("fake")))[0]
    writer = NrtWriter(kube, controller="ctl-a")
    body = render_nrt(profile, usage=None)
    writer.publish(PublishNrt(profile.name, body))
    stored = kube.get(nrt_path(profile.name))
    assert stored["zones"] == body["zones"]
    assert stored["metadata"]["labels"][CONTROLLER_LABEL] == "ctl-a"

    # Someone else edits the object: our next write conflicts, re-reads and wins.
    stored["attributes"] = [{"name": "topologyManagerPolicy", "value": "none"}]
    kube.replace(nrt_path(profile.name), stored)
    used = render_nrt(profile, usage={0: {"cpu": 2}, 1: {}}, pods=["ns/p"])
    writer.publish(PublishNrt(profile.name, used))
    final = kube.get(nrt_path(profile.name))
    assert final["zones"] == used["zones"] and final["attributes"] == used["attributes"]

    # Deleted behind our back: recreated.
    kube.delete(nrt_path(profile.name))
    writer.publish(PublishNrt(profile.name, body))
    assert kube.get(nrt_path(profile.name))["zones"] == body["zones"]
    assert writer.writes == 3


def test_lease_created_then_renewed(kube: KubeClient) -> None:
    node = unique("fake")
    renew_lease(kube, RenewLease(node, 1_800_000_000.25), node_uid="", duration_s=40)
    first = kube.get(lease_path(node))
    assert first["spec"]["holderIdentity"] == node
    assert first["spec"]["leaseDurationSeconds"] == 40
    renew_lease(kube, RenewLease(node, 1_800_000_010.5), node_uid="", duration_s=40)
    second = kube.get(lease_path(node))
    assert second["spec"]["renewTime"] == "2027-01-15T08:00:10.500000Z"


def test_pod_status_patch_respects_the_uid_precondition(kube: KubeClient, namespace: str) -> None:
    pod = _pod(kube, namespace, "p")
    uid = pod["metadata"]["uid"]
    ok = patch_pod_status(
        kube,
        PatchPodStatus("n", namespace, "p", uid, {"phase": "Running"}, {"fakenrt.io/x": "1"}),
    )
    after = kube.get(path("api", "v1", "namespaces", namespace, "pods", "p"))
    assert ok and after["status"]["phase"] == "Running"
    assert after["metadata"]["annotations"]["fakenrt.io/x"] == "1"
    stale = patch_pod_status(
        kube, PatchPodStatus("n", namespace, "p", "other-uid", {"phase": "Failed"})
    )
    gone = patch_pod_status(
        kube, PatchPodStatus("n", namespace, "absent", uid, {"phase": "Failed"})
    )
    assert not stale and not gone
    assert (
        kube.get(path("api", "v1", "namespaces", namespace, "pods", "p"))["status"]["phase"]
        == "Running"
    )


def test_event_and_deletion_with_grace_zero(
    kube: KubeClient, api_client: client.ApiClient, namespace: str
) -> None:
    pod = _pod(kube, namespace, "p")
    uid = pod["metadata"]["uid"]
    record_event(
        kube,
        RecordPodEvent("n1", namespace, "p", uid, "Warning", "TopologyAffinityError",
                       "Resources cannot be allocated with Topology locality", time.time()),
    )  # fmt: skip
    events = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    assert [(e.reason, e.type, e.source.component, e.involved_object.uid) for e in events] == [
        ("TopologyAffinityError", "Warning", "kubelet", uid)
    ]
    delete_pod(kube, DeletePod("n1", namespace, "p", "not-the-uid"))  # precondition fails: kept
    kube.get(path("api", "v1", "namespaces", namespace, "pods", "p"))
    delete_pod(kube, DeletePod("n1", namespace, "p", uid))
    with pytest.raises(NotFound):
        kube.get(path("api", "v1", "namespaces", namespace, "pods", "p"))
    delete_pod(kube, DeletePod("n1", namespace, "p", uid))  # already gone: no error


def test_memory_state_annotation_and_node_event(
    kube: KubeClient, api_client: client.ApiClient
) -> None:
    """The recorded Memory Manager state is one annotation, replaced alone (the Node's other
    annotations stay); a Node that is gone is no error. Node events go to ``default``."""
    node = unique("fake")
    create_fake_node(api_client, node)
    kube.patch(path("api", "v1", "nodes", node), {"metadata": {"annotations": {"other": "x"}}})
    for value in ("first", "second"):
        record_memory_checkpoint(kube, RecordMemoryCheckpoint(node, value))
    annotations = kube.get(path("api", "v1", "nodes", node))["metadata"]["annotations"]
    assert annotations[MEMORY_STATE_ANNOTATION] == "second" and annotations["other"] == "x"
    record_memory_checkpoint(kube, RecordMemoryCheckpoint(unique("gone"), "x"))
    record_node_event(kube, RecordNodeEvent(node, "Warning", "Why", "because", 1_800_000_000.0))
    events, _ = kube.list_all(
        path("api", "v1", "namespaces", "default", "events"),
        fieldSelector=f"involvedObject.name={node},source=kubelet",
    )
    (event,) = events  # the node lifecycle controller's RegisteredNode is not ours
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": node,
        "uid": node,
    }
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "Why", "because")
    assert event["source"] == {"component": "kubelet", "host": node}
