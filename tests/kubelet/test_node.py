"""Whole-pod admission on a simulated node: the worked examples of the seeds and the
kubelet behaviours that span providers (reuse, sidecars, scopes, rollback, the
whole-node fit check, foreign allocations)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fakenrt.kubelet.allocation import AdmissionResult, ProviderHint
from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.merge import merged_candidates
from fakenrt.kubelet.node import NodeState
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import GI, container, node, pod


def used(state: NodeState, resource: str) -> dict[int, int]:
    return {z: u[resource] for z, u in state.zone_usage().items()}


def numa_of_cpus(profile: NodeProfile, cpus: frozenset[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in cpus:
        z = profile.cpu_topology[c].numa
        out[z] = out.get(z, 0) + 1
    return out


# --- seed 000: the restricted table and the single-numa-node 3/3/2 example ----------


def seed000_node(gpus_per_zone: int, cpus_per_zone: int) -> NodeProfile:
    # The seed's table aligns GPUs and CPUs only, so the Memory Manager is off here (see
    # test_memory_manager_makes_the_seed_admit_row_reject for the same pod with it on).
    return node(
        zones=2,
        cpus_per_zone=cpus_per_zone,
        devices={"nvidia.com/gpu": gpus_per_zone},
        policy="restricted",
        memory_policy="None",
    )


@pytest.mark.parametrize(
    ("gpus_per_zone", "cpus_per_zone", "gpus", "cpus", "admit", "best"),
    [
        pytest.param(4, 16, 6, 10, False, ProviderHint((0, 1), False), id="6gpu-10cpu-rejected"),
        pytest.param(
            4, 16, 6, 24, True, ProviderHint((0, 1), True), id="6gpu-24cpu-admitted-on-0-1"
        ),
        pytest.param(
            2, 64, 4, 1, False, ProviderHint((0, 1), False), id="4gpu-1cpu-footgun-rejected"
        ),
    ],
)
def test_seed000_restricted_table(
    *, gpus_per_zone: int, cpus_per_zone: int, gpus: int, cpus: int, admit: bool, best: ProviderHint
) -> None:
    profile = seed000_node(gpus_per_zone, cpus_per_zone)
    state = NodeState.from_profile(profile)
    result = state.admit(pod("p", container("c", cpu=cpus, gpu=gpus)))
    assert result.admit is admit
    assert result.hints[0].best == best
    if not admit:
        assert result.reason == "TopologyAffinityError"
        assert result.message == "Resources cannot be allocated with Topology locality"
        assert result.allocation is None
        assert all(v == 0 for v in used(state, "cpu").values())
        return
    assert result.allocation is not None
    alloc = result.allocation.containers[0]
    assert len(alloc.cpus) == cpus and len(alloc.devices["nvidia.com/gpu"]) == gpus
    assert sum(used(state, "nvidia.com/gpu").values()) == gpus
    # Packed: the first NUMA node is filled before the second is touched.
    assert numa_of_cpus(profile, alloc.cpus) == {0: 16, 1: 8}


def test_memory_manager_makes_the_seed_admit_row_reject() -> None:
    """With the Memory Manager on, the pod's 1Gi of memory prefers one NUMA node, so the
    6 GPU + 24 CPU pod has no common preferred mask any more."""
    profile = node(zones=2, cpus_per_zone=16, devices={"nvidia.com/gpu": 4}, policy="restricted")
    result = NodeState.from_profile(profile).admit(pod("p", container("c", cpu=24, gpu=6)))
    assert not result.admit and result.reason == "TopologyAffinityError"


def test_seed000_single_numa_node_three_three_two() -> None:
    """Two 4-core zones, pods of 3, 3 and 2 cores: exactly two are admitted."""
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=4, policy="single-numa-node"))
    results = [
        state.admit(pod(f"p{i}", container("c", cpu=n, memory="1Gi")))
        for i, n in enumerate((3, 3, 2))
    ]
    assert [r.admit for r in results] == [True, True, False]
    assert [r.hints[0].best.numa for r in results[:2]] == [(0,), (1,)]
    assert results[2].reason == "TopologyAffinityError"
    assert used(state, "cpu") == {0: 3, 1: 3}


# --- seed 002: the Topology Manager blog's worked example ---------------------------


def test_seed002_blog_merge_table() -> None:
    """The blog's cross product of cpu {01:T, 10:T, 11:F}, gpu {01:T, 10:T} and nic
    {01:T, 10:T} merges into exactly these hints (bit 0 = NUMA node 0)."""
    m01, m10, m11 = BitMask.of(0), BitMask.of(1), BitMask.of(0, 1)
    cpu = (TopologyHint(m01, True), TopologyHint(m10, True), TopologyHint(m11, False))
    dev = (TopologyHint(m01, True), TopologyHint(m10, True))
    merged = merged_candidates(m11, [cpu, dev, dev])
    assert merged == {
        TopologyHint(m01, True),
        TopologyHint(m10, True),
        TopologyHint(BitMask(), False),
        TopologyHint(m01, False),
        TopologyHint(m10, False),
    }


@pytest.mark.parametrize("policy", ["best-effort", "restricted", "single-numa-node"])
def test_seed002_blog_container_admitted_on_numa_0(policy: str) -> None:
    """ "In the example above, the pod would be admitted by all policies with a hint of
    {01: True}"."""
    profile = node(
        zones=2,
        cpus_per_zone=4,
        devices={"gpu-vendor.com/gpu": 1, "nic-vendor.com/nic": 1},
        policy=policy,
        memory_policy="None",
    )
    p = pod(
        "p",
        {
            "name": "c0",
            "resources": {
                "limits": {
                    "cpu": "2",
                    "memory": "1Gi",
                    "gpu-vendor.com/gpu": 1,
                    "nic-vendor.com/nic": 1,
                }
            },
        },
    )
    result = NodeState.from_profile(profile).admit(p)
    assert result.admit
    assert result.hints[0].best == ProviderHint((0,), True)
    assert result.hints[0].providers["cpu"] == (
        ProviderHint((0,), True),
        ProviderHint((1,), True),
        ProviderHint((0, 1), False),
    )


# --- reuse, sidecars, scopes --------------------------------------------------------


def test_init_container_cpus_and_devices_are_reused_by_app_containers() -> None:
    profile = node(zones=2, cpus_per_zone=8, devices={"nvidia.com/gpu": 2})
    state = NodeState.from_profile(profile)
    p = pod("p", container("app", cpu=4, gpu=1), init=[container("init", cpu=4, gpu=1)])
    result = state.admit(p)
    assert result.allocation is not None
    init, app = result.allocation.containers
    assert init.name == "init" and app.name == "app"
    assert app.cpus == init.cpus
    assert app.devices == init.devices
    assert sum(used(state, "cpu").values()) == 4
    assert sum(used(state, "nvidia.com/gpu").values()) == 1
    # Memory: the app container reuses the init container's block, which shrinks to 0.
    assert [b.size for b in init.memory] == [0]
    assert [b.size for b in app.memory] == [GI]
    assert sum(used(state, "memory").values()) == GI


def test_sidecar_cpus_are_not_reused() -> None:
    profile = node(zones=2, cpus_per_zone=8)
    state = NodeState.from_profile(profile)
    sidecar = container("side", cpu=2) | {"restartPolicy": "Always"}
    result = state.admit(pod("p", container("app", cpu=2), init=[sidecar]))
    assert result.allocation is not None
    side, app = result.allocation.containers
    assert not side.cpus & app.cpus
    assert sum(used(state, "cpu").values()) == 4


@pytest.mark.parametrize(("scope", "admit"), [("container", True), ("pod", False)])
def test_pod_scope_aligns_the_pod_as_a_whole(scope: str, admit: bool) -> None:
    """Two containers of 2 GPUs on a node with 2 GPUs per NUMA node: each container fits
    one NUMA node, the pod as a whole does not."""
    profile = node(
        zones=2,
        cpus_per_zone=8,
        devices={"nvidia.com/gpu": 2},
        policy="single-numa-node",
        scope=scope,
        memory_policy="None",
    )
    p = pod("p", container("a", cpu=1, gpu=2), container("b", cpu=1, gpu=2))
    result = NodeState.from_profile(profile).admit(p)
    assert result.admit is admit
    if scope == "pod":
        assert [h.container for h in result.hints] == [None]
        assert result.hints[0].providers["nvidia.com/gpu"] == (ProviderHint((0, 1), True),)
    else:
        assert [h.best.numa for h in result.hints] == [(0,), (1,)]


def test_devices_are_aligned_for_any_qos_class() -> None:
    profile = node(zones=2, devices={"nvidia.com/gpu": 1}, policy="single-numa-node")
    state = NodeState.from_profile(profile)
    burstable = container("c", guaranteed=False, cpu="500m")
    burstable["resources"]["limits"] = {"nvidia.com/gpu": 1}
    r1 = state.admit(pod("p1", burstable))
    r2 = state.admit(pod("p2", burstable))
    r3 = state.admit(pod("p3", burstable))
    assert [r.admit for r in (r1, r2, r3)] == [True, True, False]
    assert [r.hints[0].best.numa for r in (r1, r2)] == [(0,), (1,)]
    assert "cpu" not in r1.hints[0].providers  # CPUs of a Burstable pod are not aligned


# --- rejections, rollback, release --------------------------------------------------


def test_a_rejected_pod_holds_nothing() -> None:
    """The first container is allocated, the second is rejected: nothing stays held."""
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=4, policy="restricted"))
    before = state.zone_usage()
    result = state.admit(pod("p", container("a", cpu=4), container("b", cpu=4, memory="100Gi")))
    assert not result.admit
    assert [h.container for h in result.hints] == ["a", "b"]
    assert state.zone_usage() == before
    assert state.allocations() == {}


def test_release_gives_back_exactly_what_was_held() -> None:
    profile = node(
        zones=2, cpus_per_zone=8, devices={"nvidia.com/gpu": 2}, threads=2, policy="best-effort"
    )
    state = NodeState.from_profile(profile)
    empty = state.zone_usage()
    # a: a Memory Manager group over {0,1}; b: its memory must join that group.
    assert state.admit(pod("a", container("c", cpu=6, gpu=2, memory="70Gi"))).admit
    mid = state.zone_usage()
    b = state.admit(pod("b", container("c", cpu=3, gpu=1, memory="3Gi")))
    assert b.allocation is not None
    assert b.allocation.containers[0].memory[0].numa == frozenset({0, 1})
    state.release("default/b")
    after = state.zone_usage()
    for z in (0, 1):
        assert {k: v for k, v in after[z].items() if k != "memory"} == {
            k: v for k, v in mid[z].items() if k != "memory"
        }
    # The Memory Manager gives a group block back node by node in ascending order, not
    # from the node it came from (releaseMemory): only the group's total is exact.
    assert sum(u["memory"] for u in after.values()) == sum(u["memory"] for u in mid.values())
    assert after[1]["memory"] > mid[1]["memory"]
    state.release("default/a")
    state.release("default/unknown")
    assert state.zone_usage() == empty


def test_admitting_a_key_twice_is_an_error() -> None:
    state = NodeState.from_profile(node())
    state.admit(pod("p", container("c")))
    with pytest.raises(ValueError, match="already admitted"):
        state.admit(pod("p", container("c")))


def test_unexpected_admission_error_when_memory_fits_no_numa_set() -> None:
    """The Memory Manager returns no hints (read as no preference), the merge admits,
    then its Allocate fails: UnexpectedAdmissionError, nothing held."""
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=4, memory=64 * GI))
    result = state.admit(pod("p", container("c", cpu=1, memory="200Gi")))
    assert (result.admit, result.reason) == (False, "UnexpectedAdmissionError")
    assert result.message == (
        "Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the "
        "current topology hint, which is unexpected"
    )
    assert any("no NUMA set" in n for n in result.hints[0].notes)
    assert all(v == 0 for v in used(state, "cpu").values())


def test_policy_none_allocates_without_hints_and_fails_unexpectedly() -> None:
    state = NodeState.from_profile(node(devices={"nvidia.com/gpu": 1}, policy="none"))
    ok = state.admit(pod("p1", container("c", cpu=2, gpu=2)))
    assert ok.admit and ok.hints == ()
    assert ok.allocation is not None and len(ok.allocation.containers[0].cpus) == 2
    bad = state.admit(pod("p2", container("c", cpu=1, gpu=1)))
    assert (bad.reason, bad.message) == (
        "UnexpectedAdmissionError",
        "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
        "Requested: 1, Available: 0, which is unexpected",
    )


def test_node_fit_check_runs_after_the_topology_manager() -> None:
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=4, max_pods=2))
    burst = container("c", guaranteed=False, cpu="20")
    result = state.admit(pod("big", burst))
    assert (result.reason, result.message) == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 20000, used: 0, capacity: 8000",
    )
    assert state.admit(pod("a", container("c", guaranteed=False, cpu="500m"))).admit
    assert state.admit(pod("b", container("c", guaranteed=False, cpu="500m"))).admit
    third = state.admit(pod("c", container("c", guaranteed=False, cpu="500m")))
    assert (third.reason, third.message) == (
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
    )


def test_reserved_cpus_count_for_width_but_are_never_handed_out() -> None:
    profile = node(zones=2, cpus_per_zone=4, reserved=frozenset({0}), memory_policy="None")
    state = NodeState.from_profile(profile)
    first = state.admit(pod("a", container("c", cpu=4)))
    # {0} is as wide as needed by count (4 CPUs incl. the reserved one) but has only 3
    # free, so {1} is the only preferred feasible hint.
    assert first.hints[0].providers["cpu"] == (
        ProviderHint((1,), True),
        ProviderHint((0, 1), False),
    )
    second = state.admit(pod("b", container("c", cpu=3)))
    assert second.allocation is not None
    assert 0 not in second.allocation.containers[0].cpus
    assert not state.admit(pod("c", container("c", cpu=1))).admit


def test_foreign_allocations_are_held_from_the_start() -> None:
    profile = node(
        zones=2,
        cpus_per_zone=4,
        devices={"nvidia.com/gpu": 2},
        allocated={0: {"cpu": 2, "memory": 8 * GI, "nvidia.com/gpu": 1}},
    )
    state = NodeState.from_profile(profile)
    assert state.zone_usage()[0] == {"cpu": 2, "memory": 8 * GI, "nvidia.com/gpu": 1}
    result = state.admit(pod("p", container("c", cpu=3, gpu=2)))
    assert result.admit and result.hints[0].best.numa == (1,)


def _admit_ok(state: NodeState, name: str, cpu: int, gpu: int) -> AdmissionResult:
    result = state.admit(pod(name, container("c", cpu=cpu, gpu=gpu)))
    assert result.admit, result
    return result


def test_copy_is_independent() -> None:
    state = NodeState.from_profile(node(devices={"nvidia.com/gpu": 1}))
    twin = state.copy()
    _admit_ok(twin, "p", cpu=2, gpu=1)
    assert sum(used(state, "nvidia.com/gpu").values()) == 0
    assert list(twin.allocations()) == ["default/p"]
    assert state.allocations() == {}


@pytest.mark.parametrize(("prefer", "expected"), [(False, (0, 1)), (True, (0, 2))])
def test_prefer_closest_numa_nodes_end_to_end(prefer: bool, expected: tuple[int, ...]) -> None:
    """Two GPUs, one per NUMA node: every 2-node mask is preferred; by narrowness {0,1}
    wins, by distance the closest pair {0,2}."""
    dist = [[10, 30, 11, 30], [30, 10, 30, 11], [11, 30, 10, 30], [30, 11, 30, 10]]
    profile = node(
        zones=4,
        cpus_per_zone=2,
        devices={"nvidia.com/gpu": 1},
        distances=dist,
        prefer_closest=prefer,
        policy="restricted",
        cpu_policy="none",
        memory_policy="None",
    )
    result = NodeState.from_profile(profile).admit(pod("p", container("c", gpu=2)))
    assert result.admit and result.hints[0].best == ProviderHint(expected, True)


def test_fit_check_extended_resources_and_node_name() -> None:
    profile = node(zones=1, devices={"nvidia.com/gpu": 1}, policy="none", name="n1")
    state = NodeState.from_profile(profile)
    unknown = container("c", guaranteed=False, cpu="100m")
    unknown["resources"]["limits"] = {"example.com/unknown": 3}
    assert state.admit(pod("x", unknown)).admit  # not on the node at all: ignored
    manifest_pod = pod("y", container("c", guaranteed=False, cpu="100m"))
    elsewhere = replace(manifest_pod, node_name="n2")
    result = state.admit(elsewhere)
    assert (result.reason, result.message) == (
        "NodeName",
        "Predicate NodeName failed: node(s) didn't match the requested node name",
    )


def test_every_change_of_what_the_node_holds_takes_a_new_version() -> None:
    """The version keys what is kept of the node's state (the NRT snapshot): an admission
    and a release take a new one; a rejection and an unknown release change nothing."""
    state = NodeState.from_profile(node(zones=2, cpus_per_zone=4, policy="single-numa-node"))
    seen = [state.version]
    for i, n in enumerate((3, 3)):
        assert state.admit(pod(f"p{i}", container("c", cpu=n, memory="1Gi"))).admit
        seen.append(state.version)
    usage = state.zone_usage()
    assert not state.admit(pod("p2", container("c", cpu=2, memory="1Gi"))).admit
    state.release("default/nothing")
    assert state.version == seen[-1] and state.zone_usage() == usage
    state.release("default/p0")
    seen.append(state.version)
    assert len(set(seen)) == len(seen)
    assert used(state, "cpu") == {0: 0, 1: 3}
