"""The hint-provider interface the Topology Manager consults. Pure.

Mirrors ``HintProvider`` in ``pkg/kubelet/cm/topologymanager/topology_manager.go``. A
provider instance works on a private copy of its manager's state for the duration of one
pod admission; the node commits that copy only when the whole pod is admitted.
"""

from __future__ import annotations

from typing import Protocol

from fakenrt.kubelet.hints import ProviderHints, TopologyHint
from fakenrt.podspec import ContainerSpec, PodSpec


class AllocationError(RuntimeError):
    """A provider's ``Allocate`` failed after the merge; the message is the kubelet's
    error text (the pod is rejected with ``UnexpectedAdmissionError``)."""


class AdmissionErrorCode(AllocationError):
    """An ``Allocate`` error that carries its own admission reason (the kubelet's
    ``admission.Error`` with ``Type()``, e.g. ``SMTAlignmentError``): the pod is rejected
    with ``reason`` and the error text as message, not as an unexpected error
    (``GetPodAdmitResult`` in ``pkg/kubelet/cm/admission/errors.go``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class HintProvider(Protocol):
    @property
    def name(self) -> str: ...

    def container_hints(self, pod: PodSpec, container: ContainerSpec) -> ProviderHints: ...

    def pod_hints(self, pod: PodSpec) -> ProviderHints: ...

    def allocate(self, pod: PodSpec, container: ContainerSpec, hint: TopologyHint) -> None:
        """Allocate for one container inside ``hint``; raises :class:`AllocationError`."""
        ...

    def notes(self) -> list[str]:
        """Human-readable remarks gathered since the last call (then cleared)."""
        ...
