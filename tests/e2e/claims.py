"""A scheduler's claims (schedulers/adapter.py :class:`~schedulers.adapter.Claim`) checked
on a scenario's outcome. Pure.

Each scenario's check (what a correct NUMA-aware scheduler achieves) belongs to one claim:
``aligned`` for the scenarios without NRT lag (a, b, c, e, g, i, j, k), ``lag-safe`` for those
where NRT falls behind (d, h under lag, f while the kubelets are down).
``reports-unschedulable`` covers every pod left unbound; ``exact-prediction`` every
prediction the scheduler writes where nothing finishes meanwhile (a, b, c, e, g) and it
makes the scenario's claim. What an adapter claims is asserted (the pytest suite, the
scorecard's default variants); the rest are findings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fakenrt.podspec import PodSpecError, effective_requests, pod_from_manifest
from fakenrt.profiles.names import extended_resource_problem
from fakenrt.profiles.resources import node_capacity
from schedulers.adapter import Adapter, Claim
from tests.e2e.outcome import Outcome, node_of, prediction_agreement, ran, scheduler_messages
from tests.e2e.outcome import scheduler_reports as reports_of
from tests.e2e.scenarios.model import Scenario


def unreported(outcome: Outcome, reason: str | None) -> list[str]:
    """Workload pods never bound about which the scheduler said nothing (with ``reason``:
    nothing matching it, a regular expression, searched)."""
    pattern = re.compile(reason or "")
    reports = reports_of(outcome.events, outcome.report_reasons)
    problems = []
    for pod in outcome.workload_pods():
        if node_of(pod):
            continue
        messages = scheduler_messages(pod, reports)
        if not any(pattern.search(m) for m in messages):
            name = pod["metadata"]["name"]
            said = f"; it said {messages[-1]!r}" if messages else ""
            wanted = f" matching {reason!r}" if reason else ""
            problems.append(f"{name}: Pending without a report{wanted}{said}")
    return problems


def _device_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's effective request of each extended resource (the kubelet's pod-level rule,
    :func:`fakenrt.podspec.effective_requests`); none for a pod the simulator cannot read."""
    try:
        spec = pod_from_manifest(pod)
    except PodSpecError:
        return {}
    return {
        name: int(amount)
        for name, amount in effective_requests(spec).items()
        if extended_resource_problem(name) is None
    }


def without_devices(outcome: Outcome) -> list[str]:
    """Workload pods that ran on a node that has none of a device resource they ask for.

    The kubelet admits such a pod: an extended resource the node does not have is dropped
    before the fit check (``pkg/kubelet/lifecycle/predicate.go``,
    ``removeMissingExtendedResources``) and the device manager allocates only resources a
    plugin registered (``pkg/kubelet/cm/devicemanager/manager.go``). So it runs without
    the device and nothing reports it; only a scheduler that counted the node's capacity
    wrongly sends it there."""
    nodes = {p.name: node_capacity(p) for p in outcome.profiles}
    problems = []
    for pod in outcome.workload_pods():
        node = node_of(pod)
        if node not in nodes or not ran(pod):
            continue
        for resource, asked in sorted(_device_requests(pod).items()):
            if nodes[node].get(resource, 0) <= 0:
                problems.append(
                    f"{pod['metadata']['name']}: runs on {node} without {resource}: it asks "
                    f"for {asked}, the node has none (the kubelet admits it without the device)"
                )
    return problems


#: The findings no claim covers: predictions a pod finishing (or a kubelet restarting)
#: overtook between the scheduler's decision and the kubelet's admission.
UNCLAIMABLE = "unclaimable"


def claim_problems(
    scheduler: Adapter, scenario: Scenario, outcome: Outcome
) -> dict[str, list[str]]:
    """Claim (its value) -> what in ``outcome`` contradicts it, for every claim whether
    ``scheduler`` makes it or not, and :data:`UNCLAIMABLE` -> what no claim covers."""
    problems: dict[str, list[str]] = {c.value: [] for c in Claim}
    problems[UNCLAIMABLE] = []
    found = scenario.check(outcome)
    if not outcome.settled:
        found = [*found, f"did not settle in {scenario.settle_timeout_s:.0f} s"]
    problems[scenario.claim.value].extend(found)
    problems[scenario.claim.value].extend(
        f"{name}: deleted by someone else than the harness" for name in sorted(outcome.deleted)
    )
    problems[scenario.claim.value].extend(without_devices(outcome))
    reason = scheduler.unschedulable.reason if scenario.numa_reason else None
    problems[Claim.REPORTS_UNSCHEDULABLE.value].extend(unreported(outcome, reason))
    # A prediction is held to be exact where nothing changes under the scheduler's feet
    # and it claims to handle the scenario; a mode trusting a stale NRT under lag gets it
    # wrong as part of that; under churn nobody can promise it.
    if not scenario.predictable:
        target = UNCLAIMABLE
    elif scenario.claim in scheduler.claims:
        target = Claim.EXACT_PREDICTION.value
    else:
        target = scenario.claim.value
    problems[target].extend(prediction_agreement(outcome).mismatches)
    return problems


def broken_claims(scheduler: Adapter, scenario: Scenario, outcome: Outcome) -> list[str]:
    """What contradicts the claims ``scheduler`` makes (empty: none)."""
    made = {c.value for c in scheduler.claims}
    return [
        f"{claim}: {problem}"
        for claim, found in claim_problems(scheduler, scenario, outcome).items()
        if claim in made
        for problem in found
    ]
