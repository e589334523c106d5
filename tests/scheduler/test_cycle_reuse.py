"""The cycle's shortcuts change no decision: reusing a node's evaluation for pods of the
same shape, remembering shapes that fit nowhere, and carrying unchanged nodes' books from
cycle to cycle (:class:`CycleMemo`) give exactly what evaluating every pod on every node
from scratch gives (hypothesis)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.podspec import PodSpec
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.cycle import CycleMemo, Decision, SchedulingCycle
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod
from tests.scheduler.builders import GPU, guaranteed, topology

POLICIES = ("single-numa-node", "restricted", "best-effort")
SHAPES = ((1, 0), (2, 1), (3, 2), (4, 4), (6, 0), (2, 8))  # (cpu, gpu)


@st.composite
def node_snapshots(draw: st.DrawFn) -> tuple[NodeSnapshot, ...]:
    out = []
    for i in range(draw(st.integers(1, 4))):
        zones = []
        for _ in range(draw(st.integers(1, 3))):
            cpu, gpu = draw(st.integers(1, 8)), draw(st.integers(0, 4))
            zones.append(
                {"capacity": {"cpu": cpu, GPU: gpu, "memory": 64 * 2**30}}
                if gpu
                else {"capacity": {"cpu": cpu, "memory": 64 * 2**30}}
            )
        nrt = topology(zones, policy=draw(st.sampled_from(POLICIES)))
        name = f"n{i}"
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
    return (
        d.pod_key,
        d.node,
        d.placement,
        dict(d.scores.values),
        dict(d.rejections),
        dict(d.categories),
        dict(d.requests),
    )


ARGS = st.builds(
    PluginArgs,
    ignore_list=st.just(frozenset({"memory"})),
    reconstruct_available=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(
    nodes=node_snapshots(),
    first=st.lists(st.integers(0, len(SHAPES) - 1), max_size=12),
    second=st.lists(st.integers(0, len(SHAPES) - 1), max_size=12),
    args=ARGS,
    reserve=st.booleans(),
)
def test_shortcuts_decide_exactly_as_evaluating_everything(
    *,
    nodes: tuple[NodeSnapshot, ...],
    first: list[int],
    second: list[int],
    args: PluginArgs,
    reserve: bool,
) -> None:
    plugin = NumaPlugin(args)
    memo = CycleMemo()
    snapshot = ClusterSnapshot(nodes=nodes)
    fast = SchedulingCycle(snapshot, plugin, reserve=reserve, memo=memo)
    slow = SchedulingCycle(snapshot, plugin, reserve=reserve, reuse=False)
    bound: list[PodSnapshot] = []
    for pod in pods(first, "a"):
        got, want = fast.schedule(pod), slow.schedule(pod)
        assert comparable(got) == comparable(want)
        if got.node is not None:
            annotations = got.placement.annotations()
            spec = replace(pod, node_name=got.node, annotations=annotations)
            bound.append(PodSnapshot(spec=spec, phase="Running"))
    # The next cycle: nodes that received a pod changed, the others come from the memo.
    later = ClusterSnapshot(nodes=nodes, pods=tuple(bound))
    grouped: dict[str, list[NodePod]] = {}
    for p in bound:
        grouped.setdefault(p.spec.node_name, []).append(NodePod(spec=p.spec, phase=p.phase))
    node_pods = {name: tuple(ps) for name, ps in grouped.items()}
    # Twice from the same memo: the first of these cycles' charges must not leak into the
    # books the memo keeps; the pods also come pre-grouped per node (node_pods).
    for _ in range(2):
        fast = SchedulingCycle(later, plugin, reserve=reserve, memo=memo)
        grouped_fast = SchedulingCycle(
            ClusterSnapshot(nodes=nodes), plugin, reserve=reserve, memo=memo, node_pods=node_pods
        )
        slow = SchedulingCycle(later, plugin, reserve=reserve, reuse=False)
        for pod in pods(second, "b"):
            expected = comparable(slow.schedule(pod))
            assert comparable(fast.schedule(pod)) == expected
            assert comparable(grouped_fast.schedule(pod)) == expected
