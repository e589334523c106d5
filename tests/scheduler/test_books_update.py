"""A node's books built from the books before (the whole-node requests updated by the pods
that left, came or changed; the ledger updated by their placements when every pod's part
was kept) are exactly the books built from scratch (hypothesis): the requests by resource
(every resource some pod requests, zero totals included), the pod count, the ledger with
its memory blocks in charge order and its pods at unknown zones, unplaced pods, problems
and the state key - while pods come, go and change annotations and the NRT's free amounts,
fingerprint or static part change under them."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_PLACEMENT,
)
from fakenrt.nrt.fingerprint import METHOD_WITH_EXCLUSIVE_RESOURCES, fingerprint
from fakenrt.podspec import effective_requests
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.books import NodeBooks, state_key, static_key
from fakenrt.scheduler.cluster import NodeSnapshot
from fakenrt.scheduler.reconstruction import NodePod, node_pod_from_manifest
from fakenrt.scheduler.topology import NumaTopology
from tests.scheduler.builders import GI, GPU, container, pod_manifest, topology

ZONE = {"capacity": {"cpu": 16, GPU: 4, "memory": 64 * GI}}
TOPOLOGIES = (topology([ZONE, ZONE]), topology([ZONE, ZONE], policy="single-numa-node"))
ALLOCATABLE = {
    "cpu": Decimal(32),
    "memory": Decimal(128 * GI),
    GPU: Decimal(8),
    "pods": Decimal(110),
}

GROUP = '[{"memoryNodes":["node-0","node-1"],"amount":{"memory":"' + str(40 * GI) + '"}}]'
ANNOTATIONS: list[dict[str, str]] = [
    {},
    {OBSERVED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"8","nvidia.com/gpu":"2"}}]'},
    {OBSERVED_PLACEMENT: '[{"zone":"node-1","amount":{"cpu":"4","memory":"1024"}}]'},
    {PREDICTED_PLACEMENT: '[{"zone":"node-0","amount":{"cpu":"2","memory":"2048"}}]'},
    {PREDICTED_PLACEMENT: '[{"zone":"node-1","amount":{"nvidia.com/gpu":"1"}}]'},
    {OBSERVED_PLACEMENT: "[]", OBSERVED_MEMORY_GROUPS: GROUP},
    {OBSERVED_PLACEMENT: "{"},
]
#: (limits, requests) of a pod's container: Guaranteed, Burstable with fractional CPU,
#: a resource requested at zero, BestEffort.
KINDS: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"cpu": 2, "memory": 2 * GI}, None),
    ({"cpu": 1, GPU: 1}, None),
    ({"cpu": "1500m", "memory": GI}, {"cpu": "250m", "memory": GI // 2}),
    ({"example.com/thing": 0, "cpu": "0.1"}, None),
    ({}, None),
]


def node_pod(name: str, kind: int, annotations: int, *, with_requests: bool) -> NodePod:
    limits, requests = KINDS[kind]
    pod = node_pod_from_manifest(
        pod_manifest(
            name,
            [container("main", limits)],
            annotations=ANNOTATIONS[annotations],
            node="n1",
            requests={"main": requests} if requests else None,
            phase="Running",
        )
    )
    if not with_requests:  # a scheduler leaves them out: the books compute them
        return pod
    # The simulation hands the books each pod's requests; a caller's may name a resource
    # at zero (the sums then keep it while such a pod is on the node).
    zero = {r: Decimal(0) for r, v in limits.items() if v == 0}
    return replace(pod, requests={**zero, **effective_requests(pod.spec)})


def comparable(books: NodeBooks) -> tuple[object, ...]:
    ledger = books.ledger
    assert ledger is not None
    return (
        sorted(books.requested.items()),
        books.pods,
        ledger.snapshot(),
        ledger.unaccounted,
        books.unplaced,
        books.problems,
        state_key(books, static_key(books.node.nrt)),
    )


def nrt(which: int, pods: tuple[NodePod, ...], exact: bool, method: str | None) -> NumaTopology:
    names = [(p.spec.namespace, p.spec.name) for p in pods]
    return replace(TOPOLOGIES[which], fingerprint_method=method).with_available(
        {0: {"cpu": 3 + len(pods)}}, fingerprint=fingerprint(names) if exact else "other"
    )


# A step: pod changes (pod index, kind, annotations; None annotations: remove it), then
# which topology, whether NRT is exact for the pods.
CHANGES = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.integers(0, len(KINDS) - 1),
        st.none() | st.integers(0, len(ANNOTATIONS) - 1),
    ),
    max_size=3,
)
STEPS = st.lists(
    st.tuples(CHANGES, st.sampled_from([0, 0, 0, 1]), st.booleans()), min_size=1, max_size=10
)


@settings(max_examples=300, deadline=None)
@given(
    steps=STEPS,
    method=st.sampled_from([None, METHOD_WITH_EXCLUSIVE_RESOURCES]),
    reconstruct=st.booleans(),
    with_requests=st.booleans(),
)
def test_books_from_the_ones_before_are_the_books_from_scratch(
    steps: list[tuple[list[tuple[int, int, int | None]], int, bool]],
    method: str | None,
    reconstruct: bool,
    with_requests: bool,
) -> None:
    args = PluginArgs(reconstruct_available=reconstruct)
    on_node: dict[str, NodePod] = {}
    previous: NodeBooks | None = None
    for changes, which, exact in steps:
        for index, kind, which_annotations in changes:
            name = f"p{index}"
            if which_annotations is None:
                on_node.pop(name, None)
            else:
                on_node[name] = node_pod(name, kind, which_annotations, with_requests=with_requests)
        pods = tuple(on_node.values())
        node = NodeSnapshot(name="n1", allocatable=ALLOCATABLE, nrt=nrt(which, pods, exact, method))
        fresh = NodeBooks.build(node, pods, args)
        kept = NodeBooks.build(node, pods, args, previous=previous)
        assert comparable(kept) == comparable(fresh)
        previous = kept
