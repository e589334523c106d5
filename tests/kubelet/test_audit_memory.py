"""Audit: Memory Manager rules checked against
``pkg/kubelet/cm/memorymanager/policy_static.go``. Each case names what it mirrors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
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


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(profiles(), st.data())
def test_single_and_cross_numa_blocks_never_share_a_node(
    profile: NodeProfile, data: st.DataObject
) -> None:
    """The Memory Manager's rule (policy_static.go calculateHints and
    isAffinityViolatingNUMAAllocations; "single vs cross NUMA node allocation" in the
    Memory Manager docs): a NUMA node holding a single-NUMA block never joins a
    multi-NUMA block, and multi-NUMA blocks that share a node span the same nodes -
    after any sequence of admits and releases. Foreign ``allocated`` memory counts as a
    single-NUMA block."""
    state = NodeState.from_profile(profile)
    foreign = {z.id for z in profile.zones if z.allocated.get("memory", 0) > 0}
    hugepages = any(z.hugepages for z in profile.zones)
    for step in range(data.draw(st.integers(1, 8))):
        admitted = list(state.allocations())
        if admitted and data.draw(st.integers(0, 3)) == 0:
            state.release(data.draw(st.sampled_from(admitted)))
        else:
            state.admit(data.draw(pods(step, hugepages)))
        single = set(foreign)
        groups: dict[int, frozenset[int]] = {}
        for allocation in state.allocations().values():
            for c in allocation.containers:
                for block in c.memory:
                    if len(block.numa) == 1:
                        single |= block.numa
                        continue
                    for n in block.numa:
                        assert groups.setdefault(n, block.numa) == block.numa
        assert not single & set(groups)
