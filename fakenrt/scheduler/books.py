"""One node's books for a scheduling cycle, and what a pod's fit depends on. Pure.

A node's books are what the cycle's filter reads about it: the whole-node requests of the
non-terminal pods bound to it and their number (the kubelet's own fit check), and the
per-zone :class:`~fakenrt.scheduler.ledger.ZoneLedger` the NUMA plugin reads - rebuilt
from the pods' placements (:mod:`fakenrt.scheduler.reconstruction`) or taken from NRT
``available``. Assuming a pod charges both (:meth:`NodeBooks.charge`); rolling it back
credits exactly the same amounts.

The plugin's verdict and scores for a pod depend only on the pod's *shape*
(:func:`pod_shape`: its containers, not its identity or annotations) and on the node's
*state* (:func:`state_key`: readiness, allocatable, requests, pod count, the NRT's static
part - policy, scope, managers, zones' capacity, allocatable and costs - and the ledger's
free amounts, memory groups and pods at unknown zones). Nodes in equal states give equal
verdicts and scores for every shape; the cycle's indexes rely on exactly that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from fakenrt.podspec import PodSpec, effective_requests
from fakenrt.scheduler.args import PluginArgs
from fakenrt.scheduler.cluster import NodeSnapshot
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.placement import Placement
from fakenrt.scheduler.reconstruction import NodePod, Placements, placements, reconstruct_with
from fakenrt.scheduler.topology import NumaTopology

#: Why a node cannot take a pod as a whole, and the reason's category (the metric label).
Misfit = tuple[str, str]


def pod_shape(pod: PodSpec) -> str:
    """What the plugin's verdict and scores depend on: everything but the pod's identity,
    annotations and node."""
    return repr(replace(pod, namespace="", name="", uid="", annotations={}, node_name=""))


def _requests(pod: NodePod) -> Mapping[str, Decimal]:
    return pod.requests if pod.requests is not None else effective_requests(pod.spec)


def _summed(pods: Sequence[NodePod]) -> dict[str, Decimal]:
    """The pods' whole-node requests, by resource (every resource some pod requests)."""
    total: dict[str, Decimal] = {}
    for p in pods:
        for name, value in _requests(p).items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def _resummed(
    summed: Mapping[str, Decimal], before: Sequence[NodePod], pods: Sequence[NodePod]
) -> dict[str, Decimal]:
    """:func:`_summed` of ``pods`` from ``summed``, that of ``before``: the requests of the
    pods that left (values of ``before`` not in ``pods``) taken out, of those that came
    added. Equal to the sum from scratch (the quantities are exact decimals); a resource
    whose total drops to zero stays only while some pod requests it."""
    after = {id(p) for p in pods}
    earlier = {id(p) for p in before}
    total = dict(summed)
    emptied = False
    for p in before:
        if id(p) not in after:
            for name, value in _requests(p).items():
                left = total[name] - value
                total[name] = left
                emptied = emptied or not left
    for p in pods:
        if id(p) not in earlier:
            for name, value in _requests(p).items():
                total[name] = total.get(name, Decimal(0)) + value
    if emptied:
        for name in [n for n, v in total.items() if not v]:
            if not any(name in _requests(p) for p in pods):
                del total[name]
    return total


@dataclass
class NodeBooks:
    """The books of one node (see the module docstring). ``ledger`` is None when the node
    has no NRT (the plugin passes every pod there)."""

    node: NodeSnapshot
    requested: dict[str, Decimal]
    pods: int
    ledger: ZoneLedger | None
    #: Non-terminal pods with no placement annotation (reconstruction does not guess).
    unplaced: tuple[str, ...] = ()
    #: Annotations reconstruction could not use.
    problems: tuple[str, ...] = ()
    #: The pods the books were built from, and what their placements gave (reused by
    #: :meth:`build` when only the node's NRT changed).
    seen: Sequence[NodePod] = ()
    placed: Placements | None = None
    #: The whole-node requests of ``seen`` (``requested`` before any pod was assumed;
    #: never changed).
    summed: Mapping[str, Decimal] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        node: NodeSnapshot,
        pods: Sequence[NodePod],
        args: PluginArgs,
        *,
        previous: NodeBooks | None = None,
    ) -> NodeBooks:
        """The books of ``node`` with ``pods`` (its non-terminal pods) on it. ``previous``:
        the node's books before; when they were built on an NRT with the same static part,
        the pods' placements are taken from them - all of them when built from the very
        same ``pods`` (only NRT ``available`` or its fingerprint changed), else those of
        the pods that did not change (:func:`placements`); the whole-node requests are
        updated by the pods that changed (:func:`_resummed`)."""
        summed: Mapping[str, Decimal]
        if previous is None:
            summed = _summed(pods)
        elif previous.seen is pods:
            summed = previous.summed  # the same pods: the same requests
        else:
            summed = _resummed(previous.summed, previous.seen, pods)
        ledger: ZoneLedger | None = None
        unplaced: tuple[str, ...] = ()
        problems: tuple[str, ...] = ()
        placed: Placements | None = None
        if node.nrt is not None:
            if args.reconstruct_available:
                before = (
                    previous.placed
                    if previous is not None
                    and previous.node.nrt is not None
                    and previous.node.nrt.static == node.nrt.static
                    and previous.node.nrt.fingerprint_method == node.nrt.fingerprint_method
                    else None
                )
                if before is not None and previous is not None and previous.seen is pods:
                    placed = before
                else:
                    placed = placements(node.nrt, pods, strict=False, previous=before)
                rebuilt = reconstruct_with(node.nrt, placed, pods)
                ledger, unplaced, problems = rebuilt.ledger, rebuilt.unplaced, rebuilt.problems
            else:
                ledger = ZoneLedger.from_nrt(node.nrt)
        return cls(
            node=node,
            requested=dict(summed),
            pods=len(pods),
            ledger=ledger,
            unplaced=unplaced,
            problems=problems,
            seen=pods,
            placed=placed,
            summed=summed,
        )

    def copy(self) -> NodeBooks:
        return replace(
            self,
            requested=dict(self.requested),
            ledger=self.ledger.copy() if self.ledger is not None else None,
        )

    def misfit(self, requests: Iterable[tuple[str, Decimal]]) -> Misfit | None:
        """Why the node cannot take a pod with these effective requests as a whole (sorted
        by name), or None: readiness, then the pod count, then each resource."""
        node = self.node
        if not node.ready:
            return ("node not ready", "node")
        if node.unschedulable:
            return ("node unschedulable", "node")
        max_pods = node.allocatable.get("pods")
        if max_pods is not None and self.pods + 1 > max_pods:
            return ("Too many pods", "resources")
        for name, value in requests:
            free = node.allocatable.get(name, Decimal(0)) - self.requested.get(name, Decimal(0))
            if value > free:
                return (f"Insufficient {name}", "resources")
        return None

    def charge(
        self, requests: Mapping[str, Decimal], placement: Placement, *, sign: int, reserve: bool
    ) -> None:
        """Assume (``sign`` +1) or roll back (-1) a pod: its whole-node requests and pod,
        and with ``reserve`` its NUMA placement."""
        for name, value in requests.items():
            total = self.requested.get(name, Decimal(0)) + sign * value
            if total:
                self.requested[name] = total
            else:
                self.requested.pop(name, None)
        self.pods += sign
        if self.ledger is not None and reserve and not placement.empty:
            if sign > 0:
                self.ledger.charge(placement)
            else:
                self.ledger.credit(placement)


def static_key(topology: NumaTopology | None) -> object:
    """The part of a node's NRT the plugin's verdict and scores read besides the ledger
    (:attr:`NumaTopology.static`; None without NRT)."""
    return None if topology is None else topology.static


def ledger_key(ledger: ZoneLedger | None) -> object:
    """A ledger's free amounts, memory groups (in charge order, as the Memory Manager's
    books keep them) and pods at unknown zones, as a hashable value (compared, never
    read: a zone's amounts as a set of its non-zero ones, each group as its set of
    zones)."""
    if ledger is None:
        return None
    available, blocks = ledger.available, ledger.blocks
    return (
        tuple(
            [
                (z, frozenset([(r, v) for r, v in available[z].items() if v]))
                for z in sorted(available)
            ]
        ),
        tuple([(z, tuple(blocks[z])) for z in sorted(blocks)]),
        ledger.unaccounted,
    )


def state_key(books: NodeBooks, static: object) -> object:
    """Everything a pod's verdict and scores on the node depend on (``static``: the node's
    :func:`static_key`); equal keys, equal evaluations for every shape."""
    node = books.node
    return (
        node.ready,
        node.unschedulable,
        node.allocatable_key,
        frozenset(books.requested.items()),
        books.pods,
        static,
        ledger_key(books.ledger),
    )
