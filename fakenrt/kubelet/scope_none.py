"""Policy ``none``: no hints are gathered; every provider allocates every container with
the empty affinity ``{nil, not preferred}`` (``scope_none.go``, ``admitPolicyNone``)."""

from __future__ import annotations

from collections.abc import Sequence

from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.policy import Policy
from fakenrt.kubelet.provider import AllocationError, HintProvider
from fakenrt.kubelet.scope import ScopeOutcome, all_containers, allocate_aligned
from fakenrt.podspec import PodSpec

NAME = "none"
NO_AFFINITY = TopologyHint(None, False)


def admit(pod: PodSpec, policy: Policy, providers: Sequence[HintProvider]) -> ScopeOutcome:
    outcome = ScopeOutcome()
    for container in all_containers(pod):
        try:
            allocate_aligned(providers, pod, container, NO_AFFINITY)
        except AllocationError as exc:
            return outcome.reject_unexpected(exc)
    return outcome
