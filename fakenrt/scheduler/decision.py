"""A scheduling decision, and how one pod shape is evaluated on one node's books. Pure;
shared by the cold cycle (:mod:`fakenrt.scheduler.cycle`) and the books kept between
cycles (:mod:`fakenrt.scheduler.clusterbooks`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from fakenrt.podspec import PodSpec
from fakenrt.scheduler.books import Misfit, NodeBooks
from fakenrt.scheduler.cluster import NodeSnapshot
from fakenrt.scheduler.placement import EMPTY_PLACEMENT, Placement
from fakenrt.scheduler.plugin import FilterResult, NumaPlugin, Scores
from fakenrt.scheduler.scoring import LEAST_NUMA_NODES, MAX_SCORE, MIN_SCORE
from fakenrt.scheduler.scoring.least_numa_nodes import best_score


@dataclass(frozen=True)
class Decision:
    """Where a pod goes (``node`` None: nowhere) and why not elsewhere."""

    pod_key: str
    node: str | None
    placement: Placement = EMPTY_PLACEMENT
    scores: Scores = field(default_factory=Scores)
    #: node name -> why the node was filtered out: every node when the pod fits nowhere;
    #: for a placed pod, the nodes examined and refused before the choice (a cycle over
    #: kept books ranks states, not nodes, and names none)
    rejections: Mapping[str, str] = field(default_factory=dict)
    #: reason category per rejected node (the metric's label): ``resources`` / ``node``
    #: for whole-node rejections, else the NUMA reason's prefix (the policy name or
    #: ``memory manager``)
    categories: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, Decimal] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """kube-scheduler style: ``0/3 nodes are available: 2 <reason>, 1 <reason>.``"""
        total = len(self.rejections)
        counts = Counter(self.rejections.values())
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        return f"0/{total} nodes are available: {parts}." if parts else "no nodes available."


def barred(
    pod_key: str,
    node: str,
    placement: Placement,
    zones_barred: Mapping[str, str] | None,
    *,
    rejections: Mapping[str, str] | None = None,
    categories: Mapping[str, str] | None = None,
) -> Decision | None:
    """The pod waits rather than take a worse node (:mod:`~fakenrt.scheduler.admission_order`)
    when ``node``, its best, is in ``zones_barred`` and ``placement`` holds zones there; else
    None. The wait names ``node`` with the bar's reason beside the nodes refused before it."""
    if not zones_barred or node not in zones_barred or placement.empty:
        return None
    reason = zones_barred[node]
    return Decision(
        pod_key=pod_key,
        node=None,
        rejections={**(rejections or {}), node: reason},
        categories={**(categories or {}), node: _category_of(reason)},
    )


@dataclass(frozen=True)
class Evaluation:
    """A pod shape on a node in one state: why it cannot take the pod as a whole
    (``misfit``), else the plugin's filter result and the ranking score."""

    misfit: Misfit | None
    result: FilterResult | None = None
    score: int = MIN_SCORE
    scores: Scores = field(default_factory=Scores)

    @cached_property
    def fit(self) -> bool:
        # Read for every state class at every decision: computed once.
        return self.misfit is None and self.result is not None and self.result.fit

    def reason(self) -> tuple[str, str]:
        """Why the node was filtered out, and the category."""
        if self.misfit is not None:
            return self.misfit
        assert self.result is not None
        reason = self.result.reason or "NUMA alignment"
        return reason, _category_of(self.result.reason or "numa")


def _category_of(reason: str) -> str:
    return reason.split(":", 1)[0] if ":" in reason else reason


def evaluate(
    plugin: NumaPlugin, books: NodeBooks, pod: PodSpec, requests: Sequence[tuple[str, Decimal]]
) -> Evaluation:
    """``pod`` (effective ``requests`` sorted by name) on the node of ``books``."""
    misfit = books.misfit(requests)
    if misfit is not None:
        return Evaluation(misfit)
    topology, ledger = books.node.nrt, books.ledger
    result = plugin.filter(pod, topology, ledger)
    if not result.fit:
        return Evaluation(None, result)
    strategy = plugin.args.scoring_strategy
    scores = plugin.score(pod, topology, ledger, result, strategies=(strategy,))
    return Evaluation(None, result, scores[strategy], scores)


def score_bound(plugin: NumaPlugin, node: NodeSnapshot, pod: PodSpec) -> int:
    """The highest score the configured strategy can give ``pod`` on ``node`` in any
    state: 0 without NRT (such nodes score 0); for LeastNUMANodes the score of one zone,
    the closest, when the pod aligns anything there (:func:`best_score`); else 100."""
    if node.nrt is None:
        return MIN_SCORE
    if plugin.args.scoring_strategy == LEAST_NUMA_NODES:
        units = plugin.units(pod, node.nrt)
        return MAX_SCORE if all(u.empty for u in units) else best_score()
    return MAX_SCORE
