"""The Topology Manager merge and policies.

Tables transcribed from ``pkg/kubelet/cm/topologymanager/policy_test.go``
(``commonPolicyMergeTestCases``, ``bestEffortPolicy.mergeTestCases``,
``singleNumaNodePolicy.mergeTestCases``, ``TestMaxOfMinAffinityCounts``) and
``bitmask/bitmask_test.go``; plus properties that check the folded merge against a
literal enumeration of the cross product.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.merge import (
    HintMerger,
    filter_provider_hints,
    max_of_min_affinity_counts,
    merge_permutation,
)
from fakenrt.kubelet.numa_info import NumaInfo
from fakenrt.kubelet.policies import PolicyError, new_policy, prefer_closest
from fakenrt.kubelet.policy_single_numa_node import filter_single_numa_hints

NODES4 = (0, 1, 2, 3)


def h(*bits: int, preferred: bool = True) -> TopologyHint:
    return TopologyHint(BitMask.of(*bits), preferred)


def n(*bits: int) -> TopologyHint:
    """A non-preferred hint."""
    return h(*bits, preferred=False)


def numa(
    nodes: Sequence[int] = NODES4, distances: dict[int, dict[int, int]] | None = None
) -> NumaInfo:
    dist = distances or {a: {b: 10 if a == b else 20 for b in nodes} for a in nodes}
    return NumaInfo.build(nodes, dist)


# --- bitmask ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "narrower"),
    [
        pytest.param((0,), (1,), True, id="TestIsNarrowerThan-equal-bits-lower-first"),
        pytest.param((1,), (0,), False, id="TestIsNarrowerThan-equal-bits-higher-first"),
        pytest.param((0,), (0, 1), True, id="TestIsNarrowerThan-fewer-bits"),
        pytest.param((0, 1), (0,), False, id="TestIsNarrowerThan-more-bits"),
        pytest.param((0, 3), (1, 2), False, id="TestIsNarrowerThan-equal-bits-value-decides"),
        pytest.param((1, 2), (0, 3), True, id="TestIsNarrowerThan-equal-bits-value-decides-2"),
    ],
)
def test_is_narrower_than(a: tuple[int, ...], b: tuple[int, ...], narrower: bool) -> None:
    assert BitMask.of(*a).is_narrower_than(BitMask.of(*b)) is narrower


@pytest.mark.parametrize("count", range(1, 9))
def test_iterate_masks_visits_two_to_the_n_minus_one_masks(count: int) -> None:
    """TestIterateBitMasks: the number of masks over n bits is 2^n - 1."""
    masks = list(iterate_masks(range(count)))
    assert len(masks) == 2**count - 1
    assert len(set(masks)) == len(masks)
    assert [m.count() for m in masks] == sorted(m.count() for m in masks)


# --- policy merge tables ------------------------------------------------------------

P = list[ProviderHints]

COMMON: list[tuple[str, P, TopologyHint]] = [
    (
        "Two providers, 1 hint each, same mask, both preferred 1/2",
        [{"r1": (h(0),)}, {"r2": (h(0),)}],
        h(0),
    ),
    (
        "Two providers, 1 hint each, same mask, both preferred 2/2",
        [{"r1": (h(1),)}, {"r2": (h(1),)}],
        h(1),
    ),
    ("Two providers, 1 no hints, 1 single hint preferred 1/2", [None, {"r": (h(0),)}], h(0)),
    ("Two providers, 1 no hints, 1 single hint preferred 2/2", [None, {"r": (h(1),)}], h(1)),
    (
        "Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
        [{"r1": (h(0), h(1))}, {"r2": (h(0),)}],
        h(0),
    ),
    (
        "Two providers, 1 with 2 hints, 1 with single hint matching 2/2",
        [{"r1": (h(0), h(1))}, {"r2": (h(1),)}],
        h(1),
    ),
    (
        "Two providers, both with 2 hints, matching narrower preferred hint from both",
        [{"r1": (h(0), h(1))}, {"r2": (h(0), n(0, 1))}],
        h(0),
    ),
    (
        "Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
        [{"r1": (h(1), n(0, 1))}, {"r2": (h(0), h(1), n(0, 1))}],
        h(1),
    ),
    (
        "Multiple resources, same provider",
        [{"r1": (h(1), n(0, 1)), "r2": (h(0), h(1), n(0, 1))}],
        h(1),
    ),
]

BEST_EFFORT: list[tuple[str, P, TopologyHint]] = [
    (
        "Two providers, 2 hints each, same mask (some with different bits), same preferred",
        [{"r1": (h(0, 1), h(0, 2))}, {"r2": (h(0, 1), h(0, 2))}],
        h(0, 1),
    ),
    ("TopologyHint not set", [], h(*NODES4)),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], h(*NODES4)),
    (
        "HintProvider returns -nil map[string][]TopologyHint from provider",
        [{"r": None}],
        h(*NODES4),
    ),
    (
        "HintProvider returns empty non-nil map[string][]TopologyHint from provider",
        [{"r": ()}],
        n(*NODES4),
    ),
    (
        "Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
        [{"r": (TopologyHint(None, True),)}],
        h(*NODES4),
    ),
    (
        "Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
        [{"r": (TopologyHint(None, False),)}],
        n(*NODES4),
    ),
    ("Two providers, 1 hint each, no common mask", [{"r1": (h(0),)}, {"r2": (h(1),)}], n(*NODES4)),
    (
        "Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
        [{"r1": (h(0),)}, {"r2": (n(0),)}],
        n(0),
    ),
    (
        "Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
        [{"r1": (h(1),)}, {"r2": (n(1),)}],
        n(1),
    ),
    (
        "Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
        [{"r1": (h(0),)}, {"r2": (h(0, 1),)}],
        n(0),
    ),
    (
        "Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
        [{"r1": (h(0), h(1))}, {"r2": (n(0, 1),)}],
        n(0),
    ),
    (
        "Two providers, 1 hint each, 1 wider mask, both preferred 2/2",
        [{"r1": (h(1),)}, {"r2": (h(0, 1),)}],
        n(1),
    ),
    (
        "bestNonPreferredAffinityCount (1)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(0, 1),)}],
        n(0, 1),
    ),
    (
        "bestNonPreferredAffinityCount (2)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(0, 3),)}],
        n(0, 3),
    ),
    (
        "bestNonPreferredAffinityCount (3)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(1, 2),)}],
        n(1, 2),
    ),
    (
        "bestNonPreferredAffinityCount (4)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(2, 3),)}],
        n(2, 3),
    ),
    (
        "bestNonPreferredAffinityCount (5)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(1, 2), n(2, 3))}],
        n(1, 2),
    ),
    (
        "bestNonPreferredAffinityCount (6)",
        [{"r1": (n(0, 1, 2, 3), n(0, 1))}, {"r2": (n(1, 2, 3), n(1, 2), n(1, 3), n(2, 3))}],
        n(1, 2),
    ),
]

NIL_T, NIL_F = TopologyHint(None, True), TopologyHint(None, False)
SINGLE_NUMA: list[tuple[str, P, TopologyHint]] = [
    ("TopologyHint not set", [], NIL_T),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], NIL_T),
    ("HintProvider returns -nil map[string][]TopologyHint from provider", [{"r": None}], NIL_T),
    (
        "HintProvider returns empty non-nil map[string][]TopologyHint from provider",
        [{"r": ()}],
        NIL_F,
    ),
    (
        "Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
        [{"r": (NIL_T,)}],
        NIL_T,
    ),
    (
        "Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
        [{"r": (NIL_F,)}],
        NIL_F,
    ),
    ("Two providers, 1 hint each, no common mask", [{"r1": (h(0),)}, {"r2": (h(1),)}], NIL_F),
    (
        "Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
        [{"r1": (h(0),)}, {"r2": (n(0),)}],
        NIL_F,
    ),
    (
        "Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
        [{"r1": (h(1),)}, {"r2": (n(1),)}],
        NIL_F,
    ),
    (
        "Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
        [{"r1": (h(0), h(1))}, {"r2": (n(0, 1),)}],
        NIL_F,
    ),
    ("Single NUMA hint generation", [{"r1": (h(0, 1),), "r2": (h(0), h(1), n(0, 1))}], NIL_F),
    ("One no-preference provider", [{"r1": (h(0), h(1), n(0, 1))}, None], h(0)),
]


def _cases(table: list[tuple[str, P, TopologyHint]]) -> list[object]:
    return [pytest.param(p, e, id=name) for name, p, e in table]


@pytest.mark.parametrize(("providers", "expected"), _cases(COMMON + BEST_EFFORT))
@pytest.mark.parametrize("policy_name", ["best-effort", "restricted"])
def test_best_effort_and_restricted_merge(
    policy_name: str, providers: P, expected: TopologyHint
) -> None:
    """TestPolicyBestEffortMerge / TestPolicyRestrictedMerge (4 NUMA nodes)."""
    best, admit = new_policy(policy_name, numa()).merge(providers)
    assert best == expected
    assert admit is (True if policy_name == "best-effort" else expected.preferred)


@pytest.mark.parametrize(("providers", "expected"), _cases(COMMON + SINGLE_NUMA))
def test_single_numa_node_merge(providers: P, expected: TopologyHint) -> None:
    """TestPolicySingleNumaNodeMerge (2 NUMA nodes)."""
    best, admit = new_policy("single-numa-node", numa((0, 1))).merge(providers)
    assert best == expected
    assert admit is expected.preferred


def test_none_policy_admits_everything_without_affinity() -> None:
    """TestPolicyNoneMerge: {nil, preferred}, admitted."""
    best, admit = new_policy("none", numa()).merge([{"r": ()}])
    assert best == NIL_T and admit


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        pytest.param([], 0, id="empty"),
        pytest.param([[TopologyHint(BitMask(), True)]], 0, id="empty-mask"),
        pytest.param([[h(0)]], 1, id="one"),
        pytest.param([[h(0, 1)]], 2, id="two"),
        pytest.param([[h(0, 1), h(0, 1, 2)]], 2, id="narrowest-of-list"),
        pytest.param([[h(0, 1), h(0, 1, 2)], [h(0, 1, 2)]], 3, id="max-over-lists"),
        pytest.param([[h(0, 1), h(0, 1, 2)], [h(0), h(0, 1, 2)]], 2, id="max-of-mins"),
    ],
)
def test_max_of_min_affinity_counts(lists: list[list[TopologyHint]], expected: int) -> None:
    """TestMaxOfMinAffinityCounts."""
    assert max_of_min_affinity_counts(lists) == expected


# --- prefer-closest-numa-nodes, options, factory ------------------------------------

# Two sockets: 0,1 close (11), 2,3 close (11), across sockets 21.
DIST = {
    0: {0: 10, 1: 11, 2: 21, 3: 21},
    1: {0: 11, 1: 10, 2: 21, 3: 21},
    2: {0: 21, 1: 21, 2: 10, 3: 11},
    3: {0: 21, 1: 21, 2: 11, 3: 10},
}


@pytest.mark.parametrize(
    ("prefer", "expected"),
    [
        pytest.param(False, h(0, 2), id="narrowest-picks-lowest-bits"),
        pytest.param(True, h(2, 3), id="closest-picks-smallest-distance"),
    ],
)
def test_prefer_closest_numa_nodes(prefer: bool, expected: TopologyHint) -> None:
    """numa_info.go Closest: same width, smaller average distance wins."""
    policy = new_policy("restricted", numa(NODES4, DIST), prefer_closest_numa_nodes=prefer)
    best, admit = policy.merge([{"gpu": (h(0, 2), h(2, 3))}])
    assert best == expected and admit


def test_prefer_closest_is_ignored_by_single_numa_node() -> None:
    policy = new_policy("single-numa-node", numa(NODES4, DIST), prefer_closest_numa_nodes=True)
    assert policy.merge([{"gpu": (h(3), h(1))}])[0] == h(1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"prefer-closest-numa-nodes": "maybe"}, "not a boolean", id="bad-bool"),
        pytest.param({"max-allowable-numa-nodes": "4"}, "less than 8", id="below-8"),
        pytest.param({"max-allowable-numa-nodes": "x"}, "not an integer", id="not-int"),
        pytest.param({"fancy-option": "1"}, "unknown", id="unknown-option"),
    ],
)
def test_policy_options_fail_loudly(options: dict[str, str], message: str) -> None:
    """TestNewPolicyOptions error cases."""
    with pytest.raises(PolicyError, match=message):
        prefer_closest(options)


def test_factory_rejects_unknown_policy_and_too_many_numa_nodes() -> None:
    with pytest.raises(PolicyError, match="unknown policy"):
        new_policy("strict", numa())
    with pytest.raises(PolicyError, match="more than 8 NUMA Nodes"):
        new_policy("restricted", numa(tuple(range(9))))
    assert new_policy("restricted", numa(tuple(range(9))), max_numa_nodes=16).name == "restricted"
    assert new_policy("none", numa(tuple(range(9)))).name == "none"


# --- properties ---------------------------------------------------------------------


def naive_best(
    nodes: Sequence[int], providers: P, policy_name: str, prefer: bool = False
) -> TopologyHint:
    """The kubelet's algorithm literally: enumerate the cross product, compare in order."""
    info = numa(nodes)
    lists = filter_provider_hints(providers)
    if policy_name == "single-numa-node":
        lists = list(filter_single_numa_hints(lists))
    merger = HintMerger(info, tuple(lists), policy_name, prefer)
    best: TopologyHint | None = None
    count = merger.best_non_preferred_affinity_count
    for perm in itertools.product(*lists):
        best = merger.compare(best, merge_permutation(info.default_affinity(), perm), count)
    return best if best is not None else TopologyHint(info.default_affinity(), False)


def hint_strategy(nodes: Sequence[int]) -> st.SearchStrategy[TopologyHint]:
    mask = st.sets(st.sampled_from(list(nodes)), min_size=1).map(lambda s: BitMask.of(*s))
    return st.one_of(
        st.builds(TopologyHint, mask, st.booleans()),
        st.builds(TopologyHint, st.none(), st.booleans()),
    )


@st.composite
def merge_inputs(draw: st.DrawFn) -> tuple[tuple[int, ...], P]:
    nodes = tuple(range(draw(st.integers(1, 4))))
    resource_hints = st.one_of(st.none(), st.lists(hint_strategy(nodes), max_size=4).map(tuple))
    provider = st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["a", "b", "c"]), resource_hints, max_size=2)
    )
    return nodes, draw(st.lists(provider, max_size=3))


@settings(max_examples=300, deadline=None)
@given(merge_inputs(), st.sampled_from(["best-effort", "restricted", "single-numa-node"]))
def test_folded_merge_equals_enumeration(inp: tuple[tuple[int, ...], P], policy_name: str) -> None:
    nodes, providers = inp
    best, _ = new_policy(policy_name, numa(nodes)).merge(providers)
    expected = naive_best(nodes, providers, policy_name)
    if policy_name == "single-numa-node" and expected.affinity == BitMask.of(*nodes):
        expected = TopologyHint(None, expected.preferred)
    assert best == expected


@settings(max_examples=300, deadline=None)
@given(merge_inputs(), st.sampled_from(["best-effort", "restricted", "single-numa-node"]))
def test_merged_hint_is_a_subset_of_the_nodes(
    inp: tuple[tuple[int, ...], P], policy_name: str
) -> None:
    nodes, providers = inp
    best, admit = new_policy(policy_name, numa(nodes)).merge(providers)
    if best.affinity is not None:
        assert best.affinity.is_subset_of(BitMask.of(*nodes))
        assert not best.affinity.is_empty()
    if policy_name == "single-numa-node" and admit:
        assert best.preferred
        assert best.affinity is None or best.affinity.count() == 1
