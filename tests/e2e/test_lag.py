"""Scenario d (tests/e2e/scenarios/lag.py): NRT lag of 5 s +- 3 s on a workload where the
lag matters. Every mode of each scheduler runs it: a lag-safe one must see no
TopologyAffinityError and run every pod; for a mode known to trust a stale NRT the harness
must catch it (TopologyAffinityErrors > 0)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter
from tests.e2e.claims import broken_claims
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.outcome import Figures, figures, harness_problems
from tests.e2e.scenarios import D

pytestmark = [pytest.mark.controlplane, pytest.mark.every_mode]
DeployFn = Callable[[Topology], Deployment]


def test_d_nrt_lag_on_unevenly_used_nodes(
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    scheduler: Adapter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = deploy(topology_for(D, D.default_variant))
    outcome = drive(D, d, kube=kube, namespace=namespace)
    result: Figures = figures(outcome.workload_pods())
    with capsys.disabled():
        print(f"\n[e2e d] {result.line(scheduler.id)} settled in {outcome.duration_s} s")
    assert harness_problems(outcome) == []
    assert result.submitted == len(D.workload)
    assert result.bound == result.submitted and result.pending == 0
    assert broken_claims(scheduler, D, outcome) == []
    if scheduler.trusts_stale_nrt:
        assert result.topology_affinity_errors > 0, "the harness did not catch the stale NRT"
