"""Audit: Memory Manager rules checked against
``pkg/kubelet/cm/memorymanager/policy_static.go``. Each case names what it mirrors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.provider_memory import MemoryProvider, initial_machine_state
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import container, node, pod
from tests.kubelet.test_properties import pods, profiles

INT64_MESSAGE = (
    "Allocate failed due to [memorymanager] failed to represent quantity as int64, "
    "which is unexpected"
)


@pytest.mark.parametrize(
    "memory",
    [
        pytest.param("1.1Gi", id="memory-fractional-bytes"),
        pytest.param("1500m", id="memory-millibytes"),
    ],
)
def test_fractional_bytes_fail_allocate(memory: str) -> None:
    """getRequestedResources: ``quantity.AsInt64()`` fails for a quantity that is not a
    whole number of bytes, so GetTopologyHints returns nil (no preference) and Allocate
    returns "[memorymanager] failed to represent quantity as int64": the pod is rejected
    with UnexpectedAdmissionError (admission/errors.go). (Hugepages must be a multiple
    of the page size - API validation - so only ``memory`` can be fractional.)"""
    for scope in ("container", "pod"):
        result = NodeState.from_profile(node(scope=scope)).admit(
            pod("p", container("c", cpu=1, memory=memory))
        )
        assert not result.admit, scope
        assert result.reason == "UnexpectedAdmissionError"
        assert result.message == INT64_MESSAGE
        (report,) = result.hints
        assert "memory" not in report.providers  # nil hints: no preference


def test_fractional_bytes_give_no_hints_but_only_for_guaranteed_pods() -> None:
    """GetTopologyHints checks the QoS class before reading the quantities: a Burstable
    pod with fractional memory is simply not the Memory Manager's business."""
    profile = node()
    provider = MemoryProvider(initial_machine_state(profile))
    burstable = pod("b", container("c", guaranteed=False, cpu=1, memory="1.1Gi"))
    assert provider.container_hints(burstable, burstable.containers[0]) is None
    result = NodeState.from_profile(profile).admit(burstable)
    assert result.admit


def test_whole_bytes_written_with_a_fraction_are_fine() -> None:
    """The API server stores quantities canonically ("0.5Gi" becomes "512Mi"), so a
    whole number of bytes written with a decimal point converts to int64."""
    result = NodeState.from_profile(node()).admit(pod("p", container("c", memory="0.5Gi")))
    assert result.admit
    assert result.allocation is not None
    assert result.allocation.containers[0].memory[0].size == 512 * 1024**2


def _record(numa: frozenset[int], single: set[int], groups: dict[int, frozenset[int]]) -> None:
    if len(numa) == 1:
        single.update(numa)
    else:
        groups.update(dict.fromkeys(numa, numa))


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(profiles(), st.data())
def test_cross_numa_blocks_respect_the_groups_when_placed(
    profile: NodeProfile, data: st.DataObject
) -> None:
    """policy_static.go isAffinityViolatingNUMAAllocations / calculateHints: a multi-NUMA
    block is never placed over a node that holds a single-NUMA block, nor over a node
    grouped with a different set of nodes - checked for every block at the moment it is
    placed, after any sequence of admits and releases (foreign ``allocated`` memory is a
    single-NUMA block).

    The converse does not hold upstream and is not asserted: the check is skipped for a
    single-NUMA mask, so a best-effort merge (or a Memory Manager without hints) can put a
    single-NUMA block on a node of a multi-NUMA group."""
    state = NodeState.from_profile(profile)
    foreign = {z.id for z in profile.zones if z.allocated.get("memory", 0) > 0}
    hugepages = any(z.hugepages for z in profile.zones)
    for step in range(data.draw(st.integers(1, 8))):
        admitted = list(state.allocations())
        if admitted and data.draw(st.integers(0, 3)) == 0:
            state.release(data.draw(st.sampled_from(admitted)))
            continue
        single = set(foreign)
        groups: dict[int, frozenset[int]] = {}
        for allocation in state.allocations().values():
            for c in allocation.containers:
                for b in c.memory:
                    _record(b.numa, single, groups)
        result = state.admit(data.draw(pods(step, hugepages)))
        if result.allocation is None:
            continue
        for c in result.allocation.containers:
            for b in c.memory:
                if len(b.numa) > 1:
                    event("multi-NUMA block placed")
                    assert not b.numa & single
                    assert all(groups.get(n, b.numa) == b.numa for n in b.numa)
            for b in c.memory:
                _record(b.numa, single, groups)


def test_a_single_numa_block_may_land_on_a_grouped_node() -> None:
    """isAffinityViolatingNUMAAllocations skips single-NUMA masks. Three 1-CPU NUMA nodes
    of 4Gi, best-effort: a 6Gi sidecar takes {0,1} (CPU 0), the app takes CPU 2 and memory
    on {2}; the next pod can only get CPU 1, the Memory Manager prefers {2} and offers
    {0,1}, the merge picks {1} (not preferred), and Allocate puts 256Mi on node 1 of the
    {0,1} group - as the kubelet does."""
    gi = 1024**3
    profile = node(zones=3, cpus_per_zone=1, memory=4 * gi, policy="best-effort")
    state = NodeState.from_profile(profile)
    sidecar = container("i0", cpu=1, memory="6Gi")
    sidecar["restartPolicy"] = "Always"
    assert state.admit(pod("p0", container("c0", cpu=1, memory="256Mi"), init=[sidecar])).admit
    result = state.admit(pod("p1", container("c0", cpu=1, memory="256Mi")))
    assert result.admit and result.allocation is not None
    (report,) = result.hints
    assert [h.numa for h in report.providers["memory"]] == [(2,), (0, 1)]
    assert (report.best.numa, report.best.preferred) == ((1,), False)
    (block,) = result.allocation.containers[0].memory
    assert block.numa == frozenset({1})


def test_restartable_init_container_memory_is_not_reused() -> None:
    """policy_static_test.go TestStaticPolicyAllocateWithRestartableInitContainers,
    "should not re-use restartable init containers memory": one NUMA node with 7Gi of
    memory and 7Gi of 1Gi hugepages; init1 1Gi, sidecar2 2Gi, init3 3Gi, sidecar4 4Gi,
    app 1Gi (each of memory and hugepages). Regular init containers' blocks shrink to 0 as
    later containers reuse them, the sidecars keep theirs, and the node ends up full."""
    gi = 1024**3
    profile = node(zones=1, cpus_per_zone=8, memory=7 * gi, hugepages={"hugepages-1Gi": 7 * gi})

    def c(name: str, size: int, *, sidecar: bool = False) -> dict[str, object]:
        spec = container(name, cpu=1, memory=f"{size}Gi", hugepages_1Gi=f"{size}Gi")
        if sidecar:
            spec["restartPolicy"] = "Always"
        return spec

    p = pod(
        "pod1",
        c("container1", 1),
        init=[
            c("initContainer1", 1),
            c("restartableInitContainer2", 2, sidecar=True),
            c("initContainer3", 3),
            c("restartableInitContainer4", 4, sidecar=True),
        ],
    )
    state = NodeState.from_profile(profile)
    result = state.admit(p)
    assert result.admit and result.allocation is not None
    sizes = {c.name: {b.type: b.size // gi for b in c.memory} for c in result.allocation.containers}
    assert sizes == {
        "initContainer1": {"memory": 0, "hugepages-1Gi": 0},
        "restartableInitContainer2": {"memory": 2, "hugepages-1Gi": 2},
        "initContainer3": {"memory": 0, "hugepages-1Gi": 0},
        "restartableInitContainer4": {"memory": 4, "hugepages-1Gi": 4},
        "container1": {"memory": 1, "hugepages-1Gi": 1},
    }
    usage = state.zone_usage()[0]
    assert (usage["memory"], usage["hugepages-1Gi"]) == (7 * gi, 7 * gi)
    state.release(p.key)
    assert state.zone_usage()[0]["memory"] == 0
