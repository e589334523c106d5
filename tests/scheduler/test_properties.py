"""Rules checked on random nodes and pods (hypothesis)."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.scoring import STRATEGIES
from tests.scheduler.builders import GPU, container, ledger, pod_manifest, topology

RESOURCES = ("cpu", GPU)


@st.composite
def nodes(draw: st.DrawFn, max_zones: int = 4) -> list[dict[str, dict[str, int]]]:
    n = draw(st.integers(1, max_zones))
    zones = []
    for _ in range(n):
        capacity = {"cpu": draw(st.integers(0, 8)), GPU: draw(st.integers(0, 4))}
        allocatable = {r: draw(st.integers(0, capacity[r])) for r in RESOURCES}
        available = {r: draw(st.integers(0, allocatable[r])) for r in RESOURCES}
        zones.append({"capacity": capacity, "allocatable": allocatable, "available": available})
    return zones


@st.composite
def requests(draw: st.DrawFn) -> dict[str, int]:
    req = {"cpu": draw(st.integers(1, 12)), GPU: draw(st.integers(0, 8))}
    return {k: v for k, v in req.items() if v}


def one_container_pod(req: dict[str, int]) -> PodSpec:
    return pod_from_manifest(pod_manifest("p", [container("main", {**req, "memory": "1Gi"})]))


PLUGIN = NumaPlugin(PluginArgs(ignore_list=frozenset({"memory"})))


def oracle(zones: list[dict[str, dict[str, int]]], req: dict[str, int], single: bool) -> bool:
    """Seed 000's rule, computed by brute force: admit iff some mask M is, for every
    requested resource, of that resource's minimal width by capacity and has the request
    available (single-numa-node: |M| = 1)."""
    ids = range(len(zones))
    masks = [c for w in range(1, len(zones) + 1) for c in combinations(ids, w)]
    common = None
    for r, amount in req.items():
        if r == "cpu":
            cpu_ids = [i for i in ids if zones[i]["capacity"]["cpu"] > 0]
            rmasks = [m for m in masks if all(i in cpu_ids for i in m)]
            default = len(cpu_ids)
        else:
            rmasks = masks
            default = len(zones)
        widths = [len(m) for m in rmasks if sum(zones[i]["capacity"][r] for i in m) >= amount]
        width = min(widths, default=default)
        preferred = {
            m
            for m in rmasks
            if len(m) == width
            and sum(zones[i]["available"][r] for i in m) >= amount
            and (not single or len(m) == 1)
        }
        common = preferred if common is None else common & preferred
    return bool(common)


@settings(max_examples=300, deadline=None)
@given(zones=nodes(), req=requests())
def test_restricted_admits_exactly_when_a_common_minimal_width_mask_exists(
    zones: list[dict[str, dict[str, int]]], req: dict[str, int]
) -> None:
    topo = topology(zones, policy="restricted")
    result = PLUGIN.filter(one_container_pod(req), topo, ledger(topo))
    assert result.fit is oracle(zones, req, single=False)
    if result.fit:
        for r, amount in req.items():
            assert result.placement.total(r) == amount


@settings(max_examples=300, deadline=None)
@given(zones=nodes(), req=requests())
def test_single_numa_node_returns_one_zone_or_none(
    zones: list[dict[str, dict[str, int]]], req: dict[str, int]
) -> None:
    topo = topology(zones, policy="single-numa-node")
    book = ledger(topo)
    result = PLUGIN.filter(one_container_pod(req), topo, book)
    assert result.fit is oracle(zones, req, single=True)
    assert len(result.placement.zones) == (1 if result.fit else 0)
    if result.fit:
        zone = result.placement.zones[0]
        assert all(book.free(zone, r) >= amount for r, amount in req.items())
        scores = PLUGIN.score(one_container_pod(req), topo, book, result)
        assert set(scores.values) == set(STRATEGIES)
        assert all(0 <= v <= 100 for v in scores.values.values())


placements = st.builds(
    Placement,
    amounts=st.dictionaries(
        st.integers(0, 2),
        st.dictionaries(st.sampled_from(("cpu", GPU, "memory")), st.integers(1, 5), max_size=3),
        max_size=3,
    ),
    memory_blocks=st.lists(
        st.frozensets(st.integers(0, 2), min_size=1, max_size=3), max_size=3
    ).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(
    charged=st.lists(placements, max_size=6),
    probe=st.lists(placements, min_size=1, max_size=4),
    order=st.randoms(use_true_random=False),
)
def test_reservation_then_rollback_restores_the_exact_state(
    charged: list[Placement], probe: list[Placement], order: object
) -> None:
    topo = topology([{"capacity": {"cpu": 8, GPU: 4, "memory": 100}}] * 3)
    book = ZoneLedger.from_nrt(topo)
    for p in charged:
        book.charge(p)
    before = book.snapshot()
    for p in probe:
        book.charge(p)
    rollback = list(reversed(probe))
    for p in rollback:
        book.credit(p)
    assert book.snapshot() == before
