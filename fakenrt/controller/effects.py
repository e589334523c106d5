"""What the controller core asks the world to do: frozen values, executed at the edges.

The core (``fleet.py``) never talks to Kubernetes, gRPC or the filesystem; it returns
these and the runner (or a simulation harness) carries them out. Every effect names the
node it belongs to, so an executor can keep per-node (and per-object) order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.memory_checkpoint import MemoryCheckpoint, encode_memory_checkpoint
from fakenrt.nrt.koordlet import KoordinatorPod


class Rendered(Mapping[str, Any]):
    """An API body computed when first read: the core describes every write in full, and
    the executor renders it, while an in-process reader (a simulation) reads only a few
    ``known`` items - given at construction, equal to the rendered ones - and never pays
    for the rest."""

    def __init__(self, render: Callable[[], Mapping[str, Any]], **known: Any) -> None:
        self._render = render
        self._value: Mapping[str, Any] | None = None
        #: Items answered without rendering (the same as the rendered body's).
        self.known = known

    def rendered(self) -> Mapping[str, Any]:
        if self._value is None:
            self._value = self._render()
        return self._value

    def __getitem__(self, key: str) -> Any:
        if key in self.known:
            return self.known[key]
        return self.rendered()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rendered())

    def __len__(self) -> int:
        return len(self.rendered())

    def __repr__(self) -> str:
        return repr(self.rendered())


@dataclass(frozen=True)
class PatchPodStatus:
    """Strategic-merge patch of ``pods/status``; ``uid`` is a precondition (a pod that reuses
    the name is never written). ``annotations`` are merged into metadata in the same call."""

    node: str
    namespace: str
    name: str
    uid: str
    status: Mapping[str, Any]
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordPodEvent:
    """A core/v1 Event about a pod, as the kubelet on ``node`` records it."""

    node: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    at: float


@dataclass(frozen=True)
class DeletePod:
    """Finish a pod's deletion as the kubelet does once its containers are gone: delete with
    grace period 0 and a uid precondition."""

    node: str
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class CreatePod:
    """Create a pod already bound to ``node`` (the pods standing for a profile's foreign
    ``allocated``); one that already exists is left as it is."""

    node: str
    namespace: str
    name: str
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class NrtSnapshot:
    """What a publication of a fake node's NRT renders: the zones' usage and the pods
    counted in it, and for the other agents' formats the allocations themselves and what
    koordlet reads of the pods holding them."""

    usage: Mapping[int, Mapping[str, int]]
    #: ``namespace/name`` of the pods holding exclusive resources (the fingerprint's set).
    pods: tuple[str, ...]
    #: Every pod holding resources on the node (the foreign ones first).
    allocations: tuple[PodAllocation, ...] = ()
    #: ``namespace/name`` -> what koordlet reads of the pod's object.
    koordinator: Mapping[str, KoordinatorPod] = field(default_factory=dict)


@dataclass(frozen=True)
class PublishNrt:
    """Create or update the node's NodeResourceTopology object with ``body``."""

    node: str
    body: Mapping[str, Any]
    #: A periodic refresh of an unchanged state (not a change becoming visible).
    refresh: bool = False
    #: The fake node's state the body renders (an in-process reader takes it as it is,
    #: without reading the body back); None when the body comes from elsewhere.
    snapshot: NrtSnapshot | None = None


@dataclass(frozen=True)
class PublishNumatopology:
    """Create or update the node's Volcano ``Numatopology`` object with ``body``
    (``nrt.volcano``)."""

    node: str
    body: Mapping[str, Any]
    refresh: bool = False


@dataclass(frozen=True)
class ServePodResources:
    """The node's podresources socket must now report exactly ``allocations``."""

    node: str
    allocations: tuple[PodAllocation, ...]


@dataclass(frozen=True)
class WithdrawPodResources:
    """The node's podresources socket stops answering (its simulated kubelet is not
    running): the server is stopped and the socket removed."""

    node: str


@dataclass(frozen=True)
class RecordNodeEvent:
    """A core/v1 Event about the Node, as its kubelet records it."""

    node: str
    type: str
    reason: str
    message: str
    at: float


@dataclass(frozen=True)
class RecordMemoryCheckpoint:
    """Write the simulated kubelet's Memory Manager checkpoint (one JSON line, see
    :mod:`fakenrt.kubelet.memory_checkpoint`) into the Node's annotation
    ``fakenrt.io/memory-manager-state``; only the newest value matters."""

    node: str
    #: The checkpoint, or its encoding.
    checkpoint: MemoryCheckpoint | str

    @property
    def value(self) -> str:
        """The annotation's value (encoded when first asked)."""
        if isinstance(self.checkpoint, str):
            return self.checkpoint
        return encode_memory_checkpoint(self.checkpoint)


@dataclass(frozen=True)
class RenewLease:
    node: str
    at: float


@dataclass(frozen=True)
class ReportNodeStatus:
    """Write the node's ``status`` (conditions with fresh heartbeat times)."""

    node: str
    status: Mapping[str, Any]


Effect = (
    PatchPodStatus
    | RecordPodEvent
    | DeletePod
    | CreatePod
    | PublishNrt
    | PublishNumatopology
    | ServePodResources
    | WithdrawPodResources
    | RecordNodeEvent
    | RecordMemoryCheckpoint
    | RenewLease
    | ReportNodeStatus
)
