"""``NodeState.restore``: a recorded allocation applied exactly, as a restarted kubelet
restores its checkpoints - the same state as the original admissions, and a clear error
for an allocation that cannot be applied."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.allocation import (
    INIT,
    REGULAR,
    AdmissionResult,
    ContainerAllocation,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.restore import RestoreError
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import GI, container, node, pod
from tests.kubelet.test_properties import check_invariants, pods, profiles


def _memory_groups(allocations: list[PodAllocation]) -> set[frozenset[int]]:
    return {b.numa for a in allocations for c in a.containers for b in c.memory if len(b.numa) > 1}


def _books(state: NodeState, groups: set[frozenset[int]]) -> dict[str, object]:
    """What must survive a restore when multi-NUMA memory blocks were released on the way:
    everything but the per-node split of memory inside a multi-NUMA group, which - as the
    kubelet's own ``areMachineStatesEqual`` - is compared by group totals."""
    usage, free = state.zone_usage(), state.zone_free()
    grouped = {z for g in groups for z in g}
    exact = {
        (z, r): (usage[z][r], free[z].get(r))
        for z in usage
        for r in usage[z]
        if z not in grouped or not (r == "memory" or r.startswith("hugepages-"))
    }
    totals = {
        (tuple(sorted(g)), r): (sum(usage[z][r] for z in g), sum(free[z][r] for z in g))
        for g in groups
        for r in usage[min(g)]
        if r == "memory" or r.startswith("hugepages-")
    }
    return {"exact": exact, "groups": totals}


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(profiles(), st.data())
def test_restoring_the_survivors_rebuilds_the_node(
    profile: NodeProfile, data: st.DataObject
) -> None:
    hugepages = any(z.hugepages for z in profile.zones)
    original = NodeState.from_profile(profile)
    specs: dict[str, PodSpec] = {}
    ever: list[PodAllocation] = []
    released = False
    for step in range(data.draw(st.integers(1, 10), label="steps")):
        admitted = list(original.allocations())
        if admitted and data.draw(st.integers(0, 2)) == 0:
            original.release(data.draw(st.sampled_from(admitted)))
            released = True
        else:
            spec = data.draw(pods(step, hugepages))
            result = original.admit(spec)
            if result.allocation is not None:
                specs[spec.key] = spec
                ever.append(result.allocation)

    rebuilt = NodeState.from_profile(profile)
    for key, allocation in original.allocations().items():
        rebuilt.restore(specs[key], allocation)
    check_invariants(rebuilt)
    assert rebuilt.allocations() == original.allocations()
    assert list(rebuilt.allocations()) == list(original.allocations())  # admission order

    groups = _memory_groups(ever)
    exact = not (released and groups)
    event("memory books: " + ("exact" if exact else "group totals"))
    if not exact:  # see _books; later admissions may differ only through that split
        assert _books(rebuilt, groups) == _books(original, groups)
        return
    assert rebuilt.zone_usage() == original.zone_usage()
    assert rebuilt.zone_free() == original.zone_free()
    further = data.draw(pods(99, hugepages), label="further pod")
    want, got = original.admit(further), rebuilt.admit(further)
    event(f"further pod: {want.reason or 'admitted'}")
    assert _verdict(got) == _verdict(want)
    assert rebuilt.zone_usage() == original.zone_usage()
    assert rebuilt.zone_free() == original.zone_free()


def _verdict(result: AdmissionResult) -> tuple[object, ...]:
    return (result.admit, result.reason, result.message, result.hints, result.allocation)


def test_release_after_restore_gives_everything_back() -> None:
    profile = node(devices={"nvidia.com/gpu": 2}, hugepages={"hugepages-1Gi": 2 * GI})
    first = NodeState.from_profile(profile)
    spec = pod("p", container("c0", cpu=2, gpu=1, hugepages_1Gi="1Gi"))
    result = first.admit(spec)
    assert result.allocation is not None
    state = NodeState.from_profile(profile)
    initial = (state.zone_usage(), state.zone_free())
    state.restore(spec, result.allocation)
    assert state.zone_usage() == first.zone_usage()
    state.release(spec.key)
    assert (state.zone_usage(), state.zone_free()) == initial


def test_init_container_ids_handed_on_are_restored() -> None:
    """A regular init container's CPUs and devices are reused by the app container: the
    same ids in two containers of one pod are fine."""
    profile = node(devices={"nvidia.com/gpu": 2})
    spec = pod("p", container("app", cpu=2, gpu=1), init=[container("setup", cpu=2, gpu=1)])
    first = NodeState.from_profile(profile)
    result = first.admit(spec)
    assert result.allocation is not None
    setup, app = result.allocation.containers
    assert setup.kind == INIT and setup.cpus == app.cpus and setup.devices == app.devices
    state = NodeState.from_profile(profile)
    state.restore(spec, result.allocation)
    assert state.zone_usage() == first.zone_usage()
    assert state.zone_free() == first.zone_free()


# -- rejections ---------------------------------------------------------------------------

GPU = "nvidia.com/gpu"
POD = pod("p", container("c0", cpu=2, memory="1Gi", gpu=1))


def _profile(**overrides: Any) -> NodeProfile:
    args: dict[str, Any] = {
        "devices": {GPU: 2},
        "unhealthy": {GPU: 1},
        "reserved": frozenset({0}),
        "memory": 4 * GI,
    }
    args.update(overrides)
    return node(**args)


def _allocation(
    *,
    cpus: frozenset[int] = frozenset({1, 2}),
    devices: tuple[str, ...] = ("gpu-0-1",),
    memory: tuple[MemoryBlock, ...] = (MemoryBlock("memory", GI, frozenset({0})),),
    name: str = "c0",
    uid: str = "",
) -> PodAllocation:
    c = ContainerAllocation(name, cpus, {GPU: devices}, memory, REGULAR)
    return PodAllocation("default", "p", uid, (c,))


def _holder(state: NodeState) -> None:
    """Another pod holding CPU 1, gpu-0-1 and all the memory of NUMA node 0."""
    other = pod("other", container("c0", cpu=1, memory="4Gi", gpu=1))
    block = MemoryBlock("memory", 4 * GI, frozenset({0}))
    held = ContainerAllocation("c0", frozenset({1}), {GPU: ("gpu-0-1",)}, (block,), REGULAR)
    state.restore(other, PodAllocation("default", "other", "", (held,)))


REJECTIONS = [
    pytest.param(
        {},
        {"cpus": frozenset({1, 99})},
        False,
        "container c0: cpu 99 does not exist",
        id="unknown-cpu",
    ),
    pytest.param(
        {},
        {"cpus": frozenset({0, 1})},
        False,
        "container c0: cpu 0 is reserved",
        id="reserved-cpu",
    ),
    pytest.param(
        {},
        {"cpus": frozenset({1, 2})},
        True,
        "container c0: cpu 1 is already held",
        id="cpu-held",
    ),
    pytest.param(
        {"cpu_policy": "none"},
        {},
        False,
        "cpuManagerPolicy is none",
        id="cpus-without-static",
    ),
    pytest.param(
        {},
        {"devices": ("gpu-7-7",)},
        False,
        "container c0: nvidia.com/gpu device gpu-7-7 does not exist",
        id="unknown-device",
    ),
    pytest.param(
        {},
        {"devices": ("gpu-0-0",)},
        False,
        "container c0: nvidia.com/gpu device gpu-0-0 is unhealthy",
        id="unhealthy-device",
    ),
    pytest.param(
        {},
        {"cpus": frozenset({2, 3})},
        True,
        "container c0: nvidia.com/gpu device gpu-0-1 is already held",
        id="device-held",
    ),
    pytest.param(
        {},
        {"cpus": frozenset({2, 3}), "devices": ("gpu-1-1",)},
        True,
        "container c0: memory block over NUMA [0]: 1073741824 bytes exceed the 0 bytes free",
        id="memory-exceeds-free",
    ),
    pytest.param(
        {},
        {"memory": (MemoryBlock("memory", 5 * GI, frozenset({1})),)},
        False,
        "container c0: memory block over NUMA [1]: 5368709120 bytes exceed the 4294967296",
        id="memory-exceeds-zone",
    ),
    pytest.param(
        {},
        {"memory": (MemoryBlock("memory", GI, frozenset({0, 5})),)},
        False,
        "container c0: memory block over NUMA [0, 5]: NUMA node [5] does not exist",
        id="unknown-numa-node",
    ),
    pytest.param(
        {},
        {"memory": (MemoryBlock("hugepages-2Mi", GI, frozenset({0})),)},
        False,
        "the node has no hugepages-2Mi",
        id="unknown-memory-type",
    ),
    pytest.param(
        {"memory_policy": "None"},
        {},
        False,
        "memoryManagerPolicy is None",
        id="memory-without-static",
    ),
    pytest.param(
        {},
        {
            "cpus": frozenset({2, 3}),
            "devices": ("gpu-1-1",),
            "memory": (MemoryBlock("memory", GI, frozenset({0, 1})),),
        },
        True,
        "memory block over NUMA [0, 1]: those NUMA nodes already hold memory of another",
        id="memory-group-rule",
    ),
    pytest.param(
        {},
        {"name": "other"},
        False,
        "the allocation lists containers [other (regular)], the pod has [c0 (regular)]",
        id="wrong-containers",
    ),
    pytest.param(
        {},
        {"uid": "u-1"},
        False,
        "the allocation is for uid 'u-1', the pod has uid ''",
        id="wrong-uid",
    ),
    pytest.param(
        {"max_pods": 1},
        {
            "cpus": frozenset({2, 3}),
            "devices": ("gpu-1-1",),
            "memory": (MemoryBlock("memory", GI, frozenset({1})),),
        },
        True,
        "OutOfpods: Node didn't have enough resource: pods",
        id="whole-node-fit",
    ),
]


@pytest.mark.parametrize(("node_args", "changes", "held", "message"), REJECTIONS)
def test_impossible_allocations_are_refused(
    node_args: dict[str, Any], changes: dict[str, Any], held: bool, message: str
) -> None:
    state = NodeState.from_profile(_profile(**node_args))
    if held:
        _holder(state)
    before = (state.zone_usage(), state.zone_free(), state.allocations())
    with pytest.raises(RestoreError) as caught:
        state.restore(POD, _allocation(**changes))
    assert str(caught.value).startswith("node n1: pod default/p: ")
    assert message in str(caught.value)
    assert (state.zone_usage(), state.zone_free(), state.allocations()) == before


def test_the_table_starts_from_a_valid_allocation() -> None:
    state = NodeState.from_profile(_profile())
    _holder(state)
    state.restore(
        POD,
        _allocation(
            cpus=frozenset({2, 3}),
            devices=("gpu-1-1",),
            memory=(MemoryBlock("memory", GI, frozenset({1})),),
        ),
    )
    fresh = NodeState.from_profile(_profile())
    fresh.restore(POD, _allocation())
    assert fresh.allocations()["default/p"] == _allocation()


def test_a_pod_already_holding_resources_is_refused() -> None:
    state = NodeState.from_profile(_profile())
    state.restore(POD, _allocation())
    with pytest.raises(ValueError, match="pod default/p: the pod already holds resources"):
        state.restore(POD, _allocation(cpus=frozenset({3}), devices=("gpu-1-1",)))


def test_ids_shared_by_running_containers_are_refused() -> None:
    spec = pod("p", container("a", cpu=1), container("b", cpu=1))
    a = ContainerAllocation(
        "a", frozenset({1}), memory=(MemoryBlock("memory", GI, frozenset({0})),)
    )
    b = ContainerAllocation(
        "b", frozenset({1}), memory=(MemoryBlock("memory", GI, frozenset({0})),)
    )
    state = NodeState.from_profile(_profile())
    with pytest.raises(RestoreError, match="cpu 1 is held by containers a, b at the same time"):
        state.restore(spec, PodAllocation("default", "p", "", (a, b)))
