"""Scoring strategies: seed 001's LeastNUMANodes example, the allocation scores, steering."""

from __future__ import annotations

import pytest

from fakenrt.podspec import pod_from_manifest
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.requests import AlignmentUnit, UnitKind
from fakenrt.scheduler.scoring import STRATEGIES, ScoreInput, strategy
from fakenrt.scheduler.scoring.least_numa_nodes import normalize
from tests.scheduler.builders import GI, GPU, container, guaranteed, ledger, pod_manifest, topology

DISTANCES = [[10, 20], [20, 10]]


def _cpu_units(*cpus: int) -> tuple[AlignmentUnit, ...]:
    return tuple(
        AlignmentUnit(container=f"c{i}", kind=UnitKind.APP, cpu=n) for i, n in enumerate(cpus)
    )


@pytest.mark.parametrize(
    ("available", "expected"),
    [
        pytest.param((2, 4), 82, id="seed-node-1"),
        pytest.param((8, 8), 94, id="seed-node-2"),
    ],
)
def test_least_numa_nodes_seed_example(available: tuple[int, int], expected: int) -> None:
    topo = topology(
        [{"capacity": {"cpu": 8}, "available": {"cpu": a}} for a in available],
        distances=DISTANCES,
    )
    inp = ScoreInput(ledger=ledger(topo), units=_cpu_units(3, 3), placement=Placement())
    assert strategy("LeastNUMANodes")(inp) == expected


def test_least_numa_nodes_seed_example_through_the_plugin() -> None:
    pod = pod_from_manifest(
        pod_manifest(
            "p",
            [
                container("a", {"cpu": 3, "memory": "1Gi"}),
                container("b", {"cpu": 3, "memory": "1Gi"}),
            ],
        )
    )
    args = PluginArgs(ignore_list=frozenset({"memory"}))
    scores = []
    for available in ((2, 4), (8, 8)):
        topo = topology(
            [{"capacity": {"cpu": 8}, "available": {"cpu": a}} for a in available],
            policy="none",
            distances=DISTANCES,
        )
        book = ledger(topo)
        plugin = NumaPlugin(args)
        scores.append(
            plugin.score(pod, topo, book, plugin.filter(pod, topo, book))["LeastNUMANodes"]
        )
    assert scores == [82, 94]


@pytest.mark.parametrize(
    ("nodes", "close", "expected"),
    [
        pytest.param(0, True, 100, id="kep-nothing-aligned"),
        pytest.param(1, True, 94, id="one-close"),
        pytest.param(2, False, 76, id="kep-two-not-close"),
        pytest.param(2, True, 82, id="kep-two-close"),
        pytest.param(8, False, 4, id="eight"),
    ],
)
def test_normalize(nodes: int, close: bool, expected: int) -> None:
    if nodes:
        assert normalize(nodes, close) == expected
    else:
        topo = topology([{"capacity": {"cpu": 4}}])
        inp = ScoreInput(ledger=ledger(topo), units=(), placement=Placement())
        assert strategy("LeastNUMANodes")(inp) == expected


def test_min_distance_prefers_close_pairs() -> None:
    far = [[10, 30, 20], [30, 10, 20], [20, 20, 10]]
    topo = topology([{"capacity": {"cpu": 4}}] * 3, distances=far)
    # 6 CPUs: {0,1} fits first but {0,2} (avg 15) is closer and also fits.
    inp = ScoreInput(ledger=ledger(topo), units=_cpu_units(6), placement=Placement())
    assert strategy("LeastNUMANodes")(inp) == 82
    busy = ZoneLedger(topo, {0: {"cpu": 4}, 1: {"cpu": 4}, 2: {"cpu": 0}})
    inp = ScoreInput(ledger=busy, units=_cpu_units(6), placement=Placement())
    assert strategy("LeastNUMANodes")(inp) == 76  # only {0,1}, not the closest pair


def test_least_numa_nodes_unfit_and_empty() -> None:
    topo = topology([{"capacity": {"cpu": 4}}] * 2)
    assert (
        strategy("LeastNUMANodes")(
            ScoreInput(ledger=ledger(topo), units=_cpu_units(9), placement=Placement())
        )
        == 0
    )
    assert (
        strategy("LeastNUMANodes")(
            ScoreInput(ledger=ledger(topo), units=_cpu_units(0), placement=Placement())
        )
        == 100
    )


@pytest.mark.parametrize(
    ("placement", "most", "least", "balanced"),
    [
        pytest.param({0: {"cpu": 4}}, 50, 50, 100, id="half-one-resource"),
        pytest.param({0: {"cpu": 8}}, 100, 0, 100, id="full"),
        pytest.param({0: {"cpu": 2, GPU: 4}}, 62, 37, 62, id="cpu-quarter-gpu-full"),
        pytest.param({0: {"cpu": 4}, 1: {"cpu": 4}}, 50, 50, 100, id="two-zones"),
        pytest.param({}, 0, 0, 0, id="nothing-charged"),
    ],
)
def test_allocation_scores(
    placement: dict[int, dict[str, int]], most: int, least: int, balanced: int
) -> None:
    topo = topology([{"capacity": {"cpu": 8, GPU: 4}}] * 2)
    inp = ScoreInput(ledger=ledger(topo), units=(), placement=Placement(amounts=placement))
    assert STRATEGIES["MostAllocated"](inp) == most
    assert STRATEGIES["LeastAllocated"](inp) == least
    assert STRATEGIES["BalancedAllocation"](inp) == balanced


def test_allocation_counts_what_the_zone_already_uses() -> None:
    topo = topology([{"capacity": {"cpu": 8}, "available": {"cpu": 4}}])
    inp = ScoreInput(ledger=ledger(topo), units=(), placement=Placement(amounts={0: {"cpu": 2}}))
    assert STRATEGIES["MostAllocated"](inp) == 75


def test_unknown_strategy_is_named() -> None:
    with pytest.raises(ValueError, match="unknown scoring strategy 'Fastest'"):
        strategy("Fastest")


def test_best_effort_steering_prefers_alignable_nodes() -> None:
    """On best-effort nodes the filter passes everything; the scores steer a pod to the node
    where the kubelet's best-effort alignment can succeed."""
    plugin = NumaPlugin(PluginArgs(ignore_list=frozenset({"memory"})))
    pod = guaranteed("p", cpu=2, gpu=2)
    split = topology(
        [{"capacity": {"cpu": 8, GPU: 2}, "available": {"cpu": 8, GPU: 1}}] * 2,
        policy="best-effort",
    )
    whole = topology([{"capacity": {"cpu": 8, GPU: 2}}] * 2, policy="best-effort")
    results = {}
    for name, topo in (("split", split), ("whole", whole)):
        book = ledger(topo)
        verdict = plugin.filter(pod, topo, book)
        assert verdict.fit and not verdict.engaged
        results[name] = plugin.score(pod, topo, book, verdict)
    # Alignment fails on "split": every strategy but LeastNUMANodes scores 0 there, and
    # LeastNUMANodes scores the two zones the pod needs (seed 001: all policies).
    assert results["split"].values == {
        "LeastNUMANodes": 82,
        "MostAllocated": 0,
        "LeastAllocated": 0,
        "BalancedAllocation": 0,
    }
    # Scored as the aligned placement zone 0 (2 of 8 CPUs, 2 of 2 GPUs): used fractions
    # 1/4 and 1, mean 5/8, standard deviation 3/8.
    assert results["whole"].values == {
        "LeastNUMANodes": 94,
        "MostAllocated": 62,
        "LeastAllocated": 37,
        "BalancedAllocation": 62,
    }


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", "single-numa-node"])
def test_least_numa_nodes_scores_the_zones_a_pod_needs_under_every_policy(policy: str) -> None:
    """Seed 001: "LeastNUMANodes strategy can score nodes running all TopologyManager
    policies". On a 4-zone node with one free GPU per zone (two installed), a pod needing
    one zone scores above one needing two, above one needing four - also on best-effort
    and none nodes where the kubelet's full alignment fails for the wider pods."""
    topo = topology(
        [{"capacity": {"cpu": 8, GPU: 2}, "available": {"cpu": 8, GPU: 1}}] * 4, policy=policy
    )
    plugin = NumaPlugin(PluginArgs(ignore_list=frozenset({"memory"})))
    scores = {}
    for gpus in (1, 2, 4):
        pod = guaranteed(f"p{gpus}", cpu=1, gpu=gpus)
        book = ledger(topo)
        verdict = plugin.filter(pod, topo, book)
        if not verdict.fit:
            assert policy in ("restricted", "single-numa-node") and gpus > 1
            continue
        scores[gpus] = plugin.score(pod, topo, book, verdict)["LeastNUMANodes"]
    expected = {1: 94, 2: 82, 4: 58}
    if policy in ("restricted", "single-numa-node"):
        expected = {1: 94}  # the wider pods are rejected there: no score at all
    assert scores == expected


def test_scores_without_nrt_are_zero_and_non_numa_pod_is_neutral() -> None:
    plugin = NumaPlugin()
    pod = guaranteed("p", cpu=2, memory="1Gi")
    verdict = plugin.filter(pod, None, None)
    assert verdict.fit
    assert set(plugin.score(pod, None, None, verdict).values.values()) == {0}
    topo = topology([{"capacity": {GPU: 2}}], policy="restricted")
    book = ledger(topo)
    verdict = plugin.filter(pod, topo, book)
    assert plugin.score(pod, topo, book, verdict).values == {
        "LeastNUMANodes": 100,
        "MostAllocated": 0,
        "LeastAllocated": 0,
        "BalancedAllocation": 0,
    }


def test_issue_example_scores() -> None:
    topo = topology(
        [
            {
                "capacity": {"cpu": 32, "memory": 64 * GI, GPU: 4},
                "allocatable": {"cpu": 30, "memory": 64 * GI, GPU: 4},
            },
            {"capacity": {"cpu": 32, "memory": 64 * GI, GPU: 4}},
        ],
        policy="single-numa-node",
        distances=DISTANCES,
    )
    pod = guaranteed("p", cpu=12, memory="16Gi", gpu=2)
    plugin = NumaPlugin()
    book = ledger(topo)
    verdict = plugin.filter(pod, topo, book)
    scores = plugin.score(pod, topo, book, verdict)
    assert verdict.placement.zones == (0,)
    assert scores.values == {
        "LeastNUMANodes": 94,
        "MostAllocated": 38,
        "LeastAllocated": 61,
        "BalancedAllocation": 89,
    }
