"""The pure scheduling cycle: whole-node filter, NUMA filter, scoring, reservation."""

from __future__ import annotations

from decimal import Decimal

from exporter.annotations import OBSERVED_PLACEMENT
from fakenrt.podspec import pod_from_manifest
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.backoff import Backoff
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.cycle import SchedulingCycle
from fakenrt.scheduler.plugin import NumaPlugin
from tests.scheduler.builders import GI, GPU, container, guaranteed, pod_manifest, topology

FOUR_CORE_ZONES = [{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2


def node(name: str, zones: list[dict[str, dict[str, int]]] | None, gpus: int = 0) -> NodeSnapshot:
    allocatable = {"cpu": Decimal(8), "memory": Decimal(64 * GI), "pods": Decimal(110)}
    if gpus:
        allocatable[GPU] = Decimal(gpus)
    nrt = topology(zones, policy="single-numa-node") if zones is not None else None
    if nrt is not None:
        nrt = type(nrt)(node=name, policy=nrt.policy, scope=nrt.scope, zones=nrt.zones)
    return NodeSnapshot(name=name, allocatable=allocatable, nrt=nrt)


def test_three_two_two_cores_exactly_two_placed_in_one_cycle() -> None:
    snapshot = ClusterSnapshot(nodes=(node("n1", FOUR_CORE_ZONES),))
    cycle = SchedulingCycle(snapshot, NumaPlugin())
    decisions = [
        cycle.schedule(guaranteed(name, cpu=c, memory="1Gi"))
        for name, c in (("a", 3), ("b", 3), ("c", 2))
    ]
    assert [d.node for d in decisions] == ["n1", "n1", None]
    assert [d.placement.zones for d in decisions[:2]] == [(0,), (1,)]
    assert (
        decisions[2].message
        == (
            "0/1 nodes are available: 1 single-numa-node: container main: "
            "cpu: no single NUMA zone has 2 available."
        )
        or "single-numa-node" in decisions[2].message
    )
    assert decisions[2].categories == {"n1": "single-numa-node"}


def test_forget_credits_back_exactly() -> None:
    snapshot = ClusterSnapshot(nodes=(node("n1", FOUR_CORE_ZONES),))
    cycle = SchedulingCycle(snapshot, NumaPlugin())
    books = cycle.node_books("n1")
    assert books.ledger is not None
    before = (books.ledger.snapshot(), dict(books.requested), books.pods)
    decision = cycle.schedule(guaranteed("a", cpu=3, memory="1Gi"))
    assert decision.node == "n1"
    cycle.forget(decision)
    assert (books.ledger.snapshot(), dict(books.requested), books.pods) == before


def test_whole_node_resources_are_checked_before_numa() -> None:
    busy = PodSnapshot(
        spec=pod_from_manifest(
            pod_manifest("old", [container("main", {"cpu": 7, "memory": "1Gi"})], node="n1")
        ),
        phase="Running",
    )
    done = PodSnapshot(
        spec=pod_from_manifest(
            pod_manifest("done", [container("main", {"cpu": 8, "memory": "1Gi"})], node="n2")
        ),
        phase="Succeeded",
    )
    snapshot = ClusterSnapshot(
        nodes=(node("n1", FOUR_CORE_ZONES), node("n2", FOUR_CORE_ZONES)), pods=(busy, done)
    )
    decision = SchedulingCycle(snapshot, NumaPlugin()).schedule(
        guaranteed("p", cpu=2, memory="1Gi")
    )
    assert decision.node == "n2"
    assert decision.rejections == {"n1": "Insufficient cpu"}
    assert decision.categories == {"n1": "resources"}


def test_pod_count_and_readiness() -> None:
    full = NodeSnapshot(
        name="full", allocatable={"cpu": Decimal(8), "memory": Decimal(GI), "pods": Decimal(0)}
    )
    down = NodeSnapshot(
        name="down", allocatable={"cpu": Decimal(8), "memory": Decimal(GI)}, ready=False
    )
    decision = SchedulingCycle(ClusterSnapshot(nodes=(full, down)), NumaPlugin()).schedule(
        guaranteed("p", cpu=1, memory="1Mi")
    )
    assert decision.node is None
    assert decision.rejections == {"full": "Too many pods", "down": "node not ready"}


def test_observed_placement_steers_and_score_picks_the_tighter_node() -> None:
    zones = [{"capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI}}] * 2
    holder = PodSnapshot(
        spec=pod_from_manifest(
            pod_manifest(
                "holder",
                [container("main", {"cpu": 1, "memory": "1Gi"})],
                node="n1",
                annotations={
                    OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"nvidia.com/gpu":"4"}}]'
                },
            )
        ),
        phase="Running",
    )
    snapshot = ClusterSnapshot(nodes=(node("n1", zones, gpus=8),), pods=(holder,))
    decision = SchedulingCycle(snapshot, NumaPlugin()).schedule(guaranteed("p", cpu=2, gpu=2))
    assert decision.node == "n1"
    assert decision.placement.zones == (1,)
    args = PluginArgs(scoring_strategy="MostAllocated")
    two = ClusterSnapshot(
        nodes=(node("empty", zones, gpus=8), node("n1", zones, gpus=8)),
        pods=(holder,),
    )
    packed = SchedulingCycle(two, NumaPlugin(args)).schedule(guaranteed("p", cpu=2, gpu=2))
    assert (
        packed.node == "empty"
    )  # ties on MostAllocated break by name; zone 1 of n1 == empty zone 0
    spread = SchedulingCycle(two, NumaPlugin()).schedule(guaranteed("p", cpu=2, gpu=2))
    assert spread.node == "empty"


def test_nodes_without_nrt_pass_the_numa_filter() -> None:
    snapshot = ClusterSnapshot(nodes=(node("plain", None, gpus=8),))
    decision = SchedulingCycle(snapshot, NumaPlugin()).schedule(guaranteed("p", cpu=2, gpu=8))
    assert decision.node == "plain"
    assert decision.placement.zones == ()


def test_pending_order_and_backoff() -> None:
    def pending(name: str, created: str, scheduler: str = "numa") -> PodSnapshot:
        return PodSnapshot(
            spec=pod_from_manifest(pod_manifest(name, [container("m", {"cpu": 1})])),
            scheduler_name=scheduler,
            created=created,
        )

    snap = ClusterSnapshot(
        pods=(
            pending("b", "2024-01-02"),
            pending("a", "2024-01-03"),
            pending("c", "2024-01-01", "other"),
        )
    )
    assert [p.spec.name for p in snap.pending("numa")] == ["b", "a"]
    backoff = Backoff(initial=1.0, maximum=4.0)
    assert backoff.ready("k", 0.0)
    assert [backoff.failed("k", 0.0) for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    assert not backoff.ready("k", 3.9) and backoff.ready("k", 4.0)
    backoff.keep_only(set())
    assert backoff.failures("k") == 0


def test_best_effort_node_reserves_the_aligned_placement() -> None:
    zones = [{"capacity": {"cpu": 4, "memory": 16 * GI}}] * 2
    be = topology(zones, policy="best-effort")
    be = type(be)(node="be", policy=be.policy, scope=be.scope, zones=be.zones)
    snapshot = ClusterSnapshot(
        nodes=(
            NodeSnapshot(
                name="be",
                allocatable={"cpu": Decimal(8), "memory": Decimal(32 * GI), "pods": Decimal(9)},
                nrt=be,
            ),
        )
    )
    cycle = SchedulingCycle(snapshot, NumaPlugin())
    first = cycle.schedule(guaranteed("a", cpu=3, memory="1Gi"))
    second = cycle.schedule(guaranteed("b", cpu=3, memory="1Gi"))
    assert first.placement.zones == (0,) and second.placement.zones == (1,)
    # A pod that cannot be aligned any more still binds (best-effort never rejects) and
    # charges nothing rather than a guess.
    third = cycle.schedule(guaranteed("c", cpu=2, memory="1Gi"))
    assert third.node == "be"
    assert third.placement.empty


def test_without_reservation_every_pod_of_the_cycle_sees_the_snapshot_zones() -> None:
    # 3, 3 and 2 cores on two 4-core zones: without the in-cycle reservation all three
    # land (the NUMA filter sees 4 free cores per zone each time; whole-node accounting,
    # 8 cores, still holds), and the first two both pick zone 0.
    snapshot = ClusterSnapshot(nodes=(node("n1", FOUR_CORE_ZONES),))
    cycle = SchedulingCycle(snapshot, NumaPlugin(), reserve=False)
    books = cycle.node_books("n1")
    assert books.ledger is not None
    zones_before = books.ledger.snapshot()
    decisions = [
        cycle.schedule(guaranteed(name, cpu=c, memory="1Gi"))
        for name, c in (("a", 3), ("b", 3), ("c", 2))
    ]
    assert [d.node for d in decisions] == ["n1", "n1", "n1"]
    assert [d.placement.zones for d in decisions] == [(0,), (0,), (0,)]
    assert books.ledger.snapshot() == zones_before
    assert books.requested["cpu"] == 8
    cycle.forget(decisions[0])
    assert books.requested["cpu"] == 5 and books.ledger.snapshot() == zones_before


def test_backoff_stays_at_its_maximum_after_thousands_of_failures() -> None:
    # 2**1024 does not fit a float: a pod unschedulable for hours must not crash the loop.
    backoff = Backoff(initial=1.0, maximum=10.0)
    delays = [backoff.failed("p", float(n)) for n in range(2000)]
    assert delays[:5] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert set(delays[4:]) == {10.0}
