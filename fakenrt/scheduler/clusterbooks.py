"""Every node's books, kept from one scheduling cycle to the next and updated node by
node, with the indexes that make a decision cost what the cluster's variety costs rather
than its size. Pure; what ``fakenrt simulate`` schedules through
(:meth:`fakenrt.scheduler.cycle.SchedulingCycle.over`).

* **State classes.** Nodes whose books are in equal states
  (:func:`~fakenrt.scheduler.books.state_key`) give every pod shape the same verdict and
  scores, so each class is evaluated once per shape (and the evaluation kept while the
  class exists, and for a while after, as states recur). A decision looks at the classes,
  not the nodes: the best-scoring class wins, and within it the first node by name -
  exactly the node the rule "highest score, ties by name" picks among all nodes.
* **Per-node invalidation.** A node's books are rebuilt only when its caller says the
  node changed (:meth:`ClusterBooks.set_node`); assuming a pod moves only that node to
  another class.
* **Shapes that fit nowhere.** Every move of a node to another class is logged; a shape
  that fitted nowhere is, on its next attempt, re-checked only on the nodes that moved
  since - it still fits nowhere unless one of them now takes it.

Decisions carry no per-node rejections (states, not nodes, are ranked).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.scheduler.books import NodeBooks, pod_shape, state_key, static_key
from fakenrt.scheduler.cluster import NodeSnapshot
from fakenrt.scheduler.decision import Decision, Evaluation, barred, evaluate
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.plugin import FilterResult, NumaPlugin
from fakenrt.scheduler.reconstruction import NodePod

#: Evaluations of state classes that no node is in any more, kept for when a state recurs.
RETIRED_CLASSES = 4096
#: Moves logged before the log (and the fits-nowhere memo it backs) is started afresh.
MAX_LOG = 200_000


@dataclass
class _Entry:
    books: NodeBooks
    static: object
    key: object


@dataclass
class _Memo:
    """What a pod shape gives in one state: its evaluation, and the placement charged
    when it is bound there (the same for every node in the state)."""

    #: shape -> the evaluation of that shape in this state.
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    #: shape -> the placement charged for it.
    charges: dict[str, Placement] = field(default_factory=dict)


@dataclass
class _Class:
    #: Member node names, sorted.
    names: list[str]
    memo: _Memo = field(default_factory=_Memo)


class ClusterBooks:
    """The books of every node, for one plugin configuration and reservation mode."""

    def __init__(self, plugin: NumaPlugin, *, reserve: bool = True) -> None:
        self.plugin = plugin
        self.reserve = reserve
        self._entries: dict[str, _Entry] = {}
        self._classes: dict[object, _Class] = {}
        # Oldest first. A dict, not an OrderedDict: taking a key out of an OrderedDict of
        # a few thousand entries took about 20 us a time here (its node index is rebuilt
        # after the table it shadows resizes) against about 1 us for a dict.
        self._retired: dict[object, _Memo] = {}
        self._shapes: dict[str, tuple[Mapping[str, Decimal], tuple[tuple[str, Decimal], ...]]] = {}
        # Nodes that moved to another class, in order; _base is the position of _log[0].
        self._log: list[str] = []
        self._base = 0
        #: shape -> the log position when it was last known to fit nowhere
        self._nowhere: dict[str, int] = {}

    # ---- nodes -----------------------------------------------------------------------

    def set_node(self, node: NodeSnapshot, pods: Sequence[NodePod]) -> None:
        """Build (or rebuild) the books of ``node`` with ``pods``, its non-terminal pods."""
        entry = self._entries.get(node.name)
        previous = entry.books if entry is not None else None
        books = NodeBooks.build(node, pods, self.plugin.args, previous=previous)
        topology_static = (
            entry.static
            if entry is not None and entry.books.node.nrt is node.nrt
            else static_key(node.nrt)
        )
        key = state_key(books, topology_static)
        if entry is None:
            self._entries[node.name] = _Entry(books, topology_static, key)
            self._join(node.name, key)
            self._log.append(node.name)
            return
        entry.books, entry.static = books, topology_static
        self._move(node.name, entry, key)

    def drop_node(self, name: str) -> None:
        entry = self._entries.pop(name, None)
        if entry is not None:
            self._leave(name, entry.key)
            self._log.append(name)

    def books(self, name: str) -> NodeBooks:
        return self._entries[name].books

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def moves(self) -> int:
        """How many times a node joined, left or moved to another class: a version of the
        classes (equal versions, the same nodes in the same classes)."""
        return self._base + len(self._log)

    def _join(self, name: str, key: object) -> None:
        cls = self._classes.get(key)
        if cls is None:
            kept = self._retired.pop(key, None)
            cls = self._classes[key] = _Class([name], kept if kept is not None else _Memo())
        else:
            bisect.insort(cls.names, name)

    def _leave(self, name: str, key: object) -> None:
        cls = self._classes[key]
        del cls.names[bisect.bisect_left(cls.names, name)]
        if not cls.names:
            del self._classes[key]
            self._retired[key] = cls.memo
            if len(self._retired) > RETIRED_CLASSES:
                del self._retired[next(iter(self._retired))]

    def _move(self, name: str, entry: _Entry, key: object) -> None:
        if key == entry.key:
            return
        self._leave(name, entry.key)
        entry.key = key
        self._join(name, key)
        self._log.append(name)
        if len(self._log) > MAX_LOG:
            self._base += len(self._log)
            self._log.clear()
            self._nowhere.clear()

    # ---- deciding --------------------------------------------------------------------

    def _evaluation(
        self, cls: _Class, pod: PodSpec, shape: str, ordered: Sequence[tuple[str, Decimal]]
    ) -> Evaluation:
        known = cls.memo.evaluations.get(shape)
        if known is None:
            books = self._entries[cls.names[0]].books
            known = cls.memo.evaluations[shape] = evaluate(self.plugin, books, pod, ordered)
        return known

    def _charge(self, cls: _Class, pod: PodSpec, shape: str, result: FilterResult) -> Placement:
        """The placement charged for a pod of ``shape`` bound to a node of ``cls``."""
        known = cls.memo.charges.get(shape)
        if known is None:
            books = self._entries[cls.names[0]].books
            known = cls.memo.charges[shape] = self.plugin.placement_to_charge(
                pod, books.node.nrt, books.ledger, result
            )
        return known

    def schedule(
        self,
        pod: PodSpec,
        *,
        shape: str | None = None,
        zones_barred: Mapping[str, str] | None = None,
    ) -> Decision:
        """Pick a node for ``pod`` and assume it there. ``shape``: the pod's
        :func:`~fakenrt.scheduler.books.pod_shape`, when the caller has it.
        ``zones_barred``: node -> why the pod may not hold zones there now
        (:mod:`~fakenrt.scheduler.admission_order`): when the best node is barred and the
        pod would hold zones there, it waits (no node) rather than take a worse one."""
        shape = pod_shape(pod) if shape is None else shape
        if self.fits_nowhere(pod, shape):
            return Decision(pod_key=pod.key, node=None)
        requests, ordered = self._requests(pod, shape)
        end = self.moves
        best: tuple[int, str] | None = None
        chosen: tuple[_Class, Evaluation] | None = None
        for cls in self._classes.values():
            evaluation = cls.memo.evaluations.get(shape) or self._evaluation(
                cls, pod, shape, ordered
            )
            if not evaluation.fit:
                continue
            key = (-evaluation.score, cls.names[0])
            if best is None or key < best:
                best, chosen = key, (cls, evaluation)
        if best is None or chosen is None or chosen[1].result is None:
            self._nowhere[shape] = end
            return Decision(pod_key=pod.key, node=None)
        name = best[1]
        placement = self._charge(chosen[0], pod, shape, chosen[1].result)
        waits = barred(pod.key, name, placement, zones_barred)
        if waits is not None:
            return waits
        decision = Decision(
            pod_key=pod.key,
            node=name,
            placement=placement,
            scores=chosen[1].scores,
            requests=requests,
        )
        self._apply(decision, +1)
        return decision

    def _requests(
        self, pod: PodSpec, shape: str
    ) -> tuple[Mapping[str, Decimal], tuple[tuple[str, Decimal], ...]]:
        known = self._shapes.get(shape)
        if known is None:
            wanted = effective_requests(pod)
            known = self._shapes[shape] = (wanted, tuple(sorted(wanted.items())))
        return known

    def fits_nowhere(self, pod: PodSpec, shape: str) -> bool:
        """Whether a pod of ``pod``'s shape is known to fit nowhere now: it fitted nowhere
        when last tried, and no node that moved to another class since takes it. False
        when that is not known (only a decision tells)."""
        since = self._nowhere.get(shape)
        if since is None or since < self._base:
            return False
        end = self.moves
        if since != end:
            if self._moved_fit(since, pod, shape, self._requests(pod, shape)[1]):
                return False
            self._nowhere[shape] = end
        return True

    def _moved_fit(
        self, since: int, pod: PodSpec, shape: str, ordered: Sequence[tuple[str, Decimal]]
    ) -> bool:
        """Whether a node that moved to another class since log position ``since`` takes
        the shape now."""
        for name in set(self._log[since - self._base :]):
            entry = self._entries.get(name)
            if (
                entry is not None
                and self._evaluation(self._classes[entry.key], pod, shape, ordered).fit
            ):
                return True
        return False

    def _apply(self, decision: Decision, sign: int) -> None:
        if decision.node is None:
            return
        entry = self._entries[decision.node]
        entry.books.charge(decision.requests, decision.placement, sign=sign, reserve=self.reserve)
        self._move(decision.node, entry, state_key(entry.books, entry.static))

    def forget(self, decision: Decision) -> None:
        """Roll an assumed pod back: credit exactly what was charged."""
        self._apply(decision, -1)
