"""Admission decisions kept by node state and pod shape (fakenrt.kubelet.admission_memo)
decide exactly as admissions computed afresh: over random profiles and random admit /
release sequences, nodes that share a memo (the same profile under other names, going
through the same states) give the same results and end in the same states as a node
that computes every admission (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet import admission_memo
from fakenrt.kubelet.admission_memo import AdmissionMemo, Decided, shared_memo
from fakenrt.kubelet.allocation import AdmissionResult
from fakenrt.kubelet.node import NodeState
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import GI, node, pod
from tests.kubelet.test_properties import pods, profiles


def _same_state(a: NodeState, b: NodeState) -> None:
    assert a.allocations() == b.allocations()
    assert a.zone_usage() == b.zone_usage()
    assert a.zone_free() == b.zone_free()
    assert a.memory_checkpoint() == b.memory_checkpoint()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(profiles(), st.data())
def test_kept_decisions_are_the_decisions(profile: NodeProfile, data: st.DataObject) -> None:
    hugepages = any(z.hugepages for z in profile.zones)
    # A few shapes used again and again, so that states and shapes recur across nodes.
    shapes = [data.draw(pods(i, hugepages)) for i in range(data.draw(st.integers(1, 3)))]
    runs = []
    for _ in range(3):
        steps: list[tuple[int, PodSpec | None]] = []
        for step in range(data.draw(st.integers(1, 12))):
            if data.draw(st.integers(0, 2)) == 0:
                steps.append((data.draw(st.integers(0, 9)), None))
            else:
                shape = data.draw(st.sampled_from(shapes))
                steps.append((step, replace(shape, name=f"p{step}", uid=f"u{step}")))
        runs.append(steps)
    # Every run on a node that computes every admission, and on a node of the same
    # profile (under another name) that shares the memo with the others.
    for i, steps in enumerate(runs * 2):
        fresh = NodeState.from_profile(profile, remember=False)
        kept = NodeState.from_profile(replace(profile, name=f"{profile.name}-{i}"))
        assert _run(kept, steps) == _run(fresh, steps)
        _same_state(kept, fresh)


def _run(state: NodeState, steps: list[tuple[int, PodSpec | None]]) -> list[AdmissionResult]:
    results = []
    for index, spec in steps:
        if spec is None:
            admitted = list(state.allocations())
            if admitted:
                state.release(admitted[index % len(admitted)])
            continue
        results.append(state.admit(spec))
    return results


def test_a_kept_decision_is_reused_for_another_pod_of_the_shape_on_another_node() -> None:
    profile = node(zones=2, cpus_per_zone=4, memory=4 * GI, devices={"nvidia.com/gpu": 2})
    a = NodeState.from_profile(replace(profile, name="a"))
    b = NodeState.from_profile(replace(profile, name="b"))
    memo = shared_memo(replace(profile, name="a"))
    assert memo is shared_memo(replace(profile, name="b"))
    spec = pod("p", {"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}})
    first = a.admit(spec)
    size = len(memo)
    second = b.admit(replace(spec, name="q", uid="other"))
    assert len(memo) == size  # decided once
    assert first.allocation is not None and second.allocation is not None
    assert second.allocation.name == "q" and second.allocation.uid == "other"
    assert second.allocation.containers == first.allocation.containers
    # A pod of that shape that names another node is not that decision.
    elsewhere = b.admit(replace(spec, name="r", node_name="a"))
    assert not elsewhere.admit and elsewhere.reason == "NodeName"


def test_the_memos_are_bounded_together() -> None:
    memos = [AdmissionMemo() for _ in range(3)]
    decided = Decided(False, "R", "m", ())
    for i in range(admission_memo.MAX_KEPT):
        for memo in memos:
            memo.put((i,), decided)
    assert len(admission_memo._KEPT) <= admission_memo.MAX_KEPT
    assert memos[2].get((admission_memo.MAX_KEPT - 1,)) is decided


def test_the_shared_memos_are_bounded() -> None:
    for i in range(admission_memo.MAX_PROFILES + 5):
        shared_memo(node(zones=1, cpus_per_zone=2, memory=GI, max_pods=1000 + i))
    assert len(admission_memo._SHARED) <= admission_memo.MAX_PROFILES


def test_states_that_differ_only_in_devices_or_pod_count_are_told_apart() -> None:
    gpu = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    profile = node(zones=2, cpus_per_zone=2, memory=4 * GI, devices={"nvidia.com/gpu": 2})
    x, y = (NodeState.from_profile(replace(profile, name=n)) for n in ("x", "y"))
    for state, gone in ((x, "default/a"), (y, "default/b")):
        state.admit(pod("a", gpu))
        state.admit(pod("b", gpu))
        state.release(gone)
    on_x, on_y = x.admit(pod("c", gpu)), y.admit(pod("c", gpu))
    assert on_x.allocation is not None and on_y.allocation is not None
    assert on_x.allocation.containers[0].devices != on_y.allocation.containers[0].devices
    one = node(zones=1, cpus_per_zone=2, memory=GI, max_pods=1)
    empty, full = (NodeState.from_profile(replace(one, name=n)) for n in ("e", "f"))
    full.admit(pod("held", {"name": "c"}))
    assert empty.admit(pod("p", {"name": "c"})).admit
    assert full.admit(pod("p", {"name": "c"})).reason == "OutOfpods"
