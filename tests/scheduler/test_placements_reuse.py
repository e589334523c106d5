"""A node's placements rebuilt from the ones before (each unchanged pod's part kept, and
when every part was kept the ledger updated by the pods that left, came or changed) are
exactly the placements read from scratch (hypothesis): the ledger with its memory blocks
in charge order, sources, unplaced, problems, unaccounted pods, whether every part was
kept and the fingerprint's verdict - while pods come, go and change annotations, with
memory groups over several zones (spread by what earlier pods left free, so never kept),
unusable annotations and terminal pods among them."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
)
from fakenrt.nrt import fingerprint
from fakenrt.nrt.fingerprint import METHOD_WITH_EXCLUSIVE_RESOURCES
from fakenrt.scheduler.reconstruction import (
    NodePod,
    Placements,
    node_pod_from_manifest,
    placements,
    reconstruct_with,
)
from tests.scheduler.builders import GI, GPU, container, pod_manifest, topology

ZONES = [
    {
        "capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI},
        "available": {"cpu": 0, GPU: 0, "memory": 0},
    }
] * 2

GROUP = '[{{"memoryNodes":["node-0","node-1"],"amount":{{"memory":"{}"}}}}]'
ANNOTATIONS: list[dict[str, str]] = [
    {},
    {OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"8","nvidia.com/gpu":"2"}}]'},
    {PREDICTED_PLACEMENT: '[{"zone":"node-1","amount":{"cpu":"4","memory":"1024"}}]'},
    {OBSERVED_PLACEMENT: "[]", OBSERVED_MEMORY_GROUPS: GROUP.format(40 * GI)},
    {PREDICTED_PLACEMENT: "[]", PREDICTED_MEMORY_GROUPS: GROUP.format(90 * GI)},
    {OBSERVED_PLACEMENT: "{", PREDICTED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"2"}}]'},
    {OBSERVED_PLACEMENT: '[{"zone":"node-7","amount":{"cpu":"1"}}]'},
    {OBSERVED_MEMORY_GROUPS: "null"},
]
#: (limits, an init container's limits, phase) of a pod: Guaranteed pods; an init
#: container that keeps CPUs no later container takes (unaccounted when observed).
KINDS: list[tuple[dict[str, int], dict[str, int] | None, str]] = [
    ({"cpu": 2, "memory": 2 * GI}, None, "Running"),
    ({"cpu": 1, GPU: 1}, None, "Running"),
    ({"cpu": 1}, {"cpu": 4}, "Running"),
    ({"cpu": 1}, None, "Succeeded"),
]


def node_pod(name: str, kind: int, annotations: int) -> NodePod:
    limits, init, phase = KINDS[kind]
    return node_pod_from_manifest(
        pod_manifest(
            name,
            [container("main", limits)],
            init=[container("setup", init)] if init else (),
            annotations=ANNOTATIONS[annotations],
            node="n1",
            phase=phase,
        )
    )


BASE = topology(ZONES)


def comparable(placed: Placements) -> tuple[object, ...]:
    ledger = placed.ledger
    return (
        {z: {r: v for r, v in a.items() if v} for z, a in ledger.available.items()},
        dict(ledger.blocks),
        dict(placed.sources),
        placed.unplaced,
        placed.problems,
        placed.unaccounted,
        placed.whole,
    )


# A step: (pod index, kind, annotations) to add or replace; None annotations: remove it.
STEPS = st.lists(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.integers(0, len(KINDS) - 1),
            st.none() | st.integers(0, len(ANNOTATIONS) - 1),
        ),
        max_size=3,
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@example(  # a terminal pod goes: the fingerprints that counted it go with it
    steps=[[(0, 0, 1), (1, 3, 1)], [(1, 0, None)]],
    method=None,
    published=["other", "before"] * 4,
)
@example(  # a terminal pod comes: the fingerprint counting it is another one
    steps=[[(0, 0, 1)], [(1, 3, 1)]],
    method=None,
    published=["other", "all"] * 4,
)
@given(
    steps=STEPS,
    method=st.sampled_from([None, METHOD_WITH_EXCLUSIVE_RESOURCES]),
    published=st.lists(st.sampled_from(["other", "live", "all", "before"]), min_size=8, max_size=8),
)
def test_placements_from_the_ones_before_are_the_placements_from_scratch(
    steps: list[list[tuple[int, int, int | None]]], method: str | None, published: list[str]
) -> None:
    """``published``: each step's NRT fingerprint - of other pods, of the live pods, of
    all pods (terminal ones counted), of all the pods of the step before (NRT lags)."""
    on_node: dict[str, NodePod] = {}
    previous: Placements | None = None
    before: list[tuple[str, str]] = []
    for n, changes in enumerate(steps):
        for index, kind, which in changes:
            name = f"p{index}"
            if which is None:
                on_node.pop(name, None)
            else:
                on_node[name] = node_pod(name, kind, which)
        pods = tuple(on_node.values())
        every = [(p.spec.namespace, p.spec.name) for p in pods]
        names = {
            "live": [(p.spec.namespace, p.spec.name) for p in pods if not p.terminal],
            "all": every,
            "before": before,
        }.get(published[n])
        before = every
        topo = replace(BASE, fingerprint_method=method).with_available(
            {0: {"cpu": 3}}, fingerprint="other" if names is None else fingerprint(names)
        )
        fresh = placements(topo, pods, strict=False)
        kept = placements(topo, pods, strict=False, previous=previous)
        assert comparable(kept) == comparable(fresh)
        exact = reconstruct_with(topo, fresh, pods).nrt_exact
        assert reconstruct_with(topo, kept, pods).nrt_exact == exact
        previous = kept


def test_a_pod_given_twice_is_read_twice_as_from_scratch() -> None:
    """Two entries of one pod (the same value, or two values of one key) are not a change
    to update by: both are read, as from scratch."""
    topo = BASE.with_available({}, fingerprint=None)
    one = node_pod("p0", 1, 1)
    other = node_pod("p0", 1, 2)
    for before, pods in (((one,), (one, one)), ((one,), (one, other)), ((one, one), (one,))):
        previous = placements(topo, before, strict=False)
        kept = placements(topo, pods, strict=False, previous=previous)
        assert comparable(kept) == comparable(placements(topo, pods, strict=False))
