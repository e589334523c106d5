"""The Topology Manager's hint merge. Pure.

Mirrors ``pkg/kubelet/cm/topologymanager/policy.go``:

* ``filter_provider_hints``: one list of hints per (provider, resource), with the nil /
  empty conventions of :mod:`fakenrt.kubelet.hints`;
* every permutation of the cross product (one hint per list) merges into one hint: the
  bitwise AND of the masks (nil masks skipped, starting from all NUMA nodes), preferred
  only if every hint is preferred *and* every non-nil mask is the same mask;
* the best merged hint wins by ``HintMerger.compare``: a mask of zero bits never wins, a
  preferred hint beats a non-preferred one, two preferred hints compare by narrowness (or
  by distance with ``prefer-closest-numa-nodes``), and two non-preferred hints are ranked
  against ``bestNonPreferredAffinityCount`` (see :meth:`HintMerger.compare`).

The cross product is not enumerated. ``compare`` is a total order on distinct hints
(checked case by case below), so the kubelet's best over its sequence of merged hints is
the best of the *set* of merged hints, and that set is cheap to describe: a preferred
merged hint is a mask every list offers as a preferred hint (a preferred "any NUMA node"
hint matches every mask); the non-preferred ones are the reachable ANDs. Preferred always
beats non-preferred, so the ANDs are only computed when no preferred hint exists.
``tests/kubelet/test_merge.py`` checks the result against a literal enumeration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.hints import ProviderHints, TopologyHint, normalized
from fakenrt.kubelet.numa_info import NumaInfo

POLICY_SINGLE_NUMA_NODE = "single-numa-node"


def filter_provider_hints(providers: Iterable[ProviderHints]) -> list[tuple[TopologyHint, ...]]:
    """One hint list per provider resource (``filterProvidersHints``). Resources keep the
    provider's order (the kubelet iterates a Go map, i.e. in random order; the merge
    result does not depend on it)."""
    out: list[tuple[TopologyHint, ...]] = []
    for hints in providers:
        if not hints:
            out.append(normalized(None))
            continue
        for resource_hints in hints.values():
            out.append(normalized(resource_hints))
    return out


def merge_permutation(default: BitMask, permutation: Sequence[TopologyHint]) -> TopologyHint:
    """Merge one hint per list into one (``mergePermutation``)."""
    preferred = True
    first: BitMask | None = None
    value = default.value
    for hint in permutation:
        if hint.affinity is not None:
            value &= hint.affinity.value
            if first is None:
                first = hint.affinity
            elif hint.affinity != first:
                preferred = False
        if not hint.preferred:
            preferred = False
    return TopologyHint(BitMask(value), preferred)


def merged_candidates(
    default: BitMask, lists: Sequence[Sequence[TopologyHint]]
) -> set[TopologyHint]:
    """The set of distinct hints ``merge_permutation`` yields over the cross product."""
    # State: (AND so far, first non-nil mask value or -1, preferred so far). Once not
    # preferred the first mask no longer matters and is dropped to keep the set small.
    states: set[tuple[int, int, bool]] = {(default.value, -1, True)}
    for hints in lists:
        if not hints:
            return set()
        nxt: set[tuple[int, int, bool]] = set()
        for value, first, ok in states:
            for hint in hints:
                if hint.affinity is None:
                    keep = ok and hint.preferred
                    nxt.add((value, first if keep else -1, keep))
                    continue
                mask = hint.affinity.value
                if ok and hint.preferred and first in (-1, mask):
                    nxt.add((value & mask, mask, True))
                else:
                    nxt.add((value & mask, -1, False))
        states = nxt
    return {TopologyHint(BitMask(value), ok) for value, _, ok in states}


def narrowest_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    """The narrowest hint with a mask, or None (``narrowestHint``)."""
    best: TopologyHint | None = None
    for hint in hints:
        if hint.affinity is None:
            continue
        if best is None or (
            best.affinity is not None and hint.affinity.is_narrower_than(best.affinity)
        ):
            best = hint
    return best


def max_of_min_affinity_counts(lists: Sequence[Sequence[TopologyHint]]) -> int:
    """``bestNonPreferredAffinityCount``: the widest of the per-list narrowest masks - the
    number of NUMA nodes the most demanding resource needs at least."""
    result = 0
    for hints in lists:
        narrow = narrowest_hint(hints)
        if narrow is not None and narrow.affinity is not None:
            result = max(result, narrow.affinity.count())
    return result


@dataclass(frozen=True)
class HintMerger:
    """Picks the best merged hint (``HintMerger`` in policy.go)."""

    numa: NumaInfo
    lists: tuple[tuple[TopologyHint, ...], ...]
    policy_name: str
    prefer_closest: bool = False

    @property
    def best_non_preferred_affinity_count(self) -> int:
        return max_of_min_affinity_counts(self.lists)

    def _fitter(self, current: TopologyHint, candidate: TopologyHint) -> TopologyHint:
        """``CompareNUMAAffinityMasks``: equal masks keep the current hint; otherwise the
        narrowest, or with prefer-closest-numa-nodes (never for single-numa-node) the
        closest, mask wins."""
        assert current.affinity is not None and candidate.affinity is not None
        if candidate.affinity == current.affinity:
            return current
        if self.policy_name != POLICY_SINGLE_NUMA_NODE and self.prefer_closest:
            best = self.numa.closest(current.affinity, candidate.affinity)
        else:
            best = self.numa.narrowest(current.affinity, candidate.affinity)
        return current if best == current.affinity else candidate

    def compare(
        self, current: TopologyHint | None, candidate: TopologyHint, best_count: int
    ) -> TopologyHint | None:
        """One step of ``HintMerger.compare``; ``best_count`` is
        :attr:`best_non_preferred_affinity_count`."""
        assert candidate.affinity is not None
        if candidate.affinity.count() == 0:
            return current
        if current is None:
            return candidate
        assert current.affinity is not None
        if candidate.preferred != current.preferred:
            return candidate if candidate.preferred else current
        if current.preferred:
            return self._fitter(current, candidate)
        # Both non-preferred: get as close as possible to best_count without exceeding it.
        # Ranked best to worst: width == best_count (fitter first), width < best_count
        # (wider first, then fitter), width > best_count (fitter first). Every branch below
        # agrees with that ranking, so the order of candidates does not matter.
        cur, cand = current.affinity.count(), candidate.affinity.count()
        if cur > best_count:  # case 1
            return self._fitter(current, candidate)
        if cur == best_count:  # case 2
            return current if cand != best_count else self._fitter(current, candidate)
        if cand > best_count:  # case 3a
            return current
        if cand == best_count:  # case 3b
            return candidate
        if cand != cur:  # cases 3ca / 3cb
            return candidate if cand > cur else current
        return self._fitter(current, candidate)  # case 3cc

    def merge(self) -> TopologyHint:
        """The best merged hint; ``{all NUMA nodes, not preferred}`` when none has a
        non-empty mask."""
        default = self.numa.default_affinity()
        best_count = self.best_non_preferred_affinity_count
        best: TopologyHint | None = None
        candidates = preferred_candidates(default, self.lists)
        if not candidates:
            candidates = and_candidates(default, self.lists)
        for candidate in sorted(candidates, key=_sort_key):
            best = self.compare(best, candidate, best_count)
        return best if best is not None else TopologyHint(default, False)


def preferred_candidates(
    default: BitMask, lists: Sequence[Sequence[TopologyHint]]
) -> set[TopologyHint]:
    """The preferred hints among the merged hints of the cross product."""
    if not lists:
        return {TopologyHint(default, True)}
    if any(not hints for hints in lists):
        return set()
    wild: list[bool] = []
    offered: list[set[int]] = []
    for hints in lists:
        wild.append(any(h.affinity is None and h.preferred for h in hints))
        offered.append({h.affinity.value for h in hints if h.affinity is not None and h.preferred})
    out: set[TopologyHint] = set()
    for mask in set().union(*offered):
        if all(w or mask in o for w, o in zip(wild, offered, strict=True)):
            out.add(TopologyHint(BitMask(mask & default.value), True))
    if all(wild):
        out.add(TopologyHint(default, True))
    return out


def and_candidates(default: BitMask, lists: Sequence[Sequence[TopologyHint]]) -> set[TopologyHint]:
    """Every mask the cross product's ANDs reach, as non-preferred hints."""
    full = default.value
    reached = {full}
    for hints in lists:
        if not hints:
            return set()
        values = {full if h.affinity is None else h.affinity.value & full for h in hints}
        reached = {r & v for r in reached for v in values}
    return {TopologyHint(BitMask(v), False) for v in reached}


def _sort_key(hint: TopologyHint) -> tuple[int, bool]:
    assert hint.affinity is not None
    return (hint.affinity.value, hint.preferred)
