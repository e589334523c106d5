"""The single-numa-node evaluator, in-cycle reservation over it, and Memory Manager groups."""

from __future__ import annotations

import pytest

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.plugin import NumaPlugin
from tests.scheduler.builders import GI, GPU, container, guaranteed, ledger, pod_manifest, topology

PLUGIN = NumaPlugin()


@pytest.mark.parametrize(
    ("available", "pod", "zone", "reason"),
    [
        pytest.param(
            [{"cpu": 8, GPU: 2, "memory": 32 * GI}] * 2,
            guaranteed("p", cpu=4, gpu=1),
            0,
            None,
            id="lowest-zone-wins",
        ),
        pytest.param(
            [{"cpu": 2, GPU: 2, "memory": 32 * GI}, {"cpu": 8, GPU: 2, "memory": 32 * GI}],
            guaranteed("p", cpu=4, gpu=1),
            1,
            None,
            id="cpu-only-fits-zone-1",
        ),
        pytest.param(
            [{"cpu": 8, GPU: 0, "memory": 32 * GI}, {"cpu": 0, GPU: 2, "memory": 32 * GI}],
            guaranteed("p", cpu=4, gpu=1),
            None,
            "no NUMA mask is preferred by every resource (cpu: {0}; nvidia.com/gpu: {1}",
            id="gpu-and-cpu-on-different-zones",
        ),
        pytest.param(
            [{"cpu": 8, GPU: 2, "memory": 32 * GI}] * 2,
            guaranteed("p", cpu=12, gpu=1),
            None,
            "cpu: 12 needs 2 NUMA zones by capacity",
            id="cpu-wider-than-a-zone",
        ),
        pytest.param(
            [{"cpu": 8, GPU: 2, "memory": 32 * GI}] * 2,
            guaranteed("p", cpu=2, memory="40Gi"),
            None,
            "memory: 42949672960 needs 2 NUMA zones by capacity",
            id="memory-wider-than-a-zone",
        ),
    ],
)
def test_single_numa_node_table(
    available: list[dict[str, int]], pod: PodSpec, zone: int | None, reason: str | None
) -> None:
    zones = [{"capacity": {"cpu": 8, GPU: 2, "memory": 32 * GI}, "available": a} for a in available]
    topo = topology(zones, policy="single-numa-node")
    result = PLUGIN.filter(pod, topo, ledger(topo))
    if zone is None:
        assert not result.fit
        assert result.reason is not None and reason is not None
        assert reason in result.reason, result.reason
        assert result.reason.startswith("single-numa-node: container main: ")
    else:
        assert result.fit and result.reason is None
        assert result.placement.zones == (zone,)


def test_three_two_two_pods_on_two_four_core_zones_exactly_two_placed() -> None:
    """Seed 000's in-cycle consistency example: 3, 3 and 2 cores on two 4-core zones. Whole
    node accounting admits all three; with reservation only the first two fit."""
    topo = topology([{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2, policy="single-numa-node")
    book = ledger(topo)
    placed = []
    for name, cores in (("a", 3), ("b", 3), ("c", 2)):
        pod = guaranteed(name, cpu=cores, memory="1Gi")
        result = PLUGIN.filter(pod, topo, book)
        if result.fit:
            book.charge(result.placement)
            placed.append((name, result.placement.zones))
    assert placed == [("a", (0,)), ("b", (1,))]
    assert book.free(0, "cpu") == 1 and book.free(1, "cpu") == 1


def test_filter_never_changes_the_ledger() -> None:
    topo = topology([{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2)
    book = ledger(topo)
    before = book.snapshot()
    PLUGIN.filter(guaranteed("a", cpu=6, memory="20Gi"), topo, book)
    assert book.snapshot() == before


def test_memory_group_blocks_single_numa_use_of_its_zones() -> None:
    """A zone holding a multi-NUMA Memory Manager block cannot serve a one-node block
    (``calculateHints``), although its free bytes would fit."""
    topo = topology([{"capacity": {"cpu": 8, "memory": 16 * GI}}] * 3, policy="single-numa-node")
    book = ledger(topo)
    book.charge(
        Placement(
            amounts={0: {"memory": 10 * GI}, 1: {"memory": 10 * GI}},
            memory_blocks=(frozenset({0, 1}),),
        )
    )
    result = PLUGIN.filter(guaranteed("p", cpu=1, memory="1Gi"), topo, book)
    assert result.fit
    assert result.placement.zones == (2,)


def test_restricted_multi_numa_memory_must_match_existing_group() -> None:
    topo = topology([{"capacity": {"cpu": 8, "memory": 16 * GI}}] * 3)
    book = ledger(topo)
    book.charge(Placement(amounts={1: {"memory": 15 * GI}}, memory_blocks=(frozenset({1}),)))
    args = PluginArgs(ignore_list=frozenset({"cpu"}))
    pod = guaranteed("p", memory="20Gi")
    result = NumaPlugin(args).filter(pod, topo, book)
    # {0,1} and {1,2} contain zone 1, used by a one-node block; {0,2} is the only choice.
    assert result.fit
    assert result.placement.zones == (0, 2)
    assert result.placement.memory_blocks == (frozenset({0, 2}),)


def test_init_then_app_device_reuse_in_container_scope() -> None:
    topo = topology(
        [{"capacity": {"cpu": 8, GPU: 2, "memory": 16 * GI}}] * 2, policy="single-numa-node"
    )
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [container("app", {GPU: 2, "cpu": 1, "memory": "1Gi"})],
            init=[container("warm", {GPU: 1, "cpu": 1, "memory": "1Gi"})],
        )
    )
    result = PLUGIN.filter(pod, topo, ledger(topo))
    assert result.fit
    assert result.placement.amounts[0][GPU] == 2
    assert result.placement.zones == (0,)


def test_zone_ledger_copy_is_independent() -> None:
    topo = topology([{"capacity": {"cpu": 8}}])
    book = ZoneLedger.from_nrt(topo)
    other = book.copy()
    other.charge(Placement(amounts={0: {"cpu": 3}}))
    assert book.free(0, "cpu") == 8 and other.free(0, "cpu") == 5


def test_pod_scope_memory_with_no_feasible_mask_is_no_preference() -> None:
    """The Memory Manager returns no hints when no mask can hold the pod-level memory; the
    Topology Manager reads that as "no preference" and admits, and each container then
    gets its own preferred mask (``Allocate`` with no NUMA affinity)."""
    topo = topology(
        [
            {"capacity": {"memory": 6 * GI}, "available": {"memory": 4 * GI}},
            {"capacity": {"memory": 4 * GI}},
        ],
        policy="single-numa-node",
        scope="pod",
    )
    book = ledger(topo)
    book.charge(Placement(memory_blocks=(frozenset({0}),)))  # zone 0 holds a one-zone block
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [
                container("a", {"cpu": "1", "memory": "4Gi"}),
                container("b", {"cpu": 1, "memory": "1Gi"}),
            ],
        )
    )
    result = PLUGIN.filter(pod, topo, book)
    assert result.fit, result.reason
    assert result.placement.amounts == {0: {"memory": 4 * GI}, 1: {"memory": GI}}
    assert result.placement.memory_blocks == (frozenset({0}), frozenset({1}))
