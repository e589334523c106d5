"""The restricted evaluator: the seed's worked examples and the kubelet's departures from
the seed's per-resource rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.scheduler.args import ArgsError, PluginArgs, parse_args
from fakenrt.scheduler.plugin import FilterResult, NumaPlugin
from tests.scheduler.builders import GI, GPU, container, ledger, pod_manifest, topology

NO_MEMORY = frozenset({"memory"})  # Memory Manager None: the seed's table has no memory


def run(
    zones: Sequence[Mapping[str, Any]],
    pod: PodSpec,
    *,
    policy: str = "restricted",
    scope: str = "container",
    ignore: frozenset[str] = NO_MEMORY,
) -> FilterResult:
    topo = topology(zones, policy=policy, scope=scope)
    return NumaPlugin(PluginArgs(ignore_list=ignore)).filter(pod, topo, ledger(topo))


def one(resources: Mapping[str, Any], *, requests: Mapping[str, Any] | None = None) -> PodSpec:
    res = {GPU if k == "gpu" else k: v for k, v in resources.items()}
    reqs = (
        {"main": {GPU if k == "gpu" else k: v for k, v in requests.items()}} if requests else None
    )
    return pod_from_manifest(pod_manifest("p", [container("main", res)], requests=reqs))


GPU4_CPU16 = [{"capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI}}] * 2
GPU2_CPU64 = [{"capacity": {"cpu": 64, GPU: 2, "memory": 64 * GI}}] * 2


@pytest.mark.parametrize(
    ("zones", "pod", "fit", "placed", "reason"),
    [
        pytest.param(
            GPU4_CPU16,
            one({"gpu": 6, "cpu": 10, "memory": "1Gi"}),
            False,
            (),
            "preferred widths differ (cpu 1, nvidia.com/gpu 2)",
            id="seed-6gpu-10cpu-reject",
        ),
        pytest.param(
            GPU4_CPU16,
            one({"gpu": 6, "cpu": 24, "memory": "1Gi"}),
            True,
            (0, 1),
            None,
            id="seed-6gpu-24cpu-admit-0-1",
        ),
        pytest.param(
            GPU2_CPU64,
            one({"gpu": 4, "cpu": 1, "memory": "1Gi"}),
            False,
            (),
            "preferred widths differ (cpu 1, nvidia.com/gpu 2)",
            id="seed-4gpu-1cpu-footgun-reject",
        ),
        pytest.param(
            [
                {"capacity": {"cpu": 16, GPU: 4}, "available": {"cpu": 16, GPU: 1}},
                {"capacity": {"cpu": 16, GPU: 4}, "available": {"cpu": 16, GPU: 2}},
            ],
            one({"gpu": 3}, requests={"cpu": "100m", "memory": "64Mi"}),
            False,
            (),
            "nvidia.com/gpu: 3 fits 1 NUMA zone(s) by capacity but no 1-zone combination",
            id="capacity-preferred-but-unavailable-reject",
        ),
        pytest.param(
            [
                {"capacity": {"cpu": 16, GPU: 4}, "available": {"cpu": 16, GPU: 1}},
                {"capacity": {"cpu": 16, GPU: 4}, "available": {"cpu": 16, GPU: 3}},
            ],
            one({"gpu": 3}, requests={"cpu": "100m", "memory": "64Mi"}),
            True,
            (1,),
            None,
            id="burstable-gpu-only-aligned-admit",
        ),
        pytest.param(
            [{"capacity": {"cpu": 16}, "allocatable": {"cpu": 14}}] * 2,
            one({"cpu": 15, "memory": "1Gi"}),
            False,
            (),
            "cpu: 15 fits 1 NUMA zone(s) by capacity",
            id="reserved-cpus-count-for-width-reject",
        ),
        pytest.param(
            [{"capacity": {"cpu": 16, GPU: 4}, "allocatable": {"cpu": 16, GPU: 3}}] * 2,
            one({"gpu": 4, "cpu": 2, "memory": "1Gi"}),
            False,
            (),
            "nvidia.com/gpu: 4 fits 1 NUMA zone(s) by capacity",
            id="unhealthy-devices-count-for-width-reject",
        ),
        pytest.param(
            GPU2_CPU64,
            one({"gpu": 4, "cpu": "1500m", "memory": "1Gi"}),
            True,
            (0, 1),
            None,
            id="fractional-cpu-not-aligned-admit",
        ),
        pytest.param(
            [{"capacity": {"cpu": 16, "memory": 8 * GI, "hugepages-1Gi": 4 * GI}}] * 2,
            one({"cpu": 2, "memory": "6Gi", "hugepages-1Gi": "6Gi"}),
            False,
            (),
            "preferred widths differ (cpu 1, hugepages-1Gi+memory 2)",
            id="memory-and-hugepages-sized-together-reject",
        ),
        pytest.param(
            [{"capacity": {"cpu": 16, "memory": 8 * GI, "hugepages-1Gi": 4 * GI}}] * 2,
            one({"cpu": 20, "memory": "6Gi", "hugepages-1Gi": "6Gi"}),
            True,
            (0, 1),
            None,
            id="memory-and-hugepages-two-zones-with-cpu-admit",
        ),
        pytest.param(
            [{"capacity": {"cpu": 16, "memory": 8 * GI}, "available": {"cpu": 16, "memory": GI}}]
            * 2,
            one({"cpu": 2, "memory": "4Gi"}),
            False,
            (),
            "memory manager: container main: memory does not fit NUMA zones [0]",
            id="memory-nowhere-free-reject",
        ),
    ],
)
def test_restricted_table(
    zones: Sequence[Mapping[str, Any]],
    pod: PodSpec,
    fit: bool,
    placed: tuple[int, ...],
    reason: str | None,
) -> None:
    memory_rows = any("memory" in z["capacity"] and "hugepages-1Gi" in z["capacity"] for z in zones)
    ignore = frozenset() if memory_rows or "memory" in str(reason) else NO_MEMORY
    result = run(zones, pod, ignore=ignore)
    assert result.fit is fit
    assert result.placement.zones == placed
    if reason is None:
        assert result.reason is None
    else:
        assert result.reason is not None
        assert reason in result.reason, result.reason


def test_chosen_mask_is_narrowest_lowest_and_split_fills_lowest_zone_first() -> None:
    zones = [{"capacity": {"cpu": 8, GPU: 4}}] * 3
    result = run(zones, one({"gpu": 6, "cpu": 10, "memory": "1Gi"}))
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 8, GPU: 4}, 1: {"cpu": 2, GPU: 2}}


def test_split_takes_wholly_free_zones_first_as_the_cpu_manager_does() -> None:
    """Zone 0 holds a reserved CPU (capacity 9, allocatable 8): never a whole NUMA node for
    takeByTopologyNUMAPacked, which takes zone 1 whole and the rest from zone 0."""
    reserved = {"capacity": {"cpu": 9, GPU: 4}, "allocatable": {"cpu": 8, GPU: 4}}
    whole = {"capacity": {"cpu": 8, GPU: 4}}
    result = run([reserved, whole], one({"gpu": 8, "cpu": 12, "memory": "1Gi"}))
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 4, GPU: 4}, 1: {"cpu": 8, GPU: 4}}
    # Used CPUs make a zone partial too; a whole zone larger than what is left is not taken.
    used = {"capacity": {"cpu": 8}, "available": {"cpu": 7}}
    free = {"capacity": {"cpu": 8}}
    assert run([used, free], one({"cpu": 10, "memory": "1Gi"})).placement.amounts == {
        0: {"cpu": 2},
        1: {"cpu": 8},
    }
    assert run([free, free], one({"cpu": 6, "memory": "1Gi"})).placement.amounts == {0: {"cpu": 6}}


def test_container_scope_walks_containers_and_shares_headroom() -> None:
    zones = [{"capacity": {"cpu": 4}}] * 2
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [
                container("a", {"cpu": 3, "memory": "1Gi"}),
                container("b", {"cpu": 3, "memory": "1Gi"}),
            ],
        )
    )
    result = run(zones, pod)
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 3}, 1: {"cpu": 3}}
    third = pod_from_manifest(
        pod_manifest(
            "p",
            [container(n, {"cpu": c, "memory": "1Gi"}) for n, c in (("a", 3), ("b", 3), ("c", 2))],
        )
    )
    rejected = run(zones, third)
    assert not rejected.fit
    assert rejected.reason is not None and "container c" in rejected.reason


def test_pod_scope_aligns_the_pod_total() -> None:
    zones = [{"capacity": {"cpu": 4}}] * 2
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [
                container("a", {"cpu": 3, "memory": "1Gi"}),
                container("b", {"cpu": 3, "memory": "1Gi"}),
            ],
        )
    )
    result = run(zones, pod, scope="pod")
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 4}, 1: {"cpu": 2}}
    single = run(zones, pod, scope="pod", policy="single-numa-node")
    assert not single.fit
    assert single.reason == "single-numa-node: pod: cpu: 6 needs 2 NUMA zones by capacity"


def test_init_container_cpus_are_reused_inside_the_next_mask() -> None:
    zones = [{"capacity": {"cpu": 4}}] * 2
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [container("app", {"cpu": 2, "memory": "1Gi"})],
            init=[container("setup", {"cpu": 4, "memory": "1Gi"})],
        )
    )
    result = run(zones, pod)
    assert result.fit
    # The app container reuses two of the init container's CPUs on zone 0.
    assert result.placement.amounts == {0: {"cpu": 4}}
    assert result.placement.total("cpu") == 4


def test_native_sidecar_keeps_its_cpus() -> None:
    zones = [{"capacity": {"cpu": 4}}] * 2
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [container("app", {"cpu": 4, "memory": "1Gi"})],
            init=[container("proxy", {"cpu": 2, "memory": "1Gi"}, restart_always=True)],
        )
    )
    result = run(zones, pod)
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 2}, 1: {"cpu": 4}}


@pytest.mark.parametrize("policy", ["best-effort", "none"])
def test_non_rejecting_policies_pass_through(policy: str) -> None:
    result = run(GPU2_CPU64, one({"gpu": 4, "cpu": 1, "memory": "1Gi"}), policy=policy)
    assert result.fit
    assert not result.engaged
    assert result.placement.zones == ()


def test_pod_without_aligned_resources_passes_through() -> None:
    pod = one({"cpu": "1", "memory": "1Gi"}, requests={"cpu": "500m", "memory": "512Mi"})
    result = run(GPU4_CPU16, pod)
    assert result.fit and not result.engaged


def test_ignore_list_removes_a_resource_from_alignment() -> None:
    pod = one({"gpu": 4, "cpu": 1, "memory": "1Gi"})
    assert not run(GPU2_CPU64, pod).fit
    assert run(GPU2_CPU64, pod, ignore=frozenset({"memory", "cpu"})).fit


def test_device_not_reported_per_zone_is_not_aligned() -> None:
    pod = one({"example.com/nic": 1, "cpu": 2, "memory": "1Gi"})
    result = run(GPU4_CPU16, pod)
    assert result.fit
    assert result.placement.amounts == {0: {"cpu": 2}}


def test_prefer_closest_ranks_equally_narrow_masks_by_distance() -> None:
    far = [[10, 30, 20], [30, 10, 20], [20, 20, 10]]
    zones = [{"capacity": {"cpu": 4}}] * 3
    topo = topology(zones, distances=far)
    pod = one({"cpu": 6, "memory": "1Gi"})
    lowest = NumaPlugin(PluginArgs(ignore_list=NO_MEMORY)).filter(pod, topo, ledger(topo))
    closest = NumaPlugin(PluginArgs(ignore_list=NO_MEMORY, prefer_closest_numa_nodes=True)).filter(
        pod, topo, ledger(topo)
    )
    assert lowest.placement.zones == (0, 1)
    assert closest.placement.zones == (0, 2)
    # single-numa-node ignores the option, as the kubelet does
    single = topology(zones, policy="single-numa-node", distances=far)
    two = one({"cpu": 2, "memory": "1Gi"})
    result = NumaPlugin(PluginArgs(ignore_list=NO_MEMORY, prefer_closest_numa_nodes=True)).filter(
        two, single, ledger(single)
    )
    assert result.placement.zones == (0,)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, PluginArgs(), id="defaults"),
        pytest.param(
            {
                "ignoreList": ["memory"],
                "reconstructAvailable": "false",
                "scoringStrategy": "BalancedAllocation",
                "preferClosestNUMANodes": True,
            },
            PluginArgs(
                ignore_list=frozenset({"memory"}),
                reconstruct_available=False,
                scoring_strategy="BalancedAllocation",
                prefer_closest_numa_nodes=True,
            ),
            id="all",
        ),
    ],
)
def test_parse_args(raw: Any, expected: PluginArgs) -> None:
    assert parse_args(raw, source="args.yaml") == expected


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        pytest.param([], "must be a mapping", id="not-mapping"),
        pytest.param({"ignoreList": "cpu"}, "ignoreList must be a list", id="ignore"),
        pytest.param({"reconstructAvailable": 1}, "reconstructAvailable must be", id="bool"),
        pytest.param({"preferClosestNUMANodes": "yes"}, "preferClosestNUMANodes must be", id="b2"),
    ],
)
def test_parse_args_errors(raw: Any, fragment: str) -> None:
    with pytest.raises(ArgsError, match=r"^args\.yaml: ") as err:
        parse_args(raw, source="args.yaml")
    assert fragment in str(err.value)
