"""A scheduler's claims (schedulers/adapter.py :class:`~schedulers.adapter.Claim`) checked
on a scenario's outcome. Pure.

Each scenario's check (what a correct NUMA-aware scheduler achieves) belongs to one claim:
``aligned`` for the scenarios without NRT lag (a, b, c, e, f, g), ``lag-safe`` for those
under lag (d, h). ``reports-unschedulable`` covers every pod left unbound;
``exact-prediction`` every prediction the scheduler writes in a scenario whose claim it
makes. What an adapter claims is asserted (the pytest suite, the scorecard's default
variants); the rest are findings.
"""

from __future__ import annotations

import re

from schedulers.adapter import Adapter, Claim
from tests.e2e.outcome import Outcome, node_of, prediction_agreement, scheduler_messages
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


def claim_problems(
    scheduler: Adapter, scenario: Scenario, outcome: Outcome
) -> dict[Claim, list[str]]:
    """Claim -> what in ``outcome`` contradicts it (every claim, whether ``scheduler``
    makes it or not; empty lists where nothing does)."""
    problems: dict[Claim, list[str]] = {c: [] for c in Claim}
    found = scenario.check(outcome)
    if not outcome.settled:
        found = [*found, f"did not settle in {scenario.settle_timeout_s:.0f} s"]
    problems[scenario.claim].extend(found)
    reason = scheduler.unschedulable.reason if scenario.numa_reason else None
    problems[Claim.REPORTS_UNSCHEDULABLE].extend(unreported(outcome, reason))
    # A prediction is held to be exact where the scheduler claims to handle the scenario;
    # elsewhere (a mode trusting a stale NRT, under lag) a wrong one is part of that.
    exact = scenario.claim in scheduler.claims
    target = Claim.EXACT_PREDICTION if exact else scenario.claim
    problems[target].extend(prediction_agreement(outcome).mismatches)
    return problems


def broken_claims(scheduler: Adapter, scenario: Scenario, outcome: Outcome) -> list[str]:
    """What contradicts the claims ``scheduler`` makes (empty: none)."""
    return [
        f"{claim.value}: {problem}"
        for claim, found in claim_problems(scheduler, scenario, outcome).items()
        if claim in scheduler.claims
        for problem in found
    ]
