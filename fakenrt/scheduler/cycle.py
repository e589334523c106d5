"""One scheduling cycle over a cluster snapshot: filter every node, score, pick, reserve.
Pure - no API calls, no clock: the loop (:mod:`fakenrt.scheduler.loop`) feeds it a
snapshot and performs the binds; a simulation can drive it in simulated time.

Filter order per node: readiness, then whole-node resources (node allocatable minus the
requests of the non-terminal pods bound to it, and the pod count - the kubelet's own
fit check), then the NUMA plugin on the node's NRT. The best-scoring node under the
configured strategy wins (ties: node name). Assuming a pod charges its whole-node
requests and its NUMA placement to the cycle's books, so the next pod of the same cycle
sees them; :meth:`SchedulingCycle.forget` credits both back exactly (a failed bind).
With ``reserve=False`` only the whole-node requests are charged: every pod of the cycle
sees the zones as the snapshot had them (a scheduler without the in-cycle reservation,
compared against in ``fakenrt simulate``).

Speed without changing a single decision (a property test compares with and without):

* a node failing the whole-node check is never evaluated by the plugin;
* the plugin's filter and scores depend only on the pod's shape (its containers, not its
  name or annotations), the node's NRT and its ledger, so a node's evaluation of one shape
  is reused for later pods of the same shape until the node's ledger changes;
* a shape that fitted nowhere fits nowhere again until some node's books change;
* a :class:`CycleMemo` handed from cycle to cycle keeps each node's books (and their
  evaluations) while the node, its NRT object and the pods on it are unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import EMPTY_PLACEMENT, Placement
from fakenrt.scheduler.plugin import FilterResult, NumaPlugin, Scores
from fakenrt.scheduler.reconstruction import NodePod, reconstruct


@dataclass(frozen=True)
class Decision:
    """Where a pod goes (``node`` None: nowhere) and why not elsewhere."""

    pod_key: str
    node: str | None
    placement: Placement = EMPTY_PLACEMENT
    scores: Scores = field(default_factory=Scores)
    #: node name -> why the node was filtered out
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


Evaluation = tuple[FilterResult, Scores]


@dataclass
class _NodeBooks:
    node: NodeSnapshot
    requested: dict[str, Decimal]
    pods: int
    ledger: ZoneLedger | None
    unplaced: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    #: pod shape -> the plugin's filter result and scores on this ledger as it is now.
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    #: pod shape -> why the node cannot take it as a whole and the reason's category
    #: (None: it can), valid until the books change.
    fits: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    #: These books are this cycle's own (False: the memo's, replaced by a private copy
    #: before the first charge).
    owned: bool = True


@dataclass
class _Pristine:
    """A node's books as built from the snapshot (never charged), and what built them."""

    node: NodeSnapshot
    pods: tuple[NodePod, ...]
    books: _NodeBooks


class CycleMemo:
    """Books of unchanged nodes, carried from one cycle to the next by the caller. A node
    is unchanged when its snapshot is equal, its NRT is the very same object and the
    pods on it are equal; its evaluations of pod shapes are then reused too."""

    def __init__(self) -> None:
        self.args: object = None
        self.nodes: dict[str, _Pristine] = {}
        #: The last snapshot's node tuple and its nodes sorted by name.
        self.order: tuple[tuple[NodeSnapshot, ...], list[NodeSnapshot]] | None = None


def pod_shape(pod: PodSpec) -> str:
    """What the plugin's verdict and scores depend on: everything but the pod's identity,
    annotations and node."""
    return repr(replace(pod, namespace="", name="", uid="", annotations={}, node_name=""))


def _same(kept: _Pristine, node: NodeSnapshot, pods: tuple[NodePod, ...]) -> bool:
    return (
        kept.node.nrt is node.nrt
        and (kept.node is node or kept.node == node)
        and (kept.pods is pods or kept.pods == pods)
    )


def _category_of(reason: str) -> str:
    return reason.split(":", 1)[0] if ":" in reason else reason


class SchedulingCycle:
    """The books of one cycle, built from a snapshot."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        plugin: NumaPlugin,
        *,
        reserve: bool = True,
        memo: CycleMemo | None = None,
        reuse: bool = True,
        node_pods: Mapping[str, tuple[NodePod, ...]] | None = None,
    ) -> None:
        self.plugin = plugin
        self.reserve = reserve
        #: Reuse evaluations and "fits nowhere" verdicts of earlier pods of the same shape
        #: (False: evaluate every pod on every node, the reference the tests compare with).
        self.reuse = reuse
        self.books: dict[str, _NodeBooks] = {}
        by_node: Mapping[str, Sequence[NodePod]]
        if node_pods is not None:
            # The caller keeps the non-terminal pods of each node itself (a simulation);
            # an unchanged node's tuple is then the very same object, compared at once.
            by_node = node_pods
        else:
            grouped: dict[str, list[NodePod]] = {}
            for pod in snapshot.pods:
                if pod.spec.node_name and not pod.terminal:
                    grouped.setdefault(pod.spec.node_name, []).append(
                        NodePod(spec=pod.spec, phase=pod.phase)
                    )
            by_node = grouped
        if memo is not None and memo.args != (plugin.args, reserve):
            memo.args, memo.nodes = (plugin.args, reserve), {}
        if memo is None:
            for node in sorted(snapshot.nodes, key=lambda n: n.name):
                self.books[node.name] = self._build(node, tuple(by_node.get(node.name, ())))
        else:
            if memo.order is None or memo.order[0] is not snapshot.nodes:
                memo.order = (snapshot.nodes, sorted(snapshot.nodes, key=lambda n: n.name))
            for node in memo.order[1]:
                pods = tuple(by_node.get(node.name, ()))
                kept = memo.nodes.get(node.name)
                if kept is None or not _same(kept, node, pods):
                    books = self._build(node, pods)
                    books.owned = False
                    kept = memo.nodes[node.name] = _Pristine(node=node, pods=pods, books=books)
                # Shared with the memo (its evaluations stay valid while the books are
                # unchanged); _apply swaps in a private copy before the first charge.
                self.books[node.name] = kept.books
        if memo is not None:
            for gone in set(memo.nodes) - set(self.books):
                del memo.nodes[gone]
        self._version = 0
        self._nowhere: dict[str, tuple[int, Decision]] = {}

    def _build(self, node: NodeSnapshot, pods: tuple[NodePod, ...]) -> _NodeBooks:
        requested: dict[str, Decimal] = {}
        for p in pods:
            for name, value in effective_requests(p.spec).items():
                requested[name] = requested.get(name, Decimal(0)) + value
        ledger: ZoneLedger | None = None
        unplaced: tuple[str, ...] = ()
        problems: tuple[str, ...] = ()
        if node.nrt is not None:
            if self.plugin.args.reconstruct_available:
                rebuilt = reconstruct(node.nrt, pods, strict=False)
                ledger, unplaced, problems = rebuilt.ledger, rebuilt.unplaced, rebuilt.problems
            else:
                ledger = ZoneLedger.from_nrt(node.nrt)
        return _NodeBooks(
            node=node,
            requested=requested,
            pods=len(pods),
            ledger=ledger,
            unplaced=unplaced,
            problems=problems,
        )

    def _whole_node(self, books: _NodeBooks, requests: Sequence[tuple[str, Decimal]]) -> str | None:
        """Why the node cannot take the pod as a whole (``requests`` sorted by name)."""
        node = books.node
        if not node.ready:
            return "node not ready"
        if node.unschedulable:
            return "node unschedulable"
        max_pods = node.allocatable.get("pods")
        if max_pods is not None and books.pods + 1 > max_pods:
            return "Too many pods"
        for name, value in requests:
            free = node.allocatable.get(name, Decimal(0)) - books.requested.get(name, Decimal(0))
            if value > free:
                return f"Insufficient {name}"
        return None

    def schedule(self, pod: PodSpec) -> Decision:
        """Pick a node for ``pod`` and assume it there (charge the books)."""
        requests = effective_requests(pod)
        shape = pod_shape(pod)
        nowhere = self._nowhere.get(shape) if self.reuse else None
        if nowhere is not None and nowhere[0] == self._version:
            return replace(nowhere[1], pod_key=pod.key)
        rejections: dict[str, str] = {}
        categories: dict[str, str] = {}
        best: tuple[int, str] | None = None
        chosen: tuple[_NodeBooks, FilterResult, Scores] | None = None
        strategy = self.plugin.args.scoring_strategy
        ordered = sorted(requests.items())
        for name, books in self.books.items():
            if self.reuse and shape in books.fits:
                misfit = books.fits[shape]
            else:
                reason = self._whole_node(books, ordered)
                misfit = None
                if reason is not None:
                    category = "resources" if reason.startswith(("Insufficient", "Too")) else "node"
                    misfit = (reason, category)
                if self.reuse:
                    books.fits[shape] = misfit
            if misfit is not None:
                rejections[name], categories[name] = misfit
                continue
            topology = books.node.nrt
            known = books.evaluations.get(shape) if self.reuse else None
            if known is None:
                result = self.plugin.filter(pod, topology, books.ledger)
                scores = (
                    self.plugin.score(pod, topology, books.ledger, result)
                    if result.fit
                    else Scores()
                )
                known = (result, scores)
                if self.reuse:
                    books.evaluations[shape] = known
            result, scores = known
            if not result.fit:
                rejections[name] = result.reason or "NUMA alignment"
                categories[name] = _category_of(result.reason or "numa")
                continue
            key = (-scores[strategy], name)
            if best is None or key < best:
                best = key
                chosen = (books, result, scores)
        if best is None or chosen is None:
            decision = Decision(
                pod_key=pod.key, node=None, rejections=rejections, categories=categories
            )
            self._nowhere[shape] = (self._version, decision)
            return decision
        books, result, scores = chosen
        placement = self.plugin.placement_to_charge(pod, books.node.nrt, books.ledger, result)
        decision = Decision(
            pod_key=pod.key,
            node=best[1],
            placement=placement,
            scores=scores,
            rejections=rejections,
            categories=categories,
            requests=requests,
        )
        self._apply(decision, +1)
        return decision

    def _apply(self, decision: Decision, sign: int) -> None:
        if decision.node is None:
            return
        books = self.books[decision.node]
        self._version += 1
        if not books.owned:
            books = self.books[decision.node] = replace(
                books,
                requested=dict(books.requested),
                ledger=books.ledger.copy() if books.ledger is not None else None,
                owned=True,
            )
        books.fits = {}  # requested amounts and the pod count change
        for name, value in decision.requests.items():
            total = books.requested.get(name, Decimal(0)) + sign * value
            if total:
                books.requested[name] = total
            else:
                books.requested.pop(name, None)
        books.pods += sign
        if books.ledger is not None and self.reserve and not decision.placement.empty:
            books.evaluations = {}  # the ledger changes: this node's evaluations are stale
            if sign > 0:
                books.ledger.charge(decision.placement)
            else:
                books.ledger.credit(decision.placement)

    def forget(self, decision: Decision) -> None:
        """Roll an assumed pod back (its bind failed): credit exactly what was charged."""
        self._apply(decision, -1)

    def unplaced(self) -> dict[str, tuple[str, ...]]:
        """node -> pods on it with no placement annotation (not counted by reconstruction)."""
        return {n: b.unplaced for n, b in self.books.items() if b.unplaced}

    def problems(self) -> list[str]:
        return [p for b in self.books.values() for p in b.problems]
