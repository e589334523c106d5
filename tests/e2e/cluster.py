"""What the scenarios do and check through the API: submit workload pods, read them back,
count outcomes, and compare what the exporter observed with what the simulated kubelet
allocated (the controller's ``fakenrt.io/allocation`` record on each pod)."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
    parse_memory_groups,
    parse_placement,
    parse_zone_name,
    zone_name,
)
from exporter.cpulist import parse_cpulist
from exporter.kubeclient import KubeClient, path
from exporter.kubeerrors import NotFound, Transient
from fakenrt.controller.writers import NUMATOPOLOGY
from fakenrt.kubelet.allocation import INIT, PodAllocation
from fakenrt.nrt.koordlet import POD_CPU_ALLOCS
from fakenrt.nrt.koordlet import VERSION as KOORDLET_VERSION
from fakenrt.nrt.render import NRT_GROUP, NRT_PLURAL, NRT_VERSION
from fakenrt.profiles import NodeProfile
from fakenrt.profiles.resources import zone_allocatable
from schedulers.adapter import Unschedulable
from tests.e2e.allocations import Allocations
from tests.e2e.deployment import Deployment
from tests.e2e.schedulers import CONTROLLER_LABEL

T = TypeVar("T")
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
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


def wait_until(
    probe: Callable[[], T | None],
    *,
    deployment: Deployment,
    timeout: float,
    what: str,
    required: bool,
) -> T | None:
    """:func:`wait_for` where the outcome is a scheduler's property: when not
    ``required`` (the scheduler does not claim it), a timeout returns None instead of
    failing - the scenario records the finding and goes on."""
    if required:
        return wait_for(probe, deployment=deployment, timeout=timeout, what=what)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = probe()
        except Transient:
            got = None
        if got:
            return got
        time.sleep(0.2)
    return None


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


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def node_of(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def annotations_of(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("annotations") or {})


def rejected(pod: Mapping[str, Any]) -> bool:
    """Refused by the (simulated) kubelet's Topology Manager."""
    status = pod.get("status") or {}
    return phase(pod) == "Failed" and status.get("reason") == TOPOLOGY_AFFINITY_ERROR


def unschedulable_messages(
    kube: KubeClient, namespace: str, pod: str, how: Unschedulable
) -> list[str]:
    """What the scheduler said about ``pod`` not fitting: the message of its
    ``PodScheduled`` condition when that is ``False`` with reason ``Unschedulable``, and the
    messages of its events with one of ``how.event_reasons`` (oldest first)."""
    got = kube.get(path("api", "v1", "namespaces", namespace, "pods", pod), what="get pod")
    messages = [
        str(c.get("message") or "")
        for c in (got.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
    ]
    items, _ = kube.list_all(
        path("api", "v1", "namespaces", namespace, "events"),
        what="list events",
        fieldSelector=f"involvedObject.name={pod},involvedObject.uid={got['metadata']['uid']}",
    )
    messages += [str(e.get("message") or "") for e in items if e.get("reason") in how.event_reasons]
    return messages


def reported_unschedulable(
    kube: KubeClient, deployment: Deployment, namespace: str, pod: str
) -> str | None:
    """The scheduler under test's message saying no node can align ``pod``, if any."""
    how = deployment.scheduler.unschedulable
    pattern = re.compile(how.reason)
    for message in unschedulable_messages(kube, namespace, pod, how):
        if pattern.search(message):
            return message
    return None


def wait_unschedulable(
    kube: KubeClient, deployment: Deployment, namespace: str, pod: str, *, timeout: float = 60
) -> str:
    """Until the scheduler under test reports ``pod`` unschedulable for a NUMA reason
    (condition or event, :func:`unschedulable_messages`); return that message."""
    how = deployment.scheduler.unschedulable
    return wait_for(
        lambda: reported_unschedulable(kube, deployment, namespace, pod),
        deployment=deployment,
        timeout=timeout,
        what=f"{pod} reported unschedulable (PodScheduled condition or one of the events "
        f"{', '.join(how.event_reasons)}) with a message matching {how.reason!r}",
    )


def events_of(kube: KubeClient, namespace: str, pod: str) -> list[str]:
    """``<reason> (<component>): <message>`` for every event of ``pod``, oldest first."""
    items, _ = kube.list_all(
        path("api", "v1", "namespaces", namespace, "events"),
        what="list events",
        fieldSelector=f"involvedObject.name={pod}",
    )
    items.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return [f"{e.get('reason')} ({_component(e)}): {e.get('message')}" for e in items]


def _component(event: Mapping[str, Any]) -> str:
    return str((event.get("source") or {}).get("component") or event.get("reportingComponent"))


def kubelet_rejections(kube: KubeClient, namespace: str) -> dict[str, set[str]]:
    """Pod name -> the nodes whose kubelet recorded a ``TopologyAffinityError`` event for
    it (source component ``kubelet``, host the node)."""
    items, _ = kube.list_all(
        path("api", "v1", "namespaces", namespace, "events"),
        what="list events",
        fieldSelector=f"reason={TOPOLOGY_AFFINITY_ERROR}",
    )
    out: dict[str, set[str]] = defaultdict(set)
    for event in items:
        source = event.get("source") or {}
        component = source.get("component") or event.get("reportingComponent")
        host = source.get("host") or event.get("reportingInstance")
        if component == "kubelet" and host:
            out[str((event.get("involvedObject") or {}).get("name"))].add(str(host))
    return dict(out)


def unexplained_rejections(
    listed: Iterable[Mapping[str, Any]], by_kubelet: Mapping[str, set[str]]
) -> list[str]:
    """Pods counted as TopologyAffinityErrors without the kubelet of their node having
    recorded the rejection (empty: every rejection counted is the kubelet's)."""
    return [
        f"{p['metadata']['name']}: rejected on {node_of(p)} without that kubelet's event"
        for p in listed
        if rejected(p) and node_of(p) not in by_kubelet.get(p["metadata"]["name"], set())
    ]


@dataclass(frozen=True)
class Figures:
    """Outcome counts of a workload, as the lead reports them."""

    submitted: int
    bound: int
    ran: int
    running: int
    topology_affinity_errors: int
    pending: int

    def line(self, label: str) -> str:
        return (
            f"{label}: submitted={self.submitted} bound={self.bound} "
            f"Running-or-completed={self.ran} Running-now={self.running} "
            f"TopologyAffinityErrors={self.topology_affinity_errors} Pending={self.pending}"
        )


def figures(listed: Iterable[Mapping[str, Any]]) -> Figures:
    items = list(listed)
    return Figures(
        submitted=len(items),
        bound=sum(1 for p in items if node_of(p)),
        ran=sum(1 for p in items if phase(p) in ("Running", "Succeeded")),
        running=sum(1 for p in items if phase(p) == "Running"),
        topology_affinity_errors=sum(1 for p in items if rejected(p)),
        pending=sum(1 for p in items if not node_of(p)),
    )


# ---- observed vs simulated ----------------------------------------------------------


def expected_observation(profile: NodeProfile, allocation: PodAllocation) -> tuple[str, str]:
    """The observed placement and memory groups the simulator's allocation amounts to, in
    the exporter's annotation format (interfaces.md)."""
    zone_of_cpu = {cpu: z.id for z in profile.zones for cpu in z.cpus}
    zone_of_device = {
        (name, dev): z.id for z in profile.zones for name, ds in z.devices.items() for dev in ds.ids
    }
    per_zone: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    groups: dict[frozenset[int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for container in allocation.containers:
        for cpu in container.cpus:
            per_zone[zone_of_cpu[cpu]]["cpu"] += 1
        for name, ids in container.devices.items():
            for dev in ids:
                if (name, dev) in zone_of_device:
                    per_zone[zone_of_device[(name, dev)]][name] += 1
        for block in container.memory:
            if len(block.numa) == 1:
                per_zone[next(iter(block.numa))][block.type] += block.size
            groups[block.numa][block.type] += block.size
    placement = format_placement(ZonePlacement(z, dict(a)) for z, a in per_zone.items())
    memory = format_memory_groups(MemoryGroup(n, dict(a)) for n, a in groups.items())
    return placement, memory


def holding(
    listed: Iterable[Mapping[str, Any]], allocations: Allocations
) -> list[Mapping[str, Any]]:
    """Pods that hold resources on a node: bound, admitted (their kubelet holds an
    allocation), not terminal."""
    return [
        p
        for p in listed
        if node_of(p)
        and phase(p) in ("Pending", "Running")
        and p["metadata"]["name"] in allocations
    ]


def observation_mismatches(
    listed: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, NodeProfile],
    allocations: Allocations,
) -> list[str]:
    """Every Running pod on the deployment's nodes whose observed annotations differ from
    what its kubelet allocated (empty: all agree). A pod with nothing aligned must carry
    no observed placement and ``[]`` memory groups."""
    problems: list[str] = []
    for pod in listed:
        node = node_of(pod)
        if phase(pod) != "Running" or node is None or node not in profiles:
            continue
        name = pod["metadata"]["name"]
        allocation = allocations.get(name)
        if allocation is None:
            problems.append(f"{name}: Running without a recorded allocation")
            continue
        placement, memory = expected_observation(profiles[node], allocation)
        got = annotations_of(pod)
        want_placement = None if placement == "[]" else placement
        if got.get(OBSERVED_PLACEMENT) != want_placement:
            problems.append(
                f"{name}: observed {got.get(OBSERVED_PLACEMENT)!r}, allocated {want_placement!r}"
            )
        if got.get(OBSERVED_MEMORY_GROUPS) != memory:
            problems.append(
                f"{name}: observed groups {got.get(OBSERVED_MEMORY_GROUPS)!r}, allocated {memory!r}"
            )
    return problems


def _canonical(raw: str | None, *, groups: bool) -> str | None:
    """An annotation value in the writers' canonical form (None stays None)."""
    if raw is None:
        return None
    if groups:
        return format_memory_groups(parse_memory_groups(raw))
    return format_placement(parse_placement(raw))


def prediction_mismatches(listed: Iterable[Mapping[str, Any]]) -> list[str]:
    """Running pods whose scheduler-written prediction differs from the observation (pods
    without a prediction - a scheduler that writes none - are not compared).

    Both pairs follow one rule (interfaces.md), memory included: the placement's per-zone
    memory counts single-NUMA blocks only, every block is in the memory groups. The
    predicted placement is compared with the observed one (absent: ``[]``); the predicted
    groups, when the scheduler writes them, with the observed groups."""
    problems: list[str] = []
    for pod in listed:
        got = annotations_of(pod)
        if phase(pod) != "Running" or PREDICTED_PLACEMENT not in got:
            continue
        name = pod["metadata"]["name"]
        predicted = _canonical(got[PREDICTED_PLACEMENT], groups=False)
        observed = _canonical(got.get(OBSERVED_PLACEMENT, "[]"), groups=False)
        if predicted != observed:
            problems.append(f"{name}: predicted {predicted} observed {observed}")
        if PREDICTED_MEMORY_GROUPS in got:
            predicted = _canonical(got[PREDICTED_MEMORY_GROUPS], groups=True)
            observed = _canonical(got.get(OBSERVED_MEMORY_GROUPS), groups=True)
            if predicted != observed:
                problems.append(f"{name}: predicted groups {predicted} observed {observed}")
    return problems


def prediction_agreement(listed: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(Running pods with a predicted placement, those whose prediction equals the
    observation - placement and, where predicted, memory groups)."""
    items = [
        p for p in listed if phase(p) == "Running" and PREDICTED_PLACEMENT in annotations_of(p)
    ]
    wrong = {m.split(":", 1)[0] for m in prediction_mismatches(items)}
    return len(items), sum(1 for p in items if p["metadata"]["name"] not in wrong)


def double_allocations(listed: Iterable[Mapping[str, Any]], allocations: Allocations) -> list[str]:
    """CPUs or devices held by two pods of the same node at once."""
    owner: dict[tuple[str, str, str], str] = {}
    problems: list[str] = []
    for pod in holding(listed, allocations):
        allocation = allocations[pod["metadata"]["name"]]
        node = str(node_of(pod))
        name = pod["metadata"]["name"]
        for container in allocation.containers:
            ids = [("cpu", str(c)) for c in container.cpus] + [
                (res, dev) for res, devs in container.devices.items() for dev in devs
            ]
            for res, ident in ids:
                key = (node, res, ident)
                if key in owner and owner[key] != name:
                    problems.append(f"{node} {res} {ident}: held by {owner[key]} and {name}")
                owner[key] = name
    return problems


def nrt_available(kube: KubeClient, node: str) -> dict[str, dict[str, int]]:
    """zone name -> resource -> NRT ``available``."""
    nrt = kube.get(path("apis", NRT_GROUP, NRT_VERSION, NRT_PLURAL, node))
    return {
        z["name"]: {r["name"]: int(r["available"]) for r in z.get("resources") or []}
        for z in nrt.get("zones") or []
    }


def expected_available(
    profile: NodeProfile, listed: Iterable[Mapping[str, Any]], allocations: Allocations
) -> dict[str, dict[str, int]]:
    """What NRT ``available`` must converge to for CPUs and devices: each zone's
    allocatable minus the profile's foreign use and the allocations of the pods holding
    resources on the node. (Memory is left out: the simulator splits a multi-NUMA group's
    memory among its zones, which no observed annotation shows.)"""
    allocatable = zone_allocatable(profile)
    used: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for zone in profile.zones:
        for res, amount in zone.allocated.items():
            used[zone.id][res] += amount
    for pod in holding(listed, allocations):
        if node_of(pod) != profile.name:
            continue
        allocation = allocations[pod["metadata"]["name"]]
        placement, _ = expected_observation(profile, allocation)
        for entry in json.loads(placement):
            zone_id = parse_zone_name(entry["zone"])
            for res, amount in entry["amount"].items():
                used[zone_id][res] += int(amount)
    return {
        zone_name(z.id): {
            res: max(0, amount - used[z.id].get(res, 0))
            for res, amount in allocatable[z.id].items()
            if not _memory(res)
        }
        for z in profile.zones
    }


def _memory(resource: str) -> bool:
    return resource == "memory" or resource.startswith("hugepages-")


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
            zone: {res: n for res, n in amounts.items() if not _memory(res)}
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
