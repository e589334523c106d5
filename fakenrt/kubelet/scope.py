"""What the Topology Manager scopes share: the outcome of one admission and the report of
the hints behind it. Pure.

Mirrors ``pkg/kubelet/cm/topologymanager/scope.go`` (``allocateAlignedResources``) and
``pkg/kubelet/cm/admission/errors.go`` (the reasons and messages a rejection carries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fakenrt.kubelet.allocation import (
    TOPOLOGY_AFFINITY_ERROR,
    UNEXPECTED_ADMISSION_ERROR,
    HintReport,
    ProviderHint,
)
from fakenrt.kubelet.hints import ProviderHints, TopologyHint, normalized
from fakenrt.kubelet.provider import AdmissionErrorCode, AllocationError, HintProvider
from fakenrt.podspec import ContainerSpec, PodSpec

TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"


@dataclass
class ScopeOutcome:
    admit: bool = True
    reason: str | None = None
    message: str | None = None
    reports: list[HintReport] = field(default_factory=list)

    def reject_topology(self) -> ScopeOutcome:
        self.admit, self.reason, self.message = (
            False,
            TOPOLOGY_AFFINITY_ERROR,
            TOPOLOGY_AFFINITY_MESSAGE,
        )
        return self

    def reject_unexpected(self, error: AllocationError) -> ScopeOutcome:
        self.admit = False
        if isinstance(error, AdmissionErrorCode):
            self.reason, self.message = error.reason, str(error)
            return self
        self.reason = UNEXPECTED_ADMISSION_ERROR
        self.message = f"Allocate failed due to {error}, which is unexpected"
        return self


def all_containers(pod: PodSpec) -> tuple[ContainerSpec, ...]:
    """Init containers (sidecars included) then app containers, in spec order."""
    return (*pod.init_containers, *pod.containers)


def hint_report(
    container: str | None,
    best: TopologyHint,
    providers: Sequence[HintProvider],
    answers: Sequence[ProviderHints],
) -> HintReport:
    per_resource: dict[str, tuple[ProviderHint, ...]] = {}
    notes: list[str] = []
    for provider, answer in zip(providers, answers, strict=True):
        notes.extend(provider.notes())
        for resource, hints in (answer or {}).items():
            per_resource[resource] = tuple(h.report() for h in normalized(hints))
    return HintReport(
        container=container, best=best.report(), providers=per_resource, notes=tuple(notes)
    )


def allocate_aligned(
    providers: Sequence[HintProvider], pod: PodSpec, container: ContainerSpec, hint: TopologyHint
) -> None:
    """Every provider allocates for the container, in registration order."""
    for provider in providers:
        provider.allocate(pod, container, hint)
