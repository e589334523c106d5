"""Scope ``container``: one merge per container (``scope_container.go``).

Containers are handled in spec order, init containers first; each container's hints are
gathered after the previous container's allocation, and the first container that cannot
be admitted rejects the whole pod.
"""

from __future__ import annotations

from collections.abc import Sequence

from fakenrt.kubelet.policy import Policy
from fakenrt.kubelet.provider import AllocationError, HintProvider
from fakenrt.kubelet.scope import ScopeOutcome, all_containers, allocate_aligned, hint_report
from fakenrt.podspec import PodSpec

NAME = "container"


def admit(pod: PodSpec, policy: Policy, providers: Sequence[HintProvider]) -> ScopeOutcome:
    outcome = ScopeOutcome()
    for container in all_containers(pod):
        answers = [p.container_hints(pod, container) for p in providers]
        best, ok = policy.merge(answers)
        outcome.reports.append(hint_report(container.name, best, providers, answers))
        if not ok:
            return outcome.reject_topology()
        try:
            allocate_aligned(providers, pod, container, best)
        except AllocationError as exc:
            return outcome.reject_unexpected(exc)
    return outcome
