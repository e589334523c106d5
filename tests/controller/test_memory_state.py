"""The simulated kubelet's Memory Manager checkpoint across controller restarts: recorded
on the Node when it changes, checked at start as the kubelet's ``validateState`` checks
``memory_manager_state`` (``pkg/kubelet/cm/memorymanager/policy_static.go``), and a node
whose checkpoint the kubelet refuses stays down until an operator removes it.

The history that makes a real kubelet refuse to restart (see
``NodeState.restart_problem`` and ``tests/kubelet/test_restore.py``): on a best-effort
node of three 4Gi zones, p0's init container holds a 6Gi block over NUMA 0-1; p1's 256Mi
joins the group on NUMA 1; releasing p1 gives its bytes back from NUMA 0; p5's 256Mi then
gets a one-node block on NUMA 0. Recomputed from the blocks, the group's free memory is
2Gi; the live books say 1.75Gi."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.kubeclient import KubeClient, path
from exporter.podresources_client import PodResourcesClient
from fakenrt.controller.effects import (
    Effect,
    PatchPodStatus,
    PublishNrt,
    RecordMemoryCheckpoint,
    RecordNodeEvent,
    RecordPodEvent,
    RenewLease,
    ReportNodeStatus,
    ServePodResources,
    WithdrawPodResources,
)
from fakenrt.controller.endpoints import socket_path
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.node import (
    ALLOCATION_NOT_RESTORED,
    MEMORY_STATE_INVALID,
    MEMORY_STATE_UNREADABLE,
)
from fakenrt.controller.nodeobjects import MEMORY_STATE_ANNOTATION, NodeIdentity
from fakenrt.controller.settings import ControllerSettings
from fakenrt.controller.timestamps import rfc3339
from fakenrt.kubelet.memory_checkpoint import decode_memory_checkpoint
from tests.controller.conftest import ManualClock, make_profiles, unique
from tests.controller.harness import create_pod, get_pod, phase_of, running, wait_for
from tests.controller.podmanifests import pod

NODE = "n1"
REFUSED = (
    "node {node}: memory manager: NUMA nodes [0, 1] have 1879048192 bytes of memory free, "
    "their checkpointed blocks leave 2147483648"
)


def best_effort_three(name: str, *, memory_policy: str = "Static") -> dict[str, Any]:
    return {
        "name": name,
        "kubelet": {"topologyManagerPolicy": "best-effort", "memoryManagerPolicy": memory_policy},
        "shape": {
            "numaNodes": 3,
            "coresPerNumaNode": 2,
            "threadsPerCore": 1,
            "memoryPerNumaNode": "4Gi",
        },
    }


def history(node: str, namespace: str = "ns") -> tuple[dict[str, Any], ...]:
    """p0 (a 6Gi init container over NUMA 0-1, then 256Mi), p1, p5 (2 CPUs, 256Mi each)."""
    init = {"cpu": "500m", "memory": "6Gi"}
    return (
        pod("p0", node, namespace=namespace, cpu="1", memory="256Mi", init=init),
        pod("p1", node, namespace=namespace, cpu="2", memory="256Mi"),
        pod("p5", node, namespace=namespace, cpu="2", memory="256Mi"),
    )


def fleet(clock: ManualClock, *, memory_policy: str = "Static") -> Fleet:
    (profile,) = make_profiles(best_effort_three(NODE, memory_policy=memory_policy))
    settings = ControllerSettings(nrt_refresh=0)
    return Fleet([(profile, NodeIdentity(NODE, 0))], settings, clock=clock)


def of(effects: list[Effect], kind: type) -> list[Any]:
    return [e for e in effects if isinstance(e, kind)]


def as_api_sees_it(manifests: list[dict[str, Any]], effects: list[Effect]) -> list[dict[str, Any]]:
    by_uid = {m["metadata"]["uid"]: m for m in manifests}
    for e in effects:
        if isinstance(e, PatchPodStatus) and e.uid in by_uid:
            by_uid[e.uid]["status"].update(e.status)
            by_uid[e.uid]["metadata"]["annotations"].update(e.annotations)
    return manifests


def run_history(*, release: bool, memory_policy: str = "Static") -> tuple[Fleet, list[Any], str]:
    """Drive a first controller through p0, p1, (release p1), p5: the fleet, the
    surviving pods as the API holds them, and the last recorded Memory Manager state."""
    first = fleet(ManualClock(), memory_policy=memory_policy)
    effects = first.start([])
    p0, p1, p5 = history(NODE)
    effects += first.pod_event("ADDED", p0) + first.pod_event("ADDED", p1)
    if release:
        effects += first.pod_event("DELETED", p1)
    effects += first.pod_event("ADDED", p5)
    survivors = [p0, p5] if release else [p0, p1, p5]
    recorded = of(effects, RecordMemoryCheckpoint)
    return (
        first,
        as_api_sees_it(copy.deepcopy(survivors), effects),
        recorded[-1].value if recorded else "",
    )


def ready_condition(effects: list[Effect]) -> dict[str, Any]:
    (status,) = of(effects, ReportNodeStatus)
    (ready,) = [c for c in status.status["conditions"] if c["type"] == "Ready"]
    return dict(ready)


def test_the_state_is_recorded_when_it_changes_and_equals_the_kubelets_checkpoint() -> None:
    f = fleet(ManualClock())
    (initial,) = of(f.start([]), RecordMemoryCheckpoint)
    p0, p1, _ = history(NODE)
    (admitted,) = of(f.pod_event("ADDED", p0), RecordMemoryCheckpoint)
    checkpoint = f.nodes[NODE].state.memory_checkpoint()
    assert checkpoint is not None
    assert decode_memory_checkpoint(admitted.value) == checkpoint
    assert admitted.value != initial.value
    cpu_only = pod("c", NODE, cpu="1", memory="1Gi", guaranteed=False)  # no block: no write
    assert of(f.pod_event("ADDED", cpu_only), RecordMemoryCheckpoint) == []
    assert of(f.pod_event("ADDED", p1), RecordMemoryCheckpoint) != []


def test_a_node_without_the_static_memory_manager_records_nothing() -> None:
    f = fleet(ManualClock(), memory_policy="None")
    effects = f.start([]) + f.pod_event("ADDED", history(NODE)[0])
    assert of(effects, RecordMemoryCheckpoint) == []


@pytest.mark.parametrize(
    ("release", "memory_policy", "recorded", "expected"),
    [
        pytest.param(True, "Static", "live", "refused", id="mismatch-refused"),
        pytest.param(True, "Static", None, "as-today", id="absent-restarts-as-today"),
        pytest.param(False, "Static", "live", "equal", id="equal-restarts"),
        pytest.param(True, "Static", "{not json", "unreadable", id="malformed-json"),
        pytest.param(True, "Static", "field", "unreadable", id="malformed-field"),
        pytest.param(True, "None", "live", "not-static", id="not-static-ignored"),
    ],
)
def test_recover_checks_the_recorded_state(
    release: bool, memory_policy: str, recorded: str | None, expected: str
) -> None:
    first, survivors, live = run_history(release=release, memory_policy=memory_policy)
    if memory_policy == "None":  # it records nothing: give it a Static node's state
        live = run_history(release=release)[2]
    value = {"live": live, "field": live.replace('"cells":"0"', '"cells":7')}.get(
        recorded or "", recorded
    )
    second = fleet(ManualClock(), memory_policy=memory_policy)
    effects = second.start(survivors, {NODE: value} if value is not None else {})
    model = second.nodes[NODE]
    events = of(effects, RecordNodeEvent)
    if expected == "refused":
        problem = REFUSED.format(node=NODE)
        assert model.refused is not None and problem in model.refused
        (event,) = events
        assert (event.type, event.reason) == ("Warning", MEMORY_STATE_INVALID)
        assert problem in event.message and MEMORY_STATE_ANNOTATION in event.message
        ready = ready_condition(effects)
        assert (ready["status"], ready["reason"]) == ("False", MEMORY_STATE_INVALID)
        assert problem in ready["message"]
        # No kubelet: nothing restored or admitted, no NRT, no podresources, no writes.
        assert model.state.allocations() == {}
        assert of(effects, WithdrawPodResources) == [WithdrawPodResources(NODE)]
        for kind in (PatchPodStatus, PublishNrt, ServePodResources, RecordMemoryCheckpoint):
            assert of(effects, kind) == []
        return
    assert model.refused is None
    assert ready_condition(effects)["status"] == "True"
    assert of(effects, WithdrawPodResources) == []
    assert len(of(effects, PublishNrt)) == 1
    rebuilt = model.state.allocations()
    assert list(rebuilt) == ["ns/p0", "ns/p5"] if release else ["ns/p0", "ns/p1", "ns/p5"]
    if expected == "unreadable":
        (event,) = events
        assert (event.type, event.reason) == ("Warning", MEMORY_STATE_UNREADABLE)
        assert f"node {NODE}: annotation {MEMORY_STATE_ANNOTATION}: " in event.message
        field = "not JSON" if recorded == "{not json" else "numa['0'].cells"
        assert field in event.message
    else:
        assert events == []
    records = of(effects, RecordMemoryCheckpoint)
    if expected == "not-static":
        assert records == []
        return
    if expected == "equal":
        assert rebuilt == first.nodes[NODE].state.allocations()
        assert records == []  # the rebuilt state is the recorded one: nothing to write
        return
    # Absent or unreadable: restored as before this check existed (p5's block finds no
    # room in the recomputed books, so p5 is admitted again), and the rebuilt state recorded.
    (warning,) = of(effects, RecordPodEvent)
    assert (warning.name, warning.reason) == ("p5", ALLOCATION_NOT_RESTORED)
    (record,) = records
    assert decode_memory_checkpoint(record.value) == model.state.memory_checkpoint()


def test_a_refused_node_ignores_its_pods_and_timers() -> None:
    _, survivors, live = run_history(release=True)
    clock = ManualClock()
    second = fleet(clock)
    second.start(survivors, {NODE: live})
    late = pod("late", NODE, cpu="1", memory="256Mi")
    assert second.pod_event("ADDED", late) == []
    assert second.pod_event("DELETED", survivors[0]) == []
    deleting = copy.deepcopy(survivors[1])
    deleting["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    assert second.pod_event("MODIFIED", deleting) == []
    assert second.resync([*survivors, late]) == []
    clock.advance(120)
    later = second.advance()  # heartbeats only: no start, completion or NRT refresh
    assert {type(e) for e in later} == {ReportNodeStatus, RenewLease}
    assert ready_condition(later)["status"] == "False"
    assert second.nodes[NODE].state.allocations() == {}


def test_a_changed_machine_is_refused_like_a_changed_reservation() -> None:
    """A checkpoint written for other allocatable memory (the profile changed) is refused,
    as the kubelet refuses its state file after a reservation change."""
    _, survivors, live = run_history(release=False)
    changed = json.loads(live)
    changed["numa"]["2"]["tables"]["memory"][0] -= 1
    second = fleet(ManualClock())
    effects = second.start(survivors, {NODE: json.dumps(changed)})
    model = second.nodes[NODE]
    assert model.refused is not None
    assert "NUMA node 2 has 4294967295 bytes of memory allocatable in the checkpoint" in (
        model.refused
    )
    assert ready_condition(effects)["status"] == "False"


def _node(kube: KubeClient, name: str) -> dict[str, Any]:
    return kube.get(path("api", "v1", "nodes", name))


def _ready(kube: KubeClient, name: str) -> dict[str, Any]:
    (ready,) = [c for c in _node(kube, name)["status"]["conditions"] if c["type"] == "Ready"]
    return dict(ready)


def _recorded_state(kube: KubeClient, name: str) -> str | None:
    annotations = _node(kube, name)["metadata"].get("annotations") or {}
    return annotations.get(MEMORY_STATE_ANNOTATION)


def _listed(state: Path, node: str) -> set[str]:
    client = PodResourcesClient(socket_path(state, node), timeout_s=5)
    try:
        return {p.name for p in client.list()}
    finally:
        client.close()


@pytest.mark.controlplane
@pytest.mark.usefixtures("nrt_crd")
def test_a_node_the_kubelet_would_not_restart_stays_down_until_its_state_is_removed(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    (broken, healthy) = make_profiles(
        best_effort_three(unique("fake")), best_effort_three(unique("fake"))
    )
    node, other, state = broken.name, healthy.name, tmp_path / "s"
    p0, p1, p5 = history(node, namespace)
    with running(kube, [broken, healthy], state_dir=state) as first:
        for manifest in (p0, p1):
            create_pod(kube, manifest)
            name = manifest["metadata"]["name"]
            wait_for(phase_of(kube, namespace, name, "Running"), what=f"{name} Running")
        kube.delete(
            path("api", "v1", "namespaces", namespace, "pods", "p1"), {"gracePeriodSeconds": 0}
        )
        wait_for(lambda: "p1" not in _listed(state, node), what="p1 released")
        create_pod(kube, p5)
        wait_for(phase_of(kube, namespace, "p5", "Running"), what="p5 Running")
        assert first.fleet is not None
        live = first.fleet.nodes[node].state
        assert live.restart_problem() == REFUSED.format(node=node)
    # The recorded state is the live one (the controller stopped after its writes).
    checkpoint = live.memory_checkpoint()
    recorded = _recorded_state(kube, node)
    assert recorded is not None and decode_memory_checkpoint(recorded) == checkpoint
    versions = {n: get_pod(kube, namespace, n)["metadata"]["resourceVersion"] for n in ("p0", "p5")}
    nrt = kube.get(path("apis", "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", node))

    with running(kube, [broken, healthy], state_dir=state) as second:
        ready = wait_for(
            lambda: (r := _ready(kube, node))["status"] == "False" and r, what="NotReady"
        )
        assert ready["reason"] == MEMORY_STATE_INVALID
        assert REFUSED.format(node=node) in ready["message"]
        events, _ = kube.list_all(
            path("api", "v1", "namespaces", "default", "events"),
            fieldSelector=f"involvedObject.name={node},source=kubelet",
        )  # the kubelet's only: the node lifecycle controller records RegisteredNode
        assert [(e["type"], e["reason"]) for e in events] == [("Warning", MEMORY_STATE_INVALID)]
        assert events[0]["involvedObject"]["kind"] == "Node"
        # A pod bound to it is not admitted; the healthy node's pod, bound after it (one
        # watch, in order), runs.
        create_pod(kube, pod("p6", node, namespace=namespace, cpu="1", memory="256Mi"))
        create_pod(kube, pod("q", other, namespace=namespace, cpu="1", memory="256Mi"))
        wait_for(phase_of(kube, namespace, "q", "Running"), what="q Running")
        assert _ready(kube, other)["status"] == "True"
        assert (get_pod(kube, namespace, "p6").get("status") or {}).get("phase") == "Pending"
        assert get_pod(kube, namespace, "p6")["metadata"].get("annotations") in (None, {})
        # The pods it held are neither restored nor written; no socket, no NRT write.
        assert second.fleet is not None
        assert second.fleet.nodes[node].state.allocations() == {}
        for name, version in versions.items():
            assert get_pod(kube, namespace, name)["metadata"]["resourceVersion"] == version
        assert not socket_path(state, node).exists()
        assert socket_path(state, other).exists()
        nrt_now = kube.get(
            path("apis", "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", node)
        )
        assert nrt_now["metadata"]["resourceVersion"] == nrt["metadata"]["resourceVersion"]
        assert _recorded_state(kube, node) == recorded  # left for the operator

    # The operator removes the recorded state (the kubelet's state file) and restarts.
    kube.patch(
        path("api", "v1", "nodes", node),
        {"metadata": {"annotations": {MEMORY_STATE_ANNOTATION: None}}},
    )
    with running(kube, [broken, healthy], state_dir=state) as third:
        wait_for(phase_of(kube, namespace, "p6", "Running"), what="p6 admitted after recovery")
        wait_for(lambda: _ready(kube, node)["status"] == "True", what="Ready again")
        assert third.fleet is not None
        assert {"p0", "p5", "p6"} <= _listed(state, node)
        wait_for(lambda: _recorded_state(kube, node), what="the rebuilt state recorded")


def _ready_of(node: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "Ready"]
    return dict(ready[0]) if ready else None


def _readiness_seen(
    kube: KubeClient,
    name: str,
    version: str,
    before: dict[str, Any],
    *,
    until: Callable[[dict[str, Any]], bool],
) -> list[dict[str, Any]]:
    """Every Ready condition the Node ``name`` carried after ``version`` (when it was
    ``before``), from a watch (so no write can slip between two reads), up to the first one
    ``until`` accepts. A write that leaves the condition as it was (another writer's: the
    session's kube-controller-manager annotates and taints nodes) is not a new condition."""
    seen: list[dict[str, Any]] = []
    last = before
    for event in kube.watch(
        path("api", "v1", "nodes"),
        resource_version=version,
        timeout_s=30,
        fieldSelector=f"metadata.name={name}",
    ):
        if event.get("type") == "BOOKMARK":
            continue
        ready = _ready_of(event["object"])
        if ready is None or ready == last:
            continue
        last = ready
        seen.append(ready)
        if until(ready):
            return seen
    raise AssertionError(f"node {name}: the watch ended before it settled; saw {seen}")


@pytest.mark.controlplane
@pytest.mark.usefixtures("nrt_crd")
def test_a_node_the_kubelet_would_not_restart_is_never_reported_ready(
    kube: KubeClient, tmp_path: Path
) -> None:
    """A kubelet that refuses to start never posts Ready=True: from before the restart until
    the controller has settled, the refused node's every write says Ready False, while the
    healthy node restarted alongside is reported Ready as before."""
    (broken, healthy) = make_profiles(
        best_effort_three(unique("fake")), best_effort_three(unique("fake"))
    )
    node, other, state = broken.name, healthy.name, tmp_path / "s"
    first_clock = ManualClock()
    with running(kube, [broken, healthy], clock=first_clock, state_dir=state):
        recorded = wait_for(lambda: _recorded_state(kube, node), what="the state recorded")
    # A checkpoint written for another machine (one byte less allocatable on NUMA node 2),
    # which the kubelet refuses as it refuses its state file after a reservation change.
    changed = json.loads(recorded)
    changed["numa"]["2"]["tables"]["memory"][0] -= 1
    kube.patch(
        path("api", "v1", "nodes", node),
        {"metadata": {"annotations": {MEMORY_STATE_ANNOTATION: json.dumps(changed)}}},
    )
    versions = {n: _node(kube, n)["metadata"]["resourceVersion"] for n in (node, other)}
    before = {n: _ready(kube, n) for n in (node, other)}
    assert before[node]["status"] == "True"  # what the first controller left

    # A later start, so every status the second controller writes is a change.
    second_clock = ManualClock(first_clock.now + 60)
    with running(kube, [broken, healthy], clock=second_clock, state_dir=state):
        refused = _readiness_seen(
            kube,
            node,
            versions[node],
            before[node],
            until=lambda r: r["reason"] == MEMORY_STATE_INVALID,
        )
        restarted = _readiness_seen(
            kube,
            other,
            versions[other],
            before[other],
            until=lambda r: r["lastHeartbeatTime"] == rfc3339(second_clock.now),
        )
    assert [r["status"] for r in refused] == ["False"]
    assert restarted[-1]["status"] == "True"
    assert {r["status"] for r in restarted} == {"True"}
