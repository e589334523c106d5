"""One scheduling cycle: filter the nodes, score, pick, reserve. Pure - no API calls, no
clock: the loop (:mod:`fakenrt.scheduler.loop`) feeds it a snapshot and performs the
binds; a simulation drives it in simulated time.

Filter order per node: readiness, then whole-node resources (node allocatable minus the
requests of the non-terminal pods bound to it, and the pod count - the kubelet's own
fit check), then the NUMA plugin on the node's NRT. The best-scoring node under the
configured strategy wins (ties: node name). Assuming a pod charges its whole-node
requests and its NUMA placement to the cycle's books, so the next pod of the same cycle
sees them; :meth:`SchedulingCycle.forget` credits both back exactly (a failed bind).
With ``reserve=False`` only the whole-node requests are charged: every pod of the cycle
sees the zones as the snapshot had them (a scheduler without the in-cycle reservation,
compared against in ``fakenrt simulate``).

Two ways to build a cycle, one decision rule (property tests require both to decide
exactly as evaluating every pod on every node, ``reuse=False``):

* ``SchedulingCycle(snapshot, plugin)`` - cold, as the loop runs it each cycle: a node's
  books are built only when a pod is first examined there; nodes are examined in name
  order, and once a node scored what no later node can beat (it ties at best, and ties go
  to the first name), the search stops - the LeastNUMANodes score of a pod that aligns
  anything is at most 94 (one zone, the closest), so the first such node wins. A node's
  evaluation of one pod *shape* (:func:`~fakenrt.scheduler.books.pod_shape`) is reused
  for later pods of the same shape until its books change, and a shape that fitted
  nowhere fits nowhere again until some node's books change.
* ``SchedulingCycle.over(books)`` - a cycle over books kept and updated node by node
  between cycles (:class:`~fakenrt.scheduler.clusterbooks.ClusterBooks`, what
  ``fakenrt simulate`` keeps): nodes in equal states share one evaluation per shape, the
  nodes of the best-scoring state win (the first name among them), and a shape that fits
  nowhere is re-checked only on the nodes whose state changed since.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.scheduler.books import NodeBooks, pod_shape
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot
from fakenrt.scheduler.clusterbooks import ClusterBooks
from fakenrt.scheduler.decision import Decision, Evaluation, barred, evaluate, score_bound
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod

__all__ = ["ClusterBooks", "Decision", "SchedulingCycle", "pod_shape"]


@dataclass
class _Node:
    """A node of a cold cycle: its snapshot and pods, its books once built, and its
    evaluations per shape while the books are unchanged."""

    node: NodeSnapshot
    pods: tuple[NodePod, ...]
    books: NodeBooks | None = None
    evaluations: dict[str, Evaluation] = field(default_factory=dict)


class SchedulingCycle:
    """The books of one cycle (see the module docstring)."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        plugin: NumaPlugin,
        *,
        reserve: bool = True,
        reuse: bool = True,
        node_pods: Mapping[str, tuple[NodePod, ...]] | None = None,
    ) -> None:
        self.plugin = plugin
        self.reserve = reserve
        #: Reuse evaluations, stop early and remember shapes that fit nowhere (False:
        #: evaluate every pod on every node, the reference the tests compare with).
        self.reuse = reuse
        self._kept: ClusterBooks | None = None
        if node_pods is None:
            grouped: dict[str, list[NodePod]] = {}
            for pod in snapshot.pods:
                if pod.spec.node_name and not pod.terminal:
                    grouped.setdefault(pod.spec.node_name, []).append(
                        NodePod(spec=pod.spec, phase=pod.phase)
                    )
            node_pods = {name: tuple(pods) for name, pods in grouped.items()}
        self._nodes = [
            _Node(node, tuple(node_pods.get(node.name, ())))
            for node in sorted(snapshot.nodes, key=lambda n: n.name)
        ]
        self._by_name = {n.node.name: n for n in self._nodes}
        #: Bumped by every charge and credit: a shape that fitted nowhere at a version
        #: fits nowhere while it is unchanged.
        self._version = 0
        self._nowhere: dict[str, tuple[int, Decision]] = {}
        self._bounds: dict[tuple[object, ...], int] = {}

    @classmethod
    def over(cls, books: ClusterBooks) -> SchedulingCycle:
        """A cycle over books kept between cycles (see the module docstring)."""
        cycle = cls.__new__(cls)
        cycle.plugin, cycle.reserve, cycle.reuse = books.plugin, books.reserve, True
        cycle._kept = books
        return cycle

    # ---- books -----------------------------------------------------------------------

    def _books(self, entry: _Node) -> NodeBooks:
        if entry.books is None:
            entry.books = NodeBooks.build(entry.node, entry.pods, self.plugin.args)
        return entry.books

    def node_books(self, name: str) -> NodeBooks:
        """The books of node ``name`` (built now if the cycle had not examined it yet)."""
        if self._kept is not None:
            return self._kept.books(name)
        return self._books(self._by_name[name])

    def _bound(self, node: NodeSnapshot, pod: PodSpec, shape: str) -> int:
        topology = node.nrt
        key: tuple[object, ...] = (shape,)
        if topology is not None:
            key = (shape, topology.reported, topology.unaligned, topology.scope)
        bound = self._bounds.get(key)
        if bound is None:
            bound = self._bounds[key] = score_bound(self.plugin, node, pod)
        return bound

    # ---- deciding --------------------------------------------------------------------

    def schedule(
        self,
        pod: PodSpec,
        *,
        shape: str | None = None,
        zones_barred: Mapping[str, str] | None = None,
    ) -> Decision:
        """Pick a node for ``pod`` and assume it there (charge the books); ``shape`` and
        ``zones_barred`` as :meth:`ClusterBooks.schedule` takes them (a barred best node:
        the pod waits)."""
        if self._kept is not None:
            return self._kept.schedule(pod, shape=shape, zones_barred=zones_barred)
        requests = effective_requests(pod)
        ordered = sorted(requests.items())
        shape = pod_shape(pod) if shape is None else shape
        if self.reuse:
            nowhere = self._nowhere.get(shape)
            if nowhere is not None and nowhere[0] == self._version:
                return replace(nowhere[1], pod_key=pod.key)
        rejections: dict[str, str] = {}
        categories: dict[str, str] = {}
        best: tuple[int, str] | None = None
        chosen: tuple[_Node, Evaluation] | None = None
        for entry in self._nodes:
            name = entry.node.name
            if self.reuse and best is not None and -self._bound(entry.node, pod, shape) >= best[0]:
                continue  # it cannot score higher than the best so far, and ties lose
            books = self._books(entry)
            known = entry.evaluations.get(shape) if self.reuse else None
            if known is None:
                known = evaluate(self.plugin, books, pod, ordered)
                if self.reuse:
                    entry.evaluations[shape] = known
            if not known.fit:
                rejections[name], categories[name] = known.reason()
                continue
            key = (-known.score, name)
            if best is None or key < best:
                best, chosen = key, (entry, known)
        if chosen is None:
            decision = Decision(
                pod_key=pod.key, node=None, rejections=rejections, categories=categories
            )
            self._nowhere[shape] = (self._version, decision)
            return decision
        entry, known = chosen
        assert known.result is not None
        books = self._books(entry)
        placement = self.plugin.placement_to_charge(pod, books.node.nrt, books.ledger, known.result)
        name = entry.node.name
        waits = barred(
            pod.key, name, placement, zones_barred, rejections=rejections, categories=categories
        )
        if waits is not None:
            return waits
        decision = Decision(
            pod_key=pod.key,
            node=entry.node.name,
            placement=placement,
            scores=known.scores,
            rejections=rejections,
            categories=categories,
            requests=requests,
        )
        self._apply(decision, +1)
        return decision

    def _apply(self, decision: Decision, sign: int) -> None:
        if decision.node is None:
            return
        entry = self._by_name[decision.node]
        self._version += 1
        books = self._books(entry)
        books.charge(decision.requests, decision.placement, sign=sign, reserve=self.reserve)
        entry.evaluations = {}

    def forget(self, decision: Decision) -> None:
        """Roll an assumed pod back (its bind failed): credit exactly what was charged."""
        if self._kept is not None:
            self._kept.forget(decision)
            return
        self._apply(decision, -1)

    def unplaced(self) -> dict[str, tuple[str, ...]]:
        """node -> pods on it with no placement annotation (not counted by reconstruction),
        on the nodes whose books the cycle built (those it examined); none over kept books."""
        if self._kept is not None:
            return {}
        return {
            n.node.name: n.books.unplaced
            for n in self._nodes
            if n.books is not None and n.books.unplaced
        }

    def problems(self) -> list[str]:
        """Annotations reconstruction could not use, on the nodes the cycle examined (none
        over kept books)."""
        if self._kept is not None:
            return []
        return [p for n in self._nodes if n.books is not None for p in n.books.problems]
