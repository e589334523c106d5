"""Small helpers the scenarios' checks share: what the kubelet gave a pod, per zone. Pure.

The checks read the kubelet's allocation (the simulated kubelet's record, or a real
kubelet's podresources ``List``), never the exporter's annotation: a scheduler is judged
by where its pods really run, with or without the exporter.
"""

from __future__ import annotations

from collections.abc import Iterable

from tests.e2e.allocations import zone_amounts
from tests.e2e.outcome import Outcome, node_of, phase, ran, rejected


def zones_of(outcome: Outcome, pod: str) -> dict[int, dict[str, int]] | None:
    """Zone -> what the kubelet gave ``pod`` there (exclusive CPUs, devices, single-NUMA
    memory), or None when it holds no allocation."""
    listed = outcome.pod(pod)
    allocation = outcome.allocations.get(pod)
    if listed is None or allocation is None:
        return None
    profile = outcome.profile_of_node().get(node_of(listed) or "")
    if profile is None:
        return None
    per_zone, _ = zone_amounts(profile, allocation)
    return per_zone


def groups_of(outcome: Outcome, pod: str) -> dict[frozenset[int], dict[str, int]] | None:
    """Memory Manager group (NUMA-node set) -> the memory the kubelet gave ``pod`` there."""
    listed = outcome.pod(pod)
    allocation = outcome.allocations.get(pod)
    if listed is None or allocation is None:
        return None
    profile = outcome.profile_of_node().get(node_of(listed) or "")
    if profile is None:
        return None
    _, groups = zone_amounts(profile, allocation)
    return groups


def none_rejected(outcome: Outcome) -> list[str]:
    """Workload pods the kubelet refused with TopologyAffinityError."""
    return [f"{n}: TopologyAffinityError" for n in outcome.workload if _rejected(outcome, n)]


def _rejected(outcome: Outcome, name: str) -> bool:
    pod = outcome.pod(name)
    return pod is not None and rejected(pod)


def all_ran(outcome: Outcome, names: Iterable[str]) -> list[str]:
    """Pods of ``names`` that never ran - those the kubelet rejected left out
    (:func:`none_rejected` names them)."""
    problems = []
    for name in names:
        pod = outcome.pod(name)
        if pod is None:
            problems.append(f"{name}: gone")
        elif not ran(pod) and not rejected(pod):
            problems.append(f"{name}: never ran ({phase(pod)}, node {node_of(pod)})")
    return problems


def never_bound(outcome: Outcome, names: Iterable[str]) -> list[str]:
    problems = []
    for name in names:
        pod = outcome.pod(name)
        if pod is not None and node_of(pod) and not rejected(pod):
            problems.append(f"{name}: bound to {node_of(pod)} ({phase(pod)}), fits no zone")
    return problems
