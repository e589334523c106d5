"""Scenarios i, j, k (tests/e2e/scenarios/dra.py): GPUs allocated through Dynamic Resource
Allocation by the scheduler under test, prepared by the kubelet without alignment; the
harness holds the exporter's report of misaligned pods to what the kubelets hold.

Only a scheduler that allocates ResourceClaims can be asked these questions
(``Adapter.allocates_claims``); for any other they are not applicable and say so. Run
them with ``--scheduler kube-scheduler`` (or ``kai``, ``scheduler-plugins``, ``volcano``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schedulers.adapter import Adapter
from tests.e2e.outcome import Outcome
from tests.e2e.scenarios import I, J, K, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario]
RunFn = Callable[[Scenario], Outcome]


@pytest.mark.parametrize("scenario", [I, J, K], ids=["i", "j", "k"])
def test_dra_scenario(
    scheduler: Adapter, scenario: Scenario, request: pytest.FixtureRequest
) -> None:
    reason = scenario.not_applicable(scheduler)
    if reason is not None:
        pytest.skip(f"not applicable: {reason}")
    if request.config.getoption("--kind"):
        pytest.skip(
            "local control plane only: the harness reads the exporters' metrics there "
            "(docs/e2e.md, DRA scenarios)"
        )
    run: RunFn = request.getfixturevalue("run_scenario")
    outcome = run(scenario)  # the harness's invariants hold, the exporter's report included
    # ... and that report was read: the exporters' metric and Events name the misaligned pods
    assert outcome.misaligned_metric == outcome.misaligned_events == frozenset(outcome.misaligned)
