"""Scenario g: a fleet fragmented by pods bound without any scheduler, then GPU pods that
fit only where the fragmentation allows (tests/e2e/scenarios/fragmented.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter
from tests.e2e.claims import broken_claims
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.outcome import figures, harness_problems
from tests.e2e.scenarios import G

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]


def test_g_fragmented_fleet(
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    scheduler: Adapter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = deploy(topology_for(G, G.default_variant))
    outcome = drive(G, d, kube=kube, namespace=namespace)
    result = figures(outcome.workload_pods())
    with capsys.disabled():
        print(f"\n[e2e g] {result.line(scheduler.id)} settled in {outcome.duration_s} s")
    assert harness_problems(outcome) == []
    assert broken_claims(scheduler, G, outcome) == []
