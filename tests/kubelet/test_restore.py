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


def check_survivors_restored(
    profile: NodeProfile, original: NodeState, specs: dict[str, PodSpec]
) -> NodeState | None:
    """Restore ``original``'s surviving allocations in admission order on a fresh node.

    When a kubelet restarted on ``original``'s checkpoints would refuse to start (its
    Memory Manager's ``validateState``, ``pkg/kubelet/cm/memorymanager/policy_static.go``:
    the machine state recomputed from the checkpointed blocks differs from the
    checkpointed one - see :meth:`NodeState.restart_problem`), there is no node to
    rebuild: the restore must then either be refused, or give exactly the recomputed
    state (all the simulator can know without the live books), and None is returned.
    Otherwise the restore must rebuild the node: the rebuilt node is returned for the
    caller's comparisons."""
    problem = original.restart_problem()
    rebuilt = NodeState.from_profile(profile)
    if problem is not None:
        try:
            for key, allocation in original.allocations().items():
                rebuilt.restore(specs[key], allocation)
        except RestoreError:
            return None
        assert rebuilt.restart_problem() is None  # the recomputed state, nothing else
        assert rebuilt.allocations() == original.allocations()
        cpu_and_devices = [
            {
                z: {r: v for r, v in a.items() if not _is_memory(r)}
                for z, a in n.zone_usage().items()
            }
            for n in (rebuilt, original)
        ]
        assert cpu_and_devices[0] == cpu_and_devices[1]
        return None
    for key, allocation in original.allocations().items():
        rebuilt.restore(specs[key], allocation)
    check_invariants(rebuilt)
    assert rebuilt.allocations() == original.allocations()
    assert list(rebuilt.allocations()) == list(original.allocations())  # admission order
    assert rebuilt.restart_problem() is None
    return rebuilt


def _is_memory(resource: str) -> bool:
    return resource == "memory" or resource.startswith("hugepages-")


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

    rebuilt = check_survivors_restored(profile, original, specs)
    if rebuilt is None:
        event("the kubelet refuses the restart")
        return
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


# A node a restarted kubelet refuses (found by the property above): on a best-effort node of
# three 4Gi zones, p0's init container holds a 6Gi group over NUMA 0-1 (zone 0 full, 2Gi on
# zone 1); p1's 256Mi, hinted to NUMA 0 by its CPUs, is extended to the group and sits on
# zone 1; releasing p1 gives its bytes back from zone 0 (``RemoveContainer`` frees a block
# from its first node); p5's 256Mi then gets a one-node block on a node of the group (a
# single-NUMA hint is never checked against the groups). Recomputing the books from the
# survivors' blocks (``validateState``, pkg/kubelet/cm/memorymanager/policy_static.go)
# fills zone 0 with the group again: the kubelet finds the machine state different from
# its checkpoint and refuses to start; the simulator's restore refuses p5's block (no
# bytes left on NUMA 0) or, when p5 sits on zone 1, gives the recomputed books.
BEST_EFFORT_3 = node(zones=3, cpus_per_zone=2, memory=4 * GI, policy="best-effort")
P0 = pod(
    "p0",
    container("c0", cpu="1", memory="256Mi"),
    init=[container("i0", cpu="500m", memory="6Gi")],
)
P0_TWO_APPS = pod(
    "p0",
    container("c0", cpu="1", memory="256Mi"),
    container("c1", cpu="2", memory="256Mi"),
    init=[container("i0", cpu="1", memory="6Gi")],
)
P1 = pod("p1", container("c0", cpu="2", memory="256Mi"))
P1_ONE_CPU = pod("p1", container("c0", cpu="1", memory="256Mi"))
P5 = pod("p5", container("c0", cpu="2", memory="256Mi"))
RELEASE = "release default/p1"


@pytest.mark.parametrize(
    ("steps", "refused", "restore_error"),
    [
        pytest.param(
            [P0, P1, RELEASE, P5],
            "NUMA nodes [0, 1] have 1879048192 bytes of memory free, their checkpointed "
            "blocks leave 2147483648",
            "pod default/p5: container c0: memory block over NUMA [0]: 268435456 bytes "
            "exceed the 0 bytes free",
            id="released-group-then-one-node-block-on-its-first-node",
        ),
        pytest.param(
            [P0_TWO_APPS, P1_ONE_CPU, RELEASE, P5],
            "NUMA nodes [1] have 1610612736 bytes of memory free, their checkpointed "
            "blocks leave 1879048192",
            None,
            id="released-group-then-one-node-block-on-its-second-node",
        ),
        pytest.param([P0, P1, P5], None, None, id="group-kept"),
        pytest.param([P0, P5], None, None, id="no-release"),
    ],
)
def test_a_node_the_kubelet_cannot_restart(
    steps: list[PodSpec | str], refused: str | None, restore_error: str | None
) -> None:
    original = NodeState.from_profile(BEST_EFFORT_3)
    specs: dict[str, PodSpec] = {}
    for step in steps:
        if isinstance(step, str):
            original.release(step.removeprefix("release "))
            continue
        assert original.admit(step).admit
        specs[step.key] = step
    problem = original.restart_problem()
    if refused is None:
        assert problem is None
        rebuilt = check_survivors_restored(BEST_EFFORT_3, original, specs)
        assert rebuilt is not None
        assert rebuilt.zone_usage() == original.zone_usage()
        return
    assert problem == f"node n1: memory manager: {refused}"
    rebuilt = NodeState.from_profile(BEST_EFFORT_3)
    if restore_error is not None:
        with pytest.raises(RestoreError, match="bytes exceed") as caught:
            for key, allocation in original.allocations().items():
                rebuilt.restore(specs[key], allocation)
        assert restore_error in str(caught.value)
    else:
        for key, allocation in original.allocations().items():
            rebuilt.restore(specs[key], allocation)
        assert rebuilt.zone_usage() != original.zone_usage()  # the recomputed books
    assert check_survivors_restored(BEST_EFFORT_3, original, specs) is None


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
