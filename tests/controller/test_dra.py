"""The controller's DRA nodes against the real API server: ResourceSlices and DeviceClasses
published as a driver would, claims allocated and reserved as the scheduler does, pods
whose claims are prepared after admission (and never aligned), a pod left Pending with
the kubelet's event until its claim is allocated, and the podresources socket listing
``dynamic_resources``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from exporter.kubeclient import MERGE_PATCH, KubeClient, path
from fakenrt.controller.endpoints import socket_path
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL
from fakenrt.profiles.model import NodeProfile
from protos.podresources.v1 import api_pb2, api_pb2_grpc
from tests.controller.conftest import ManualClock, make_profiles, unique
from tests.controller.harness import create_pod, get_pod, phase_of, running, wait_for

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]

RESOURCE = ("apis", "resource.k8s.io", "v1")
GPU = "gpu.nvidia.com"


def dra_profile(name: str, *, gpus: int = 2, **dra: Any) -> NodeProfile:
    (profile,) = make_profiles(
        {
            "name": name,
            "kubelet": {"topologyManagerPolicy": "single-numa-node", "reservedSystemCPUs": "0"},
            "dra": dra,
            "shape": {
                "numaNodes": 2,
                "coresPerNumaNode": 4,
                "memoryPerNumaNode": "8Gi",
                "draDevicesPerNumaNode": {GPU: gpus},
            },
        }
    )
    return profile


def slices_of(kube: KubeClient, node: str) -> list[dict[str, Any]]:
    items, _ = kube.list_all(
        path(*RESOURCE, "resourceslices"), fieldSelector=f"spec.nodeName={node}"
    )
    return sorted(items, key=lambda s: s["metadata"]["name"])


def create_claim(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
    }
    return kube.create(path(*RESOURCE, "namespaces", namespace, "resourceclaims"), body)


def allocate(
    kube: KubeClient,
    namespace: str,
    claim: str,
    node: str,
    *,
    devices: list[str],
    pod: dict[str, Any],
) -> None:
    """What the scheduler's DynamicResources plugin writes before binding the pod."""
    status = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": GPU, "pool": node, "device": d} for d in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        ],
    }
    kube.patch(
        path(*RESOURCE, "namespaces", namespace, "resourceclaims", claim, "status"),
        {"status": status},
        content_type=MERGE_PATCH,
    )


def claiming_pod(name: str, claim: str, *, node: str | None, cpu: str = "2") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"limits": {"cpu": cpu, "memory": "1Gi"}, "claims": [{"name": "gpu"}]},
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def bind(kube: KubeClient, namespace: str, pod: str, node: str) -> None:
    kube.create(
        path("api", "v1", "namespaces", namespace, "pods", pod, "binding"),
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"kind": "Node", "name": node},
        },
    )


def listed(state: Path, node: str, pod: str) -> api_pb2.PodResources | None:
    with grpc.insecure_channel(f"unix://{socket_path(state, node)}") as channel:
        response = api_pb2_grpc.PodResourcesListerStub(channel).List(
            api_pb2.ListPodResourcesRequest(), timeout=5
        )
    return next((p for p in response.pod_resources if p.name == pod), None)


def events_of(kube: KubeClient, namespace: str, pod: str) -> list[dict[str, Any]]:
    items, _ = kube.list_all(
        path("api", "v1", "namespaces", namespace, "events"),
        fieldSelector=f"involvedObject.name={pod}",
    )
    return items


def test_slices_and_classes_are_published_and_kept_across_restarts(kube: KubeClient) -> None:
    node = unique("dra")
    profile = dra_profile(node, cpu={})
    with running(kube, [profile]):
        pass
    first = slices_of(kube, node)
    assert [s["spec"]["driver"] for s in first] == ["dra.cpu", GPU]
    assert {s["spec"]["pool"]["generation"] for s in first} == {1}
    owner = first[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Node", node)
    assert first[0]["metadata"]["labels"][CONTROLLER_LABEL] == "fakenrt-test"
    gpu_class = kube.get(path(*RESOURCE, "deviceclasses", GPU))
    assert "type == 'gpu'" in gpu_class["spec"]["selectors"][0]["cel"]["expression"]

    with running(kube, [profile]):  # unchanged: same objects, same generation
        pass
    again = slices_of(kube, node)
    assert [s["metadata"]["resourceVersion"] for s in again] == [
        s["metadata"]["resourceVersion"] for s in first
    ]

    with running(kube, [dra_profile(node, gpus=3)]):  # one more GPU a node, no CPU driver
        pass
    changed = slices_of(kube, node)
    assert [s["spec"]["driver"] for s in changed] == [GPU]
    assert changed[0]["spec"]["pool"]["generation"] == 2
    assert [d["name"] for d in changed[0]["spec"]["devices"]] == [f"gpu-{i}" for i in range(6)]

    (plain,) = make_profiles(
        {"name": node, "shape": {"numaNodes": 2, "coresPerNumaNode": 4, "memoryPerNumaNode": "8Gi"}}
    )
    with running(kube, [plain]):  # no DRA driver left on the node: its slices go
        pass
    assert slices_of(kube, node) == []


def test_a_scheduled_claim_is_prepared_after_admission_and_listed(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    node = unique("dra")
    state = tmp_path / "s"
    with running(kube, [dra_profile(node)], state_dir=state) as ctl:
        create_claim(kube, namespace, "train-gpu")
        pod = create_pod(
            kube,
            {
                **claiming_pod("train", "train-gpu", node=None),
                "metadata": {"name": "train", "namespace": namespace},
            },
        )
        # the scheduler's order: allocate and reserve the claim, then bind the pod
        allocate(kube, namespace, "train-gpu", node, devices=["gpu-2"], pod=pod)  # NUMA node 1
        bind(kube, namespace, "train", node)
        wait_for(phase_of(kube, namespace, "train", "Running"), what="train Running")
        held = (
            ctl.fleet.nodes[node].state.allocations()[f"{namespace}/train"] if ctl.fleet else None
        )
        assert held is not None
        assert held.containers[0].cpus <= {1, 2, 3}  # NUMA node 0: not aligned with the GPU
        got = listed(state, node, "train")
        assert got is not None
        (dynamic,) = got.containers[0].dynamic_resources
        assert (dynamic.claim_name, dynamic.claim_namespace) == ("train-gpu", namespace)
        (device,) = dynamic.claim_resources
        assert (device.driver_name, device.pool_name, device.device_name) == (GPU, node, "gpu-2")
        assert [c.name for c in device.cdi_devices] == ["k8s.gpu.nvidia.com/device=gpu-2"]
        assert not [e for e in events_of(kube, namespace, "train") if e["type"] == "Warning"]


def test_an_unallocated_claim_keeps_the_pod_pending_until_it_is(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    node = unique("dra")
    state = tmp_path / "s"
    clock = ManualClock()
    with running(kube, [dra_profile(node)], state_dir=state, clock=clock, seed=3) as ctl:
        create_claim(kube, namespace, "late-gpu")
        pod = create_pod(
            kube,
            {
                **claiming_pod("late", "late-gpu", node=node),
                "metadata": {"name": "late", "namespace": namespace},
            },
        )

        def warned() -> list[dict[str, Any]]:
            return [
                e
                for e in events_of(kube, namespace, "late")
                if e["reason"] == "FailedPrepareDynamicResources"
            ]

        wait_for(lambda: listed(state, node, "late"), what="admitted")
        assert ctl.executor is not None and ctl.executor.wait_idle(10)
        assert not warned()  # a first failure waits for the claim watch to catch up
        clock.advance(1.0)
        ctl.wake()
        (event,) = wait_for(warned, what="the kubelet's event")
        claim = kube.get(path(*RESOURCE, "namespaces", namespace, "resourceclaims", "late-gpu"))
        assert event["type"] == "Warning"
        assert event["message"] == (
            "Failed to prepare dynamic resources: prepare dynamic resources: pod late "
            f"({pod['metadata']['uid']}) is not allowed to use ResourceClaim late-gpu "
            f"({claim['metadata']['uid']})"
        )
        status = get_pod(kube, namespace, "late")["status"]
        assert status["phase"] == "Pending"
        assert status["containerStatuses"][0]["state"] == {
            "waiting": {"reason": "ContainerCreating"}
        }
        # admitted: it holds its exclusive CPUs meanwhile, and lists no claim yet
        pending = wait_for(lambda: listed(state, node, "late"), what="listed while pending")
        assert len(pending.containers[0].cpu_ids) == 2
        assert list(pending.containers[0].dynamic_resources) == []

        allocate(kube, namespace, "late-gpu", node, devices=["gpu-0"], pod=pod)

        def seen_allocated() -> bool:
            claim = ctl.fleet.claim(namespace, "late-gpu") if ctl.fleet else None
            return claim is not None and claim.allocated is not None

        wait_for(seen_allocated, what="the claim watch")
        clock.advance(15.0)  # past the kubelet's retry (10 s + up to 50 % jitter)
        ctl.wake()
        wait_for(phase_of(kube, namespace, "late", "Running"), what="late Running")
        got = listed(state, node, "late")
        assert got is not None
        assert got.containers[0].dynamic_resources[0].claim_resources[0].device_name == "gpu-0"

        kube.delete(
            path("api", "v1", "namespaces", namespace, "pods", "late"), {"gracePeriodSeconds": 0}
        )
        wait_for(lambda: listed(state, node, "late") is None, what="released")
        assert ctl.fleet is not None
        assert not ctl.fleet.nodes[node].state.claims()  # unprepared with its last pod
