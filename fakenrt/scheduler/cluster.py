"""A cluster snapshot for one scheduling cycle: nodes (with their NRT), and pods. Pure
values; the Kubernetes edge (:mod:`fakenrt.scheduler.kube`) builds them from the API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from fakenrt.podspec import TERMINAL_PHASES, PodSpec
from fakenrt.scheduler.topology import NumaTopology


@dataclass(frozen=True)
class NodeSnapshot:
    name: str
    #: Node ``status.allocatable`` (``pods`` included).
    allocatable: Mapping[str, Decimal] = field(default_factory=dict)
    ready: bool = True
    unschedulable: bool = False
    #: The node's NRT, None when it has none or it does not parse (the edge logs why);
    #: the NUMA filter passes such nodes.
    nrt: NumaTopology | None = None

    @cached_property
    def allocatable_key(self) -> frozenset[tuple[str, Decimal]]:
        """``allocatable`` as a hashable value, made once (part of every key of the kept
        books' state, :func:`fakenrt.scheduler.books.state_key`)."""
        return frozenset(self.allocatable.items())


@dataclass(frozen=True)
class PodSnapshot:
    spec: PodSpec
    phase: str = "Pending"
    scheduler_name: str = "default-scheduler"
    #: ``status.reason`` (``TopologyAffinityError`` for a kubelet topology rejection).
    reason: str = ""
    #: Creation order key (creation timestamp, then name): pending pods go in this order.
    created: str = ""
    #: ``status.startTime`` is set: the kubelet admitted the pod
    #: (:mod:`fakenrt.scheduler.admission_order`).
    started: bool = False

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def key(self) -> str:
        return self.spec.key


@dataclass(frozen=True)
class ClusterSnapshot:
    nodes: tuple[NodeSnapshot, ...] = ()
    pods: tuple[PodSnapshot, ...] = ()

    def pending(self, scheduler_name: str) -> tuple[PodSnapshot, ...]:
        """Unbound, non-terminal pods for ``scheduler_name``, oldest first."""
        out = [
            p
            for p in self.pods
            if not p.spec.node_name and not p.terminal and p.scheduler_name == scheduler_name
        ]
        return tuple(sorted(out, key=lambda p: (p.created, p.key)))
