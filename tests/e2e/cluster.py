"""What the scenarios do through the API: submit workload pods, read them back, read a
node's NRT and compare it with what the kubelets hold (tests/e2e/invariants.py)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from exporter.cpulist import parse_cpulist
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound, Transient
from fakenrt.controller.writers import NUMATOPOLOGY
from fakenrt.kubelet.allocation import INIT
from fakenrt.nrt.koordlet import POD_CPU_ALLOCS
from fakenrt.nrt.koordlet import VERSION as KOORDLET_VERSION
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile
from tests.e2e.allocations import Allocations
from tests.e2e.deployment import Deployment
from tests.e2e.invariants import expected_available, holding, is_memory
from tests.e2e.outcome import node_of
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
    claim: str | None = None,
    claim_template: bool = False,
) -> dict[str, Any]:
    """A one-container pod for the scheduler under test (or bound to ``node`` directly),
    restricted to the deployment's nodes (node selector and toleration, which a real
    scheduler honours). With ``run_duration`` it finishes after that long (how: the
    deployment's :meth:`~tests.e2e.deployment.Deployment.workload`). With ``claim`` its
    container uses that ResourceClaim (:func:`resource_claim`), or with ``claim_template``
    a claim made from the ResourceClaimTemplate of that name."""
    amounts: dict[str, str] = {"cpu": cpu, "memory": memory}
    devices = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    resources: dict[str, Any] = (
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
    if claim is not None:
        source = "resourceClaimTemplateName" if claim_template else "resourceClaimName"
        spec["resourceClaims"] = [{"name": "devices", source: claim}]
        resources["claims"] = [{"name": "devices"}]
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


#: The DeviceClasses of the DRA drivers the scenarios use (docs/profiles.md).
GPU_CLASS, CPU_CLASS = "gpu.nvidia.com", "dra.cpu"
#: The CPU driver's consumable capacity, and the standard NUMA attribute (KEP-6072).
CPU_CAPACITY, NUMA_ATTRIBUTE = "dra.cpu/cpu", "resource.kubernetes.io/numaNode"


def resource_claim(
    name: str,
    *,
    namespace: str,
    gpus: int = 0,
    cpus: int = 0,
    same_numa_node: bool = False,
    labels: Mapping[str, str] | None = None,
    template: bool = False,
) -> dict[str, Any]:
    """A ResourceClaim (``resource.k8s.io/v1``) for ``gpus`` GPUs of the ``gpu.nvidia.com``
    class and a ``dra.cpu`` device consuming ``cpus`` CPUs; with ``same_numa_node`` a
    ``matchAttribute`` constraint on the NUMA node over both requests. ``labels``: the
    scheduler's (``PodScheduling.claim_labels``). With ``template`` a ResourceClaimTemplate
    of that claim instead (its ``labels`` go on every claim the resourceclaim controller
    makes from it), as a Job's or a Deployment's pods use one."""
    requests: list[dict[str, Any]] = []
    if gpus:
        exactly = {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": gpus}
        requests.append({"name": "gpu", "exactly": exactly})
    if cpus:
        capacity = {"requests": {CPU_CAPACITY: str(cpus)}}
        requests.append(
            {"name": "cpu", "exactly": {"deviceClassName": CPU_CLASS, "capacity": capacity}}
        )
    if not requests:
        raise ValueError(f"ResourceClaim {name}: no GPUs and no CPUs asked for")
    devices: dict[str, Any] = {"requests": requests}
    if same_numa_node:
        devices["constraints"] = [
            {"requests": [r["name"] for r in requests], "matchAttribute": NUMA_ATTRIBUTE}
        ]
    labelled = {"labels": dict(labels)} if labels else {}
    spec: dict[str, Any] = {"devices": devices}
    if template:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**({"metadata": labelled} if labelled else {}), "spec": spec},
        }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, **labelled},
        "spec": spec,
    }


def create_claim(kube: KubeClient, claim: Mapping[str, Any]) -> None:
    """Create a ResourceClaim or a ResourceClaimTemplate (:func:`resource_claim`)."""
    ns, kind = claim["metadata"]["namespace"], claim["kind"]
    kube.create(
        path("apis", "resource.k8s.io", "v1", "namespaces", ns, f"{kind.lower()}s"),
        dict(claim),
        what=f"create {kind}",
    )


def resource_claims(kube: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    """The namespace's ResourceClaims by name."""
    items, _ = kube.list_all(
        path("apis", "resource.k8s.io", "v1", "namespaces", namespace, "resourceclaims"),
        what="list ResourceClaims",
    )
    return {c["metadata"]["name"]: c for c in items}


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
    """Every topology object the node publishes shows what its pods hold: the NRT
    ``available`` for CPUs and devices - or, where the node writes koordlet's NRT
    (``nrt.koordlet``, whose ``available`` never moves), its pinned CPUs per zone in
    ``pod-cpu-allocs`` - and, with ``nrt.volcano``, the Numatopology's used CPUs per zone."""
    expected_pinned = pinned_cpus(profile, listed, allocations, listed_only=False)
    if profile.nrt_koordlet:
        converged = koordlet_pinned(kube, profile) == expected_pinned
    else:
        published = {
            zone: {res: n for res, n in amounts.items() if not is_memory(res)}
            for zone, amounts in nrt_available(kube, profile.name).items()
        }
        converged = published == expected_available(profile, listed, allocations)
    if converged and profile.nrt_volcano:
        expected = pinned_cpus(profile, listed, allocations, listed_only=True)
        converged = volcano_used(kube, profile) == expected
    return converged


def pinned_cpus(
    profile: NodeProfile,
    listed: Iterable[Mapping[str, Any]],
    allocations: Allocations,
    *,
    listed_only: bool,
) -> dict[int, int]:
    """Zone id -> exclusive CPUs held there: the profile's foreign ``allocated`` and the
    allocations of the pods holding resources on the node (only the containers podresources
    lists - not regular init ones - with ``listed_only``)."""
    zone_of = {cpu: info.numa for cpu, info in profile.cpu_topology.items()}
    held = {z.id: z.allocated.get("cpu", 0) for z in profile.zones}
    for pod in holding(listed, allocations):
        if node_of(pod) != profile.name:
            continue
        allocation = allocations[pod["metadata"]["name"]]
        for container in allocation.containers:
            if listed_only and container.kind == INIT:
                continue
            for cpu in container.cpus:
                held[zone_of[cpu]] += 1
    return held


def _per_zone(profile: NodeProfile, cpus: Iterable[int]) -> dict[int, int]:
    counts = {z.id: 0 for z in profile.zones}
    for cpu in cpus:
        counts[profile.cpu_topology[cpu].numa] += 1
    return counts


def koordlet_pinned(kube: KubeClient, profile: NodeProfile) -> dict[int, int]:
    """Zone id -> CPUs koordlet's NRT reports pinned by the kubelet (``pod-cpu-allocs``)."""
    nrt = kube.get(path("apis", NRT_GROUP, KOORDLET_VERSION, NRT_PLURAL, profile.name))
    raw = (nrt["metadata"].get("annotations") or {}).get(POD_CPU_ALLOCS, "null")
    entries = json.loads(raw) or []
    return _per_zone(profile, (c for e in entries for c in parse_cpulist(e["cpuset"])))


def volcano_used(kube: KubeClient, profile: NodeProfile) -> dict[int, int]:
    """Zone id -> CPUs Volcano's Numatopology does not list as free."""
    spec = kube.get(NUMATOPOLOGY.path(profile.name))["spec"]
    free = parse_cpulist(spec["numares"]["cpu"].get("allocatable", ""))
    return _per_zone(profile, set(profile.cpu_topology) - free)


def not_found_is_none(probe: Callable[[], T]) -> Callable[[], T | None]:
    def wrapped() -> T | None:
        try:
            return probe()
        except NotFound:
            return None

    return wrapped
