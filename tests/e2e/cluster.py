"""What the scenarios do through the API: submit workload pods, read them back, read a
node's NRT and compare it with what the kubelets hold (tests/e2e/invariants.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import Transient
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile
from tests.e2e.allocations import Allocations
from tests.e2e.deployment import Deployment
from tests.e2e.invariants import expected_available, is_memory
from tests.e2e.schedulers import CONTROLLER_LABEL

T = TypeVar("T")
FAKE_NODE_TAINT = "fakenrt.io/fake-node"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_for(
    probe: Callable[[], T | None], *, deployment: Deployment, timeout: float, what: str
) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds with
    the last value and the components' logs."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except Transient:  # the API server is busy: ask again
            last = None
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}; last={last!r}\n" + deployment.diagnostics()
    )


def workload_pod(
    name: str,
    *,
    namespace: str,
    deployment: Deployment,
    cpu: str,
    memory: str = "256Mi",
    gpus: int = 0,
    guaranteed: bool = True,
    run_duration: str | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    """A one-container pod for the scheduler under test (or bound to ``node`` directly),
    restricted to the deployment's nodes (node selector and toleration, which a real
    scheduler honours). With ``run_duration`` it finishes after that long (how: the
    deployment's :meth:`~tests.e2e.deployment.Deployment.workload`)."""
    amounts: dict[str, str] = {"cpu": cpu, "memory": memory}
    devices = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    resources = (
        {"limits": amounts | devices}
        if guaranteed
        else {"requests": amounts | devices, "limits": devices}
    )
    how = deployment.workload(run_duration)
    container: dict[str, Any] = {"name": "main", "image": how.image, "resources": resources}
    if how.command:
        container["command"] = list(how.command)
    scheduling = deployment.pod_scheduling
    spec: dict[str, Any] = {
        "schedulerName": scheduling.scheduler_name,
        "nodeSelector": {CONTROLLER_LABEL: deployment.controller_name},
        "tolerations": [{"key": FAKE_NODE_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        "restartPolicy": "Never",
        "containers": [container],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(scheduling.labels),
            "annotations": {**scheduling.annotations, **how.annotations},
        },
        "spec": spec,
    }


def create(kube: KubeClient, pod: Mapping[str, Any]) -> None:
    ns = pod["metadata"]["namespace"]
    kube.create(path("api", "v1", "namespaces", ns, "pods"), dict(pod), what="create pod")


def pods(kube: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    items, _ = kube.list_all(path("api", "v1", "namespaces", namespace, "pods"), what="list pods")
    return {p["metadata"]["name"]: p for p in items}


def nrt_available(kube: KubeClient, node: str) -> dict[str, dict[str, int]]:
    """zone name -> resource -> NRT ``available``."""
    nrt = kube.get(path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL, node))
    return {
        z["name"]: {r["name"]: int(r["available"]) for r in z.get("resources") or []}
        for z in nrt.get("zones") or []
    }


def nrt_converged(
    kube: KubeClient,
    profile: NodeProfile,
    listed: Iterable[Mapping[str, Any]],
    allocations: Allocations,
) -> bool:
    """The node's NRT ``available`` for CPUs and devices equals what its pods hold."""
    published = {
        zone: {res: n for res, n in amounts.items() if not is_memory(res)}
        for zone, amounts in nrt_available(kube, profile.name).items()
    }
    return published == expected_available(profile, listed, allocations)
