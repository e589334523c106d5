"""Audit: the folded merge against the kubelet's literal algorithm, with
``prefer-closest-numa-nodes`` and real distance matrices.

Mirrors ``pkg/kubelet/cm/topologymanager/policy.go`` (``HintMerger.Merge`` walks the
cross product with ``iterateAllProviderTopologyHints`` and keeps the running best with
``HintMerger.compare``) and ``numa_info.go`` (``NUMAInfo.Closest``: the float average of
all pairwise distances, then ``IsLessThan``). The existing enumeration property
(``test_merge.py``) covers the narrowest comparison only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.kubelet.merge import filter_provider_hints, max_of_min_affinity_counts
from fakenrt.kubelet.numa_info import NumaInfo
from fakenrt.kubelet.policies import PolicyError, new_policy, prefer_closest
from fakenrt.kubelet.policy_single_numa_node import filter_single_numa_hints

P = list[ProviderHints]


def _go_average(dist: Mapping[int, Mapping[int, int]], mask: BitMask) -> float:
    """``NUMADistances.CalculateAverageFor`` in float64, as Go computes it."""
    bits = mask.bits()
    total = 0.0
    count = 0.0
    for a in bits:
        for b in bits:
            total += float(dist[a][b])
            count += 1
    return total / count


def _go_merge(
    nodes: Sequence[int],
    dist: Mapping[int, Mapping[int, int]],
    lists: Sequence[Sequence[TopologyHint]],
    *,
    closest: bool,
) -> TopologyHint:
    """policy.go transcribed without any of the simulator's helpers."""
    default = BitMask.from_bits(nodes)
    best_count = max_of_min_affinity_counts(lists)

    def fitter(cur: TopologyHint, cand: TopologyHint) -> TopologyHint:
        assert cur.affinity is not None and cand.affinity is not None
        if cand.affinity == cur.affinity:
            return cur
        m1, m2 = cur.affinity, cand.affinity
        if closest and m1.count() == m2.count():
            d1, d2 = _go_average(dist, m1), _go_average(dist, m2)
            tie = m1 if m1.value < m2.value else m2
            best = tie if d1 == d2 else (m1 if d1 < d2 else m2)
        else:
            best = m1 if m1.is_narrower_than(m2) else m2
        return cur if best == cur.affinity else cand

    def compare(cur: TopologyHint | None, cand: TopologyHint) -> TopologyHint | None:
        assert cand.affinity is not None
        if cand.affinity.count() == 0:
            return cur
        if cur is None:
            return cand
        assert cur.affinity is not None
        if not cur.preferred and cand.preferred:
            return cand
        if cur.preferred and not cand.preferred:
            return cur
        if cur.preferred and cand.preferred:
            return fitter(cur, cand)
        c, k = cur.affinity.count(), cand.affinity.count()
        if c > best_count:
            return fitter(cur, cand)
        if c == best_count:
            return cur if k != best_count else fitter(cur, cand)
        if k > best_count:
            return cur
        if k == best_count:
            return cand
        if k > c:
            return cand
        if k < c:
            return cur
        return fitter(cur, cand)

    best: TopologyHint | None = None
    for perm in itertools.product(*lists):
        preferred = True
        value = default.value
        first: BitMask | None = None
        for hint in perm:
            if hint.affinity is not None:
                value &= hint.affinity.value
                if first is None:
                    first = hint.affinity
                elif hint.affinity != first:
                    preferred = False
            if not hint.preferred:
                preferred = False
        best = compare(best, TopologyHint(BitMask(value), preferred))
    return best if best is not None else TopologyHint(default, False)


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[tuple[int, ...], dict[int, dict[int, int]], P]:
    nodes = tuple(range(draw(st.integers(2, 4))))
    dist: dict[int, dict[int, int]] = {a: {a: 10} for a in nodes}
    for a, b in itertools.combinations(nodes, 2):
        d = draw(st.sampled_from([11, 12, 20, 21, 30, 32]))
        dist[a][b] = dist[b][a] = d
    mask = st.sets(st.sampled_from(list(nodes)), min_size=1).map(lambda s: BitMask.of(*s))
    hint = st.one_of(
        st.builds(TopologyHint, mask, st.booleans()),
        st.builds(TopologyHint, st.none(), st.booleans()),
    )
    resource = st.one_of(st.none(), st.lists(hint, max_size=4).map(tuple))
    provider = st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["a", "b", "c"]), resource, max_size=2)
    )
    return nodes, dist, draw(st.lists(provider, max_size=3))


@settings(max_examples=400, deadline=None)
@given(_inputs(), st.sampled_from(["best-effort", "restricted", "single-numa-node"]))
def test_prefer_closest_merge_equals_the_kubelets_enumeration(
    inp: tuple[tuple[int, ...], dict[int, dict[int, int]], P], policy_name: str
) -> None:
    """policy_test.go TestPolicyMerge with PreferClosestNUMA (policy_options.go): the
    simulator's folded merge picks the hint the kubelet's in-order walk picks, for any
    distance matrix, both with and without the option."""
    nodes, dist, providers = inp
    info = NumaInfo.build(nodes, dist)
    for closest in (False, True):
        policy = new_policy(policy_name, info, prefer_closest_numa_nodes=closest)
        best, admit = policy.merge(providers)
        lists = filter_provider_hints(providers)
        if policy_name == "single-numa-node":
            lists = list(filter_single_numa_hints(lists))
        expected = _go_merge(
            nodes, dist, lists, closest=closest and policy_name != "single-numa-node"
        )
        if policy_name == "single-numa-node" and expected.affinity == BitMask.from_bits(nodes):
            expected = TopologyHint(None, expected.preferred)
        assert best == expected
        assert admit == (expected.preferred if policy_name != "best-effort" else True)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        pytest.param("9", True, id="plain"),
        pytest.param("+9", True, id="atoi-accepts-a-plus-sign"),
        pytest.param(" 9", False, id="atoi-rejects-spaces"),
        pytest.param("1_0", False, id="atoi-rejects-underscores"),
        pytest.param("\uff19", False, id="atoi-rejects-non-ascii-digits"),
    ],
)
def test_max_allowable_numa_nodes_is_parsed_like_strconv_atoi(text: str, ok: bool) -> None:
    """policy_options.go NewPolicyOptions parses max-allowable-numa-nodes with
    ``strconv.Atoi``, stricter than Python's ``int()``."""
    options = {"max-allowable-numa-nodes": text}
    if ok:
        assert prefer_closest(options) is False
    else:
        with pytest.raises(PolicyError, match="not an integer"):
            prefer_closest(options)
