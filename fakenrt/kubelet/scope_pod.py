"""Scope ``pod``: one merge over the pod's effective requests, then every container is
allocated inside that one hint (``scope_pod.go``)."""

from __future__ import annotations

from collections.abc import Sequence

from fakenrt.kubelet.policy import Policy
from fakenrt.kubelet.provider import AllocationError, HintProvider
from fakenrt.kubelet.scope import ScopeOutcome, all_containers, allocate_aligned, hint_report
from fakenrt.podspec import PodSpec

NAME = "pod"


def admit(pod: PodSpec, policy: Policy, providers: Sequence[HintProvider]) -> ScopeOutcome:
    outcome = ScopeOutcome()
    answers = [p.pod_hints(pod) for p in providers]
    best, ok = policy.merge(answers)
    outcome.reports.append(hint_report(None, best, providers, answers))
    if not ok:
        return outcome.reject_topology()
    for container in all_containers(pod):
        try:
            allocate_aligned(providers, pod, container, best)
        except AllocationError as exc:
            return outcome.reject_unexpected(exc)
    return outcome
