"""The cycle's shortcuts and indexes change no decision (hypothesis): the cold cycle's
lazy books, reused evaluations, shapes that fit nowhere and early stop, and the books kept
between cycles (:class:`ClusterBooks`: state classes, per-node rebuilds, the log of moved
nodes) give exactly what evaluating every pod on every node from scratch gives; and nodes
in equal states evaluate every shape alike (what the state classes rely on)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.nrt.fingerprint import fingerprint
from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.books import NodeBooks, state_key, static_key
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.clusterbooks import ClusterBooks
from fakenrt.scheduler.cycle import SchedulingCycle
from fakenrt.scheduler.decision import Decision, evaluate
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod
from tests.scheduler.builders import GPU, guaranteed, topology

POLICIES = ("single-numa-node", "restricted", "best-effort")
SHAPES = ((1, 0), (2, 1), (3, 2), (4, 4), (6, 0), (2, 8))  # (cpu, gpu)


@st.composite
def node_snapshots(draw: st.DrawFn) -> tuple[NodeSnapshot, ...]:
    """1-5 nodes; a node is often a copy of the one before (another name, the same
    layout), so that nodes in equal states - the state classes - are common."""
    out: list[NodeSnapshot] = []
    for i in range(draw(st.integers(1, 5))):
        name = f"n{i}"
        copy = draw(st.booleans())
        if out and copy:
            previous = out[-1]
            assert previous.nrt is not None
            out.append(replace(previous, name=name, nrt=replace(previous.nrt, node=name)))
            continue
        zones = []
        for _ in range(draw(st.integers(1, 3))):
            cpu, gpu = draw(st.integers(1, 8)), draw(st.integers(0, 4))
            zones.append(
                {"capacity": {"cpu": cpu, GPU: gpu, "memory": 64 * 2**30}}
                if gpu
                else {"capacity": {"cpu": cpu, "memory": 64 * 2**30}}
            )
        nrt = topology(zones, policy=draw(st.sampled_from(POLICIES)))
        nrt = replace(nrt, node=name)
        cpus = sum(z["capacity"]["cpu"] for z in zones)
        gpus = sum(z["capacity"].get(GPU, 0) for z in zones)
        allocatable = {
            "cpu": Decimal(cpus),
            "memory": Decimal(64 * 2**30 * len(zones)),
            GPU: Decimal(gpus),
            "pods": Decimal(draw(st.integers(1, 6))),
        }
        out.append(NodeSnapshot(name=name, allocatable=allocatable, nrt=nrt))
    return tuple(out)


def pods(indices: list[int], prefix: str) -> list[PodSpec]:
    out = []
    for n, i in enumerate(indices):
        cpu, gpu = SHAPES[i]
        out.append(
            guaranteed(f"{prefix}{n}", cpu=cpu, gpu=gpu)
            if gpu
            else guaranteed(f"{prefix}{n}", cpu=cpu)
        )
    return out


def comparable(d: Decision) -> tuple[object, ...]:
    """What every way of building a cycle must decide alike."""
    return (d.pod_key, d.node, d.placement, dict(d.scores.values), dict(d.requests))


def assert_same(fast: Decision, slow: Decision, *, names_rejections: bool = True) -> None:
    """``fast`` decided as ``slow`` (the reference, every node examined): same node,
    placement, scores; when no node fits, the same reasons for every node; when one fits,
    the nodes ``fast`` examined and refused were refused by ``slow`` for the same reasons."""
    assert comparable(fast) == comparable(slow)
    if not names_rejections:
        return
    if slow.node is None:
        assert dict(fast.rejections) == dict(slow.rejections)
        assert dict(fast.categories) == dict(slow.categories)
    else:
        assert fast.rejections.items() <= slow.rejections.items()
        assert fast.categories.items() <= slow.categories.items()


ARGS = st.builds(
    PluginArgs,
    ignore_list=st.just(frozenset({"memory"})),
    reconstruct_available=st.booleans(),
    scoring_strategy=st.sampled_from(["LeastNUMANodes", "LeastNUMANodes", "MostAllocated"]),
)


def bind(pod: PodSpec, decision: Decision) -> PodSnapshot:
    assert decision.node is not None
    spec = replace(pod, node_name=decision.node, annotations=decision.placement.annotations())
    return PodSnapshot(spec=spec, phase="Running")


def by_node(bound: list[PodSnapshot]) -> dict[str, tuple[NodePod, ...]]:
    grouped: dict[str, list[NodePod]] = {}
    for p in bound:
        grouped.setdefault(p.spec.node_name, []).append(NodePod(spec=p.spec, phase=p.phase))
    return {name: tuple(ps) for name, ps in grouped.items()}


@settings(max_examples=150, deadline=None)
@given(
    nodes=node_snapshots(),
    first=st.lists(st.integers(0, len(SHAPES) - 1), max_size=12),
    second=st.lists(st.integers(0, len(SHAPES) - 1), max_size=12),
    args=ARGS,
    reserve=st.booleans(),
)
def test_a_cold_cycle_decides_exactly_as_evaluating_everything(
    *,
    nodes: tuple[NodeSnapshot, ...],
    first: list[int],
    second: list[int],
    args: PluginArgs,
    reserve: bool,
) -> None:
    """The loop's cycle: lazy books, reused evaluations, shapes that fit nowhere, the
    search stopped once no later node can score higher."""
    plugin = NumaPlugin(args)
    snapshot = ClusterSnapshot(nodes=nodes)
    fast = SchedulingCycle(snapshot, plugin, reserve=reserve)
    slow = SchedulingCycle(snapshot, plugin, reserve=reserve, reuse=False)
    bound: list[PodSnapshot] = []
    for pod in pods(first, "a"):
        got, want = fast.schedule(pod), slow.schedule(pod)
        assert_same(got, want)
        if got.node is not None:
            bound.append(bind(pod, got))
    later = ClusterSnapshot(nodes=nodes, pods=tuple(bound))
    fast = SchedulingCycle(later, plugin, reserve=reserve)
    grouped = SchedulingCycle(
        ClusterSnapshot(nodes=nodes), plugin, reserve=reserve, node_pods=by_node(bound)
    )
    slow = SchedulingCycle(later, plugin, reserve=reserve, reuse=False)
    for pod in pods(second, "b"):
        want = slow.schedule(pod)
        assert_same(fast.schedule(pod), want)
        assert_same(grouped.schedule(pod), want)


@settings(max_examples=150, deadline=None)
@given(
    start=node_snapshots(),
    cycles=st.lists(
        st.tuples(
            st.lists(st.integers(0, len(SHAPES) - 1), max_size=8),
            st.lists(st.integers(0, 4), max_size=2),  # nodes whose pods all finish
            st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=2),  # NRT news
        ),
        min_size=1,
        max_size=4,
    ),
    args=ARGS,
    reserve=st.booleans(),
)
def test_kept_books_decide_exactly_as_evaluating_everything(
    *,
    start: tuple[NodeSnapshot, ...],
    cycles: list[tuple[list[int], list[int], list[tuple[int, int]]]],
    args: PluginArgs,
    reserve: bool,
) -> None:
    """The simulation's cycles over books kept between cycles (ClusterBooks): state
    classes, per-node rebuilds (placements kept when only the NRT changed, each unchanged
    pod's part kept when its node's pods changed), the log of
    moved nodes behind "fits nowhere" - against a cycle built from scratch and evaluating
    every pod on every node, cycle after cycle while pods bind, nodes empty and NRTs are
    published (other free amounts, a fingerprint matching the pods or not)."""
    plugin = NumaPlugin(args)
    books = ClusterBooks(plugin, reserve=reserve)
    nodes = {node.name: node for node in start}
    names = sorted(nodes)
    on_node: dict[str, tuple[NodePod, ...]] = dict.fromkeys(names, ())
    for node in start:
        books.set_node(node, on_node[node.name])
    bound: list[PodSnapshot] = []
    # Each bound pod is one NodePod value from its bind on (the books keep what an
    # unchanged pod gave them).
    made: dict[str, NodePod] = {}
    for n, (shapes, emptied, news) in enumerate(cycles):
        snapshot = ClusterSnapshot(nodes=tuple(nodes.values()), pods=tuple(bound))
        kept = SchedulingCycle.over(books)
        slow = SchedulingCycle(snapshot, plugin, reserve=reserve, reuse=False)
        touched: set[str] = set()
        # Every shape twice: the second attempt of a shape that fitted nowhere is
        # decided from the log of moved nodes.
        for pod in pods([*shapes, *shapes], f"c{n}-"):
            got, want = kept.schedule(pod), slow.schedule(pod)
            assert_same(got, want, names_rejections=False)
            if got.node is not None:
                bound.append(bind(pod, got))
                touched.add(got.node)
        gone = {names[i % len(names)] for i in emptied}
        bound = [p for p in bound if p.spec.node_name not in gone]
        grouped: dict[str, tuple[NodePod, ...]] = {}
        for p in bound:
            value = made.setdefault(p.spec.key, NodePod(spec=p.spec, phase=p.phase))
            grouped[p.spec.node_name] = (*grouped.get(p.spec.node_name, ()), value)
        for name in touched | gone:
            on_node[name] = grouped.get(name, ())
            books.set_node(nodes[name], on_node[name])
        for where, cut in news:
            # A new NRT for the node: each zone's free amounts cut by ``cut``, and the
            # fingerprint of the pods on it (NRT current: taken as it is) or none.
            name = names[where % len(names)]
            nrt = nodes[name].nrt
            assert nrt is not None
            available = {
                z.id: {r: max(0, v - cut) for r, v in z.available.items()} for z in nrt.zones
            }
            keys = [(p.spec.namespace, p.spec.name) for p in on_node[name]]
            current = fingerprint(keys) if cut % 2 else None
            nodes[name] = replace(
                nodes[name], nrt=nrt.with_available(available, fingerprint=current)
            )
            books.set_node(nodes[name], on_node[name])


@settings(max_examples=100, deadline=None)
@given(
    nodes=node_snapshots(),
    placed=st.lists(st.tuples(st.integers(0, 3), st.integers(0, len(SHAPES) - 1)), max_size=10),
    args=ARGS,
)
def test_nodes_in_equal_states_evaluate_every_shape_alike(
    *,
    nodes: tuple[NodeSnapshot, ...],
    placed: list[tuple[int, int]],
    args: PluginArgs,
) -> None:
    """The state key is all an evaluation depends on: books with equal keys give every
    shape the same verdict, reason, placement and score."""
    plugin = NumaPlugin(args)
    cycle = SchedulingCycle(ClusterSnapshot(nodes=nodes), plugin)
    for i, (where, shape) in enumerate(placed):
        node = nodes[where % len(nodes)]
        (pod,) = pods([shape], f"p{i}-")
        books = cycle.node_books(node.name)
        result = plugin.filter(pod, node.nrt, books.ledger)
        placement = plugin.placement_to_charge(pod, node.nrt, books.ledger, result)
        books.charge(effective_requests(pod), placement, sign=+1, reserve=True)
    states: dict[object, list[NodeBooks]] = {}
    for node in nodes:
        books = cycle.node_books(node.name)
        states.setdefault(state_key(books, static_key(node.nrt)), []).append(books)
    for alike in states.values():
        for i in range(len(SHAPES)):
            (pod,) = pods([i], "x")
            ordered = sorted(effective_requests(pod).items())
            first, *others = (evaluate(plugin, b, pod, ordered) for b in alike)
            for other in others:
                assert other == first
