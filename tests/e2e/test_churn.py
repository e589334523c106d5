"""Scenario h: churn - pods arriving and finishing under NRT lag
(tests/e2e/scenarios/churn.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter
from tests.e2e.claims import broken_claims
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.outcome import figures, harness_problems
from tests.e2e.scenarios import H

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]


def test_h_churn_under_nrt_lag(
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    scheduler: Adapter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = deploy(topology_for(H, H.default_variant))
    outcome = drive(H, d, kube=kube, namespace=namespace)
    result = figures(outcome.workload_pods())
    with capsys.disabled():
        print(f"\n[e2e h] {result.line(scheduler.id)} settled in {outcome.duration_s} s")
    assert harness_problems(outcome) == []
    assert broken_claims(scheduler, H, outcome) == []
