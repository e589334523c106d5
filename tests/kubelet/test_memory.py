"""The Memory Manager's Static policy, transcribed as facts from
``pkg/kubelet/cm/memorymanager/policy_static_test.go`` (``TestStaticPolicyGetTopologyHints``,
``Test_getPodRequestedResources``) plus the group and accounting rules of
``policy_static.go``."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.provider import AllocationError
from fakenrt.kubelet.provider_memory import (
    Block,
    MachineState,
    MemoryProvider,
    MemoryTable,
    NumaMemory,
    pod_memory_requests,
    release_blocks,
)
from fakenrt.podspec import PodSpec
from tests.kubelet.builders import pod

MB = 1024**2
GB = 1024**3
HP1G = "hugepages-1Gi"
HP2M = "hugepages-2Mi"


def node_state(
    tables: dict[str, tuple[int, int]], *, assignments: int = 0, cells: tuple[int, ...] = ()
) -> dict[str, Any]:
    return {"tables": tables, "assignments": assignments, "cells": cells}


def machine(**nodes: dict[str, Any]) -> MachineState:
    state: MachineState = {}
    for key, spec in nodes.items():
        nid = int(key[1:])
        state[nid] = NumaMemory(
            assignments=spec["assignments"],
            cells=spec["cells"] or (nid,),
            tables={
                k: MemoryTable(allocatable=a, free=f, reserved=a - f)
                for k, (a, f) in spec["tables"].items()
            },
        )
    return state


def guaranteed(name: str, **extra: str) -> PodSpec:
    limits = {"cpu": "1", "memory": "1Gi", **extra}
    return pod(name, {"name": "c", "resources": {"limits": limits}})


def hints(*pairs: tuple[tuple[int, ...], bool]) -> tuple[TopologyHint, ...]:
    return tuple(TopologyHint(BitMask.of(*bits), pref) for bits, pref in pairs)


def test_no_hints_for_non_guaranteed_pods() -> None:
    """should not provide topology hints for non-guaranteed pods."""
    p = pod("p", {"name": "c", "resources": {"requests": {"memory": "1Gi"}}})
    provider = MemoryProvider(machine(n0=node_state({"memory": (GB, GB)})))
    assert provider.container_hints(p, p.containers[0]) is None


def test_new_hints_skip_nodes_grouped_with_others() -> None:
    """should calculate new topology hints, when the container does not exist under
    assignments: nodes 0 and 1 form a group whose hugepages are used up."""
    state = machine(
        n0=node_state({"memory": (1536 * MB, 0), HP1G: (GB, 0)}, assignments=2, cells=(0, 1)),
        n1=node_state({"memory": (1536 * MB, GB), HP1G: (GB, 0)}, assignments=2, cells=(0, 1)),
        n2=node_state({"memory": (1536 * MB, 1536 * MB), HP1G: (GB, GB)}),
        n3=node_state({"memory": (1536 * MB, 1536 * MB), HP1G: (GB, GB)}),
    )
    p = guaranteed("pod2", **{HP1G: "1Gi"})
    expected = hints(((2,), True), ((3,), True), ((2, 3), False))
    assert MemoryProvider(state).container_hints(p, p.containers[0]) == {
        "memory": expected,
        HP1G: expected,
    }


def test_grouped_nodes_give_only_non_preferred_multi_numa_hints() -> None:
    """should not return preferred hints with multiple NUMA nodes for the pod with
    resources satisfied by a single NUMA node."""
    state = machine(
        n0=node_state({"memory": (1536 * MB, 0), HP2M: (20 * MB, 0)}, assignments=2, cells=(0, 1)),
        n1=node_state(
            {"memory": (1536 * MB, GB), HP2M: (20 * MB, 16 * MB)}, assignments=2, cells=(0, 1)
        ),
    )
    p = guaranteed("pod2", **{HP2M: "16Mi"})
    expected = hints(((0, 1), False))
    assert MemoryProvider(state).container_hints(p, p.containers[0]) == {
        "memory": expected,
        HP2M: expected,
    }


def test_no_feasible_mask_returns_an_empty_map() -> None:
    """calculateHints adds no key when no mask qualifies; the Topology Manager reads the
    empty map as "no preference" and the allocation then fails."""
    state = machine(n0=node_state({"memory": (GB, GB)}), n1=node_state({"memory": (GB, GB)}))
    p = pod("big", {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "3Gi"}}})
    provider = MemoryProvider(state)
    assert provider.container_hints(p, p.containers[0]) == {}
    with pytest.raises(AllocationError, match="failed to get the default NUMA affinity"):
        provider.allocate(p, p.containers[0], TopologyHint(None, True))
    with pytest.raises(AllocationError, match="failed to find NUMA nodes to extend"):
        provider.allocate(p, p.containers[0], TopologyHint(BitMask.of(0), True))


def _pod_with_inits(apps: list[tuple[str, str]], inits: list[tuple[str, str, bool]]) -> PodSpec:
    def c(name: str, mem: str, hp: str, restartable: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": name,
            "resources": {"requests": {"memory": mem, HP1G: hp}, "limits": {HP1G: hp}},
        }
        if restartable:
            out["restartPolicy"] = "Always"
        return out

    return pod(
        "p",
        *[c(f"c{i}", m, h) for i, (m, h) in enumerate(apps)],
        init=[c(f"i{i}", m, h, r) for i, (m, h, r) in enumerate(inits)],
    )


@pytest.mark.parametrize(
    ("apps", "inits", "expected"),
    [
        pytest.param(
            [("1Gi", "1Gi"), ("2Gi", "2Gi")],
            [("1Gi", "1Gi", False), ("4Gi", "4Gi", False)],
            {"memory": 4 * GB, HP1G: 4 * GB},
            id="maximum resources of init containers > total resources of containers",
        ),
        pytest.param(
            [("2Gi", "2Gi"), ("3Gi", "3Gi")],
            [("1Gi", "1Gi", False), ("3Gi", "3Gi", False)],
            {"memory": 5 * GB, HP1G: 5 * GB},
            id="maximum resources of init containers < total resources of containers",
        ),
        pytest.param(
            [("2Gi", "1Gi"), ("3Gi", "2Gi")],
            [("1Gi", "1Gi", False), ("3Gi", "4Gi", False)],
            {"memory": 5 * GB, HP1G: 4 * GB},
            id="calculate different resources independently",
        ),
        pytest.param(
            [("1Gi", "1Gi"), ("2Gi", "2Gi")],
            [("2Gi", "2Gi", True), ("4Gi", "4Gi", False)],
            {"memory": 6 * GB, HP1G: 6 * GB},
            id="maximum resources of init containers > total resources of long running "
            "containers, including restartable init containers",
        ),
    ],
)
def test_pod_requested_resources(
    apps: list[tuple[str, str]], inits: list[tuple[str, str, bool]], expected: dict[str, int]
) -> None:
    """Test_getPodRequestedResources."""
    assert pod_memory_requests(_pod_with_inits(apps, inits)) == expected


def test_multi_numa_block_fills_nodes_in_order_and_forms_a_group() -> None:
    """updateMachineState fills NUMA nodes in ascending order; every node of the mask
    counts the block and joins the group; releaseMemory undoes it."""
    state = machine(
        n0=node_state({"memory": (2 * GB, 2 * GB)}), n1=node_state({"memory": (2 * GB, 2 * GB)})
    )
    p = pod("p", {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "3Gi"}}})
    provider = MemoryProvider(state)
    provider.allocate(p, p.containers[0], TopologyHint(BitMask.of(0, 1), True))
    assert provider.assigned["c"] == [Block("memory", 3 * GB, (0, 1))]
    assert [state[n].tables["memory"].reserved for n in (0, 1)] == [2 * GB, GB]
    assert [state[n].cells for n in (0, 1)] == [(0, 1), (0, 1)]
    # A later single-NUMA request cannot use a node of the group.
    q = pod("q", {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "512Mi"}}})
    assert MemoryProvider(state).container_hints(q, q.containers[0]) == {
        "memory": hints(((0, 1), False))
    }
    release_blocks(state, tuple(provider.assigned["c"]))
    assert [state[n].tables["memory"].free for n in (0, 1)] == [2 * GB, 2 * GB]
    assert [state[n].cells for n in (0, 1)] == [(0,), (1,)]
