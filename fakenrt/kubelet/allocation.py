"""What the simulated kubelet decided for a pod: values shared by the simulator, the
fake podresources server, NRT rendering and the controller. Frozen, pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


@dataclass(frozen=True)
class MemoryBlock:
    """A Memory Manager block: ``type`` is ``memory`` or ``hugepages-<size>``; ``numa`` is
    the NUMA-node set it was allocated from (several nodes = a Memory Manager group)."""

    type: str
    size: int
    numa: frozenset[int]


@dataclass(frozen=True)
class ClaimResource:
    """One prepared DRA device of a claim, as podresources lists it (``ClaimResource``)."""

    driver: str
    pool: str
    device: str
    cdi_ids: tuple[str, ...] = ()
    share_id: str | None = None


@dataclass(frozen=True)
class DynamicResource:
    """A ResourceClaim a container uses, with its prepared devices (``DynamicResource``)."""

    claim_name: str
    claim_namespace: str
    resources: tuple[ClaimResource, ...] = ()


@dataclass(frozen=True)
class ContainerAllocation:
    """Exclusive resources one container received."""

    name: str
    cpus: frozenset[int] = frozenset()
    #: resource name -> device ids, in allocation order.
    devices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    memory: tuple[MemoryBlock, ...] = ()
    #: What kind of container this is: ``"regular"``, ``"sidecar"`` (an init container with
    #: ``restartPolicy: Always``) or ``"init"`` (an init container that runs to completion).
    #: The podresources API lists sidecars and regular containers, never plain init ones.
    kind: str = "regular"
    #: The ResourceClaims it uses, once the kubelet's DRA manager prepared the pod's claims
    #: (:mod:`fakenrt.kubelet.dra`); not part of admission.
    dynamic: tuple[DynamicResource, ...] = ()


#: ``ContainerAllocation.kind`` values.
REGULAR, SIDECAR, INIT = "regular", "sidecar", "init"


@dataclass(frozen=True)
class PodAllocation:
    """Everything a pod holds, per container (init containers included, in spec order)."""

    namespace: str
    name: str
    uid: str
    containers: tuple[ContainerAllocation, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @cached_property
    def exclusive(self) -> bool:
        """It holds exclusive CPUs, memory blocks or devices (kept: every snapshot of the
        node's NRT asks it of every pod, and the allocation never changes)."""
        return any(c.cpus or c.memory or any(c.devices.values()) for c in self.containers)


@dataclass(frozen=True)
class ProviderHint:
    """One topology hint: ``numa`` is None when the hint has no NUMA preference."""

    numa: tuple[int, ...] | None
    preferred: bool


@dataclass(frozen=True)
class HintReport:
    """The hints gathered for one container (or for the pod, in pod scope: ``container``
    is None) and the merged best hint."""

    container: str | None
    best: ProviderHint
    #: resource name -> the hints its provider returned.
    providers: Mapping[str, tuple[ProviderHint, ...]] = field(default_factory=dict)
    #: Optional human-readable remarks of the hint providers (why a resource has no
    #: hints, why it has no preference, ...). Added for ``fakenrt kubelet explain``.
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdmissionResult:
    """The verdict for one pod. ``reason`` is None when admitted, else the kubelet's
    reason (``TopologyAffinityError``, ``UnexpectedAdmissionError``, ``OutOf<resource>``...).
    ``allocation`` is None when rejected (a rejected pod holds nothing)."""

    pod_key: str
    admit: bool
    reason: str | None = None
    message: str | None = None
    hints: tuple[HintReport, ...] = ()
    allocation: PodAllocation | None = None
