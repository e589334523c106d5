"""The controller core in simulated time: admission in bind order, rejection the way the
kubelet reports it, lifecycle timers, NRT lag and coalescing, restart recovery, seeds."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from fakenrt.controller.effects import (
    DeletePod,
    Effect,
    PatchPodStatus,
    PublishNrt,
    RecordPodEvent,
    Rendered,
    ServePodResources,
)
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.node import ALLOCATION_NOT_RESTORED
from fakenrt.controller.nodeobjects import NodeIdentity
from fakenrt.controller.pods import (
    ALLOCATION_ANNOTATION,
    RUN_DURATION_ANNOTATION,
    SEQUENCE_ANNOTATION,
)
from fakenrt.controller.settings import ControllerSettings
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.allocation_codec import decode_allocation, encode_allocation
from fakenrt.profiles import NodeProfile
from tests.controller.conftest import ManualClock, make_profiles, two_numa_profile
from tests.controller.podmanifests import pod

NODE = "n1"


def fleet(
    clock: ManualClock, profiles: Sequence[NodeProfile] | None = None, **settings: Any
) -> Fleet:
    profiles = profiles or make_profiles(two_numa_profile(NODE))
    nodes = [(p, NodeIdentity(p.name, i)) for i, p in enumerate(profiles)]
    return Fleet(nodes, ControllerSettings(nrt_refresh=0, **settings), clock=clock)


def of(effects: Sequence[Effect], kind: type) -> list[Any]:
    return [e for e in effects if isinstance(e, kind)]


def available(body: Any, zone: str, resource: str) -> int:
    for z in body["zones"]:
        if z["name"] == zone:
            for r in z["resources"]:
                if r["name"] == resource:
                    return int(r["available"])
    raise KeyError((zone, resource))


def started(f: Fleet) -> Fleet:
    f.start([])
    return f


def test_admitted_pod_runs_holds_its_resources_and_is_published_at_once(
    clock: ManualClock,
) -> None:
    f = started(fleet(clock))
    effects = f.pod_event("ADDED", pod("a", NODE, cpu="2", gpus=1))
    (patch,) = of(effects, PatchPodStatus)
    assert patch.status["phase"] == "Running"
    assert patch.status["podIP"] == "10.1.0.2"  # node 0's pod CIDR, first pod address
    assert all(c["ready"] for c in patch.status["containerStatuses"])
    (served,) = of(effects, ServePodResources)
    (alloc,) = served.allocations
    # One patch records the admission order and the allocation (for a restart).
    assert patch.annotations == {
        SEQUENCE_ANNOTATION: "1",
        ALLOCATION_ANNOTATION: encode_allocation(alloc),
    }
    assert alloc.key == "ns/a" and len(alloc.containers[0].cpus) == 2
    (nrt,) = of(effects + f.advance(), PublishNrt)
    zone = f"node-{min(served.allocations[0].containers[0].cpus) // 4}"
    assert available(nrt.body, zone, "cpu") == 2
    assert available(nrt.body, zone, "nvidia.com/gpu") == 1
    # Status echoes of our own writes change nothing.
    assert f.pod_event("MODIFIED", pod("a", NODE, uid=alloc.uid)) == []


def test_topology_affinity_error_fails_the_pod_and_records_a_warning(clock: ManualClock) -> None:
    f = started(fleet(clock))
    effects = f.pod_event("ADDED", pod("big", NODE, cpu="1", gpus=3))  # 2 GPUs per zone
    (patch,) = of(effects, PatchPodStatus)
    assert patch.status == {
        "phase": "Failed",
        "reason": "TopologyAffinityError",
        "message": "Pod was rejected: Resources cannot be allocated with Topology locality",
    }
    (event,) = of(effects, RecordPodEvent)
    assert (event.type, event.reason, event.message) == (
        "Warning",
        "TopologyAffinityError",
        "Resources cannot be allocated with Topology locality",
    )
    assert of(effects, ServePodResources) == []
    assert f.nodes[NODE].state.allocations() == {}


def test_whole_node_misfit_is_rejected_with_the_kubelet_reason(clock: ManualClock) -> None:
    f = started(fleet(clock))
    effects = f.pod_event("ADDED", pod("wide", NODE, cpu="20", guaranteed=False))
    (patch,) = of(effects, PatchPodStatus)
    assert patch.status["phase"] == "Failed" and patch.status["reason"] == "OutOfcpu"
    assert patch.status["message"].startswith(
        "Pod was rejected: Node didn't have enough resource: cpu"
    )


def test_bind_order_decides_who_gets_the_last_zone(clock: ManualClock) -> None:
    f = started(fleet(clock))
    first = f.pod_event("ADDED", pod("p1", NODE, cpu="4"))
    second = f.pod_event("ADDED", pod("p2", NODE, cpu="4"))
    third = f.pod_event("ADDED", pod("p3", NODE, cpu="1"))
    phases = [of(e, PatchPodStatus)[0].status["phase"] for e in (first, second, third)]
    assert phases == ["Running", "Running", "Failed"]


def test_start_delay_then_completion_releases(clock: ManualClock) -> None:
    f = started(fleet(clock, start_delay=2.0))
    effects = f.pod_event(
        "ADDED", pod("j", NODE, cpu="2", annotations={RUN_DURATION_ANNOTATION: "1m"})
    )
    (pending,) = of(effects, PatchPodStatus)
    assert pending.status["phase"] == "Pending"
    assert (
        pending.status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    )
    f.advance()
    clock.advance(1.9)
    assert of(f.advance(), PatchPodStatus) == []
    clock.advance(0.1)
    (running,) = of(f.advance(), PatchPodStatus)
    assert running.status["phase"] == "Running"
    clock.advance(59.9)
    assert of(f.advance(), PatchPodStatus) == []
    clock.advance(0.1)
    effects = f.advance()
    (done,) = of(effects, PatchPodStatus)
    assert done.status["phase"] == "Succeeded"
    assert of(effects, ServePodResources)[0].allocations == ()
    (nrt,) = of(effects, PublishNrt)
    assert available(nrt.body, "node-0", "cpu") + available(nrt.body, "node-1", "cpu") == 8


def test_deletion_releases_then_removes_the_pod(clock: ManualClock) -> None:
    f = started(fleet(clock))
    manifest = pod("d", NODE, cpu="3")
    f.pod_event("ADDED", manifest)
    deleting = copy.deepcopy(manifest)
    deleting["metadata"]["deletionTimestamp"] = "2027-01-01T00:01:00Z"
    effects = f.pod_event("MODIFIED", deleting)
    assert of(effects, DeletePod) == [DeletePod(NODE, "ns", "d", manifest["metadata"]["uid"])]
    assert of(effects, ServePodResources)[0].allocations == ()
    assert of(f.pod_event("MODIFIED", deleting), DeletePod) == []  # asked once
    assert f.pod_event("DELETED", deleting) == []


def test_lag_nrt_unchanged_before_delay_and_changes_coalesced(clock: ManualClock) -> None:
    f = fleet(clock, nrt_delay=5.0, nrt_jitter=2.0, seed=3)
    (initial,) = of(f.start([]), PublishNrt)
    f.pod_event("ADDED", pod("a", NODE, cpu="1"))
    clock.advance(0.5)
    f.pod_event("ADDED", pod("b", NODE, cpu="1"))
    assert of(f.advance(), PublishNrt) == []
    clock.advance(4.49)  # 4.99 s after the first change: nothing may be visible yet
    assert of(f.advance(), PublishNrt) == []
    clock.advance(10)
    (published,) = of(f.advance(), PublishNrt)  # both changes, one write
    free = sum(available(published.body, z, "cpu") for z in ("node-0", "node-1"))
    assert free == 8 - 2
    assert published.body != initial.body


def test_a_profile_gives_a_node_its_own_lag(clock: ManualClock) -> None:
    """``nrt: {delay, jitter}`` in a profile overrides --nrt-delay / --nrt-jitter for that
    node only: the fast node publishes at once, the other waits the controller's 30 s."""
    fast = {**two_numa_profile("fast"), "nrt": {"delay": "0s", "jitter": 0}}
    f = fleet(clock, make_profiles(fast, two_numa_profile("slow")), nrt_delay=30.0)
    f.start([])
    published = of(f.pod_event("ADDED", pod("a", "fast", cpu="1")), PublishNrt)
    assert [p.node for p in published] == ["fast"]
    assert of(f.pod_event("ADDED", pod("b", "slow", cpu="1")), PublishNrt) == []
    clock.advance(29.9)
    assert of(f.advance(), PublishNrt) == []
    clock.advance(0.2)
    assert [p.node for p in of(f.advance(), PublishNrt)] == ["slow"]


def test_seed_reproduces_every_effect(clock: ManualClock) -> None:
    def run(seed: int) -> list[Effect]:
        c = ManualClock()
        f = fleet(c, nrt_delay=1.0, nrt_jitter=3.0, seed=seed)
        out = list(f.start([]))
        for i in range(6):
            out += f.pod_event("ADDED", pod(f"p{i}", NODE, cpu="1", uid=f"u{i}"))
            c.advance(0.7)
            out += f.advance()
        times: list[float] = []
        while f.next_due() is not None and len(times) < 20:
            c.now = f.next_due() or 0.0
            times.append(c.now)
            out += f.advance()
        return [*out, PublishNrt("times", {"t": times})]

    assert run(11) == run(11)
    assert run(11) != run(12)


def _as_api_sees_it(
    f: Fleet, manifests: list[dict[str, Any]], effects: list[Effect]
) -> list[dict[str, Any]]:
    """Apply the status patches to the manifests, as the API server would."""
    by_uid = {m["metadata"]["uid"]: m for m in manifests}
    for e in effects:
        if isinstance(e, PatchPodStatus) and e.uid in by_uid:
            m = by_uid[e.uid]
            m["status"].update(e.status)
            m["metadata"]["annotations"].update(e.annotations)
    return manifests


def test_restart_readmits_in_original_order_without_double_allocation(clock: ManualClock) -> None:
    f1 = started(fleet(clock))
    manifests = [
        pod(f"p{i}", NODE, cpu="2", gpus=1, created=f"2027-01-01T00:00:0{9 - i}Z") for i in range(4)
    ]
    effects: list[Effect] = []
    for m in manifests:  # bind order differs from creation order on purpose
        effects += f1.pod_event("ADDED", m)
    before = f1.nodes[NODE].state.allocations()
    assert len(before) == 4

    f2 = fleet(ManualClock())
    restart = f2.start(_as_api_sees_it(f2, copy.deepcopy(manifests), effects))
    after = f2.nodes[NODE].state.allocations()
    assert list(after) == list(before)  # same admission order
    assert after == before  # same CPUs, GPUs and memory as before the restart
    assert of(restart, PatchPodStatus) == []  # running pods keep their status
    (nrt,) = of(restart, PublishNrt)
    assert available(nrt.body, "node-0", "cpu") + available(nrt.body, "node-1", "cpu") == 0
    cpus = [c for a in after.values() for c in a.containers[0].cpus]
    assert len(cpus) == len(set(cpus)) == 8


def test_restart_after_releases_holds_each_resource_once(clock: ManualClock) -> None:
    f1 = started(fleet(clock))
    manifests = [pod(f"p{i}", NODE, cpu="1", gpus=1) for i in range(4)]
    effects: list[Effect] = []
    for m in manifests:
        effects += f1.pod_event("ADDED", m)
    gone = manifests.pop(1)
    effects += f1.pod_event("DELETED", gone)
    effects += f1.pod_event("ADDED", pod("late", NODE, cpu="1", gpus=1))
    survivors = _as_api_sees_it(f1, manifests, effects)
    late = pod("late", NODE, cpu="1", gpus=1, uid=f1.nodes[NODE].state.allocations()["ns/late"].uid)
    late["status"]["phase"] = "Running"
    late["status"]["startTime"] = "2027-01-01T00:00:00Z"
    late["metadata"]["annotations"][SEQUENCE_ANNOTATION] = "5"

    f2 = fleet(ManualClock())
    f2.start([*survivors, late])
    after = f2.nodes[NODE].state.allocations()
    assert list(after) == ["ns/p0", "ns/p2", "ns/p3", "ns/late"]
    gpus = [g for a in after.values() for g in a.containers[0].devices["nvidia.com/gpu"]]
    assert len(gpus) == len(set(gpus)) == 4
    # New admissions continue the sequence after the highest one recovered.
    (patch,) = of(f2.pod_event("ADDED", pod("next", NODE, cpu="1")), PatchPodStatus)
    assert patch.annotations[SEQUENCE_ANNOTATION] == "6"
    # The same patch records the allocation (the controller's checkpoint).
    recorded = decode_allocation(
        patch.annotations[ALLOCATION_ANNOTATION], namespace="ns", name="next"
    )
    assert recorded == f2.nodes[NODE].state.allocations()["ns/next"]


def _recorded(effects: Sequence[Effect], name: str) -> PodAllocation:
    (patch,) = [
        e
        for e in of(effects, PatchPodStatus)
        if ALLOCATION_ANNOTATION in e.annotations and e.name == name
    ]
    return decode_allocation(patch.annotations[ALLOCATION_ANNOTATION], namespace="ns", name=name)


def test_restart_restores_recorded_allocations_exactly(clock: ManualClock) -> None:
    """Admit a and b, release a, admit c (which takes a's CPUs and GPU): re-admitting b and
    c in order would move b into a's old place. The recorded allocations bring back
    exactly what each pod held."""
    f1 = started(fleet(clock))
    a, b, c = (pod(n, NODE, cpu="2", gpus=1) for n in ("a", "b", "c"))
    effects = f1.pod_event("ADDED", a) + f1.pod_event("ADDED", b)
    effects += f1.pod_event("DELETED", a)
    effects += f1.pod_event("ADDED", c)
    before = f1.nodes[NODE].state.allocations()
    assert before["ns/c"].containers[0] == _recorded(effects, "a").containers[0]  # a's place
    assert _recorded(effects, "b") == before["ns/b"]

    f2 = fleet(ManualClock())
    restart = f2.start(_as_api_sees_it(f2, copy.deepcopy([b, c]), effects))
    after = f2.nodes[NODE].state.allocations()
    assert after == before and list(after) == ["ns/b", "ns/c"]
    # Each pod keeps its IP (c took a's freed address, so first-free order would swap them).
    hosts = {k: t.ip_host for k, t in f1.nodes[NODE].pods.items() if k != "ns/a"}
    assert hosts == {"ns/b": 3, "ns/c": 2}
    assert {k: t.ip_host for k, t in f2.nodes[NODE].pods.items()} == hosts
    assert of(restart, PatchPodStatus) == []  # nothing new to record
    (served,) = of(restart, ServePodResources)
    assert served.allocations == tuple(before.values())


@pytest.mark.parametrize(
    ("target", "bad", "expected"),
    [
        pytest.param("a", "{not json", ("not JSON", ["b", "a"]), id="unreadable"),
        pytest.param("b", "a's", ("is already held", ["a", "b"]), id="no-longer-applies"),
    ],
)
def test_an_allocation_that_cannot_be_restored_is_reported_and_the_pod_admitted_again(
    clock: ManualClock,
    target: str,
    bad: str,
    expected: tuple[str, list[str]],
) -> None:
    """Restored pods come first, in their order; then the others are admitted again."""
    reason, order = expected
    f1 = started(fleet(clock))
    a, b = pod("a", NODE, cpu="2", gpus=1), pod("b", NODE, cpu="2", gpus=1)
    effects = f1.pod_event("ADDED", a) + f1.pod_event("ADDED", b)
    held = f1.nodes[NODE].state.allocations()
    manifests = {m["metadata"]["name"]: m for m in _as_api_sees_it(f1, [a, b], effects)}
    if bad == "a's":  # b's record claims a's CPUs and GPU
        bad = encode_allocation(replace(held["ns/a"], name="b", uid=held["ns/b"].uid))
    manifests[target]["metadata"]["annotations"][ALLOCATION_ANNOTATION] = bad

    f2 = fleet(ManualClock())
    restart = f2.start(list(manifests.values()))
    (warning,) = of(restart, RecordPodEvent)
    assert (warning.name, warning.type, warning.reason) == (
        target,
        "Warning",
        ALLOCATION_NOT_RESTORED,
    )
    assert f"{ALLOCATION_ANNOTATION} not restored" in warning.message
    assert reason in warning.message
    after = f2.nodes[NODE].state.allocations()
    assert list(after) == [f"ns/{n}" for n in order]  # restored first, then re-admitted
    assert after == held
    (patch,) = of(restart, PatchPodStatus)  # the re-admitted pod's allocation is recorded
    assert patch.name == target
    assert _recorded([patch], target) == after[f"ns/{target}"]


def test_pods_of_other_nodes_are_ignored(clock: ManualClock) -> None:
    f = started(fleet(clock))
    assert f.pod_event("ADDED", pod("x", "someone-else", cpu="1")) == []


@pytest.mark.parametrize(
    "value", [pytest.param("soon", id="word"), pytest.param("-1s", id="negative")]
)
def test_invalid_run_duration_is_reported_and_the_pod_keeps_running(
    clock: ManualClock, value: str
) -> None:
    f = started(fleet(clock))
    effects = f.pod_event("ADDED", pod("r", NODE, annotations={RUN_DURATION_ANNOTATION: value}))
    (event,) = of(effects, RecordPodEvent)
    assert event.reason == "InvalidRunDuration" and RUN_DURATION_ANNOTATION in event.message
    assert of(effects, PatchPodStatus)[0].status["phase"] == "Running"
    clock.advance(10**6)
    assert of(f.advance(), PatchPodStatus) == []


def test_relist_after_a_lost_watch_releases_the_gone_and_admits_the_new(
    clock: ManualClock,
) -> None:
    f = started(fleet(clock))
    kept, gone = pod("kept", NODE, cpu="2"), pod("gone", NODE, cpu="2")
    effects = f.pod_event("ADDED", kept) + f.pod_event("ADDED", gone)
    listed = _as_api_sees_it(f, [copy.deepcopy(kept)], effects)
    fresh = pod("fresh", NODE, cpu="1")
    effects = f.resync([*listed, fresh])
    assert list(f.nodes[NODE].state.allocations()) == ["ns/kept", "ns/fresh"]
    assert [p.name for p in of(effects, PatchPodStatus)] == ["fresh"]


@pytest.mark.parametrize("start_delay", [0.0, 5.0])
def test_bodies_rendered_when_written_say_what_their_known_items_say(
    clock: ManualClock, start_delay: float
) -> None:
    """The core's effects render their API bodies when first read (Rendered); the items a
    simulation reads without rendering (a status's phase) are the rendered ones, and a
    first admission's annotations are the sequence number and the recorded allocation."""
    f = fleet(clock, start_delay=start_delay, default_run_duration=30.0)
    effects = list(f.start([]))
    effects += f.pod_event("ADDED", pod("a", NODE, cpu="2", gpus=1))
    effects += f.pod_event("ADDED", pod("huge", NODE, cpu="64"))
    for _ in range(3):
        clock.advance(20)
        effects += f.advance()
    checked = 0
    for effect in effects:
        for body in (getattr(effect, "status", None), getattr(effect, "annotations", None)):
            if isinstance(body, Rendered):
                rendered = dict(body.rendered())
                assert {k: rendered[k] for k in body.known} == body.known
                checked += 1
        if isinstance(effect, PublishNrt):
            assert dict(effect.body)["kind"] == "NodeResourceTopology"
    assert checked >= 3
    (admitted,) = [
        e
        for e in of(effects, PatchPodStatus)
        if e.name == "a" and SEQUENCE_ANNOTATION in e.annotations
    ]
    assert set(admitted.annotations) == {SEQUENCE_ANNOTATION, ALLOCATION_ANNOTATION}
    phases = [dict(e.status).get("phase") for e in of(effects, PatchPodStatus) if e.name == "a"]
    expected = ["Running", "Succeeded"] if not start_delay else ["Pending", "Running", "Succeeded"]
    assert phases == expected
