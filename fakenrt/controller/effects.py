"""What the controller core asks the world to do: frozen values, executed at the edges.

The core (``fleet.py``) never talks to Kubernetes, gRPC or the filesystem; it returns
these and the runner (or a simulation harness) carries them out. Every effect names the
node it belongs to, so an executor can keep per-node (and per-object) order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fakenrt.kubelet.allocation import PodAllocation


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
    counted in it."""

    usage: Mapping[int, Mapping[str, int]]
    #: ``namespace/name`` of the pods holding exclusive resources (the fingerprint's set).
    pods: tuple[str, ...]


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
    value: str


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
    | ServePodResources
    | WithdrawPodResources
    | RecordNodeEvent
    | RecordMemoryCheckpoint
    | RenewLease
    | ReportNodeStatus
)
