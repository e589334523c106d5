"""Choosing one admission step's NUMA mask from its providers' hints, as the Topology
Manager merge does for the two policies that reject. Pure.

The merge (``policy.go``: ``mergePermutation`` / ``HintMerger``) takes one hint per
provider resource; the merged mask is their AND and is preferred iff every picked hint is
preferred and every picked mask is the same. ``restricted`` and ``single-numa-node`` admit
iff the best merged hint is preferred, and a preferred merged hint always beats a
non-preferred one, so: admit iff some mask M is a preferred hint of every resource with a
NUMA preference (single-numa-node first drops every hint wider than one node:
``filterSingleNumaHints``); the kubelet then picks the narrowest such M, lowest ids first
(``IsNarrowerThan``). A step whose providers have no preference is admitted with no mask.
"""

from __future__ import annotations

from collections.abc import Callable

from fakenrt.scheduler.alignment import Choice
from fakenrt.scheduler.hints import ResourceHints
from fakenrt.scheduler.masks import bits, narrowness
from fakenrt.scheduler.requests import AlignmentUnit


def _zones(masks: tuple[int, ...] | list[int]) -> str:
    return " ".join("{" + ",".join(str(b) for b in bits(m)) + "}" for m in masks) or "none"


def common_preferred(hints: list[ResourceHints], *, single_node: bool) -> set[int]:
    common: set[int] | None = None
    for h in hints:
        pref = {m for m in h.preferred if not single_node or m.bit_count() == 1}
        common = pref if common is None else common & pref
    return common or set()


def explain(
    policy: str, unit: AlignmentUnit, hints: list[ResourceHints], *, single_node: bool
) -> str:
    """Why no mask is preferred by every resource, in the terms of the two passes."""
    problems: list[str] = []
    for h in hints:
        if not h.any_feasible:
            problems.append(f"{h.resource}: {h.request} not available in any NUMA combination")
        elif single_node and h.min_width > 1:
            problems.append(f"{h.resource}: {h.request} needs {h.min_width} NUMA zones by capacity")
        elif not h.preferred:
            problems.append(
                f"{h.resource}: {h.request} fits {h.min_width} NUMA zone(s) by capacity but no "
                f"{h.min_width}-zone combination has it available"
            )
        elif single_node and not any(m.bit_count() == 1 for m in h.preferred):
            problems.append(f"{h.resource}: no single NUMA zone has {h.request} available")
    if not problems:
        widths = {h.min_width for h in hints}
        if len(widths) > 1:
            problems.append(
                "preferred widths differ ("
                + ", ".join(f"{h.resource} {h.min_width}" for h in hints)
                + ")"
            )
        else:
            problems.append(
                "no NUMA mask is preferred by every resource ("
                + "; ".join(f"{h.resource}: {_zones(h.preferred)}" for h in hints)
                + ")"
            )
    return f"{policy}: {unit.label}: " + "; ".join(problems)


def choose_mask(
    policy: str,
    unit: AlignmentUnit,
    hints: list[ResourceHints],
    *,
    single_node: bool,
    distance: Callable[[int], int] | None = None,
) -> Choice:
    """``distance`` (``prefer-closest-numa-nodes``): among the equally narrow preferred
    masks the one with the least total NUMA distance wins, then the lowest ids
    (``NUMAInfo.Closest`` in ``topologymanager/numa_info.go``); without it the lowest ids
    win (``Narrowest``)."""
    if not hints:
        return Choice(mask=None)
    common = common_preferred(hints, single_node=single_node)
    if not common:
        return Choice(reason=explain(policy, unit, hints, single_node=single_node))
    if distance is not None:
        return Choice(mask=min(common, key=lambda m: (m.bit_count(), distance(m), m)))
    return Choice(mask=min(common, key=narrowness))
