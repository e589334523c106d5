"""Scenario f (tests/e2e/scenarios/restart.py): the controller SIGKILLed and restarted
mid-burst. No CPU or GPU is ever held twice (checked at every poll), and every node's NRT
and every pod's observed annotations converge to what the rebuilt simulator holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter
from tests.e2e.claims import broken_claims
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.driver import drive, topology_for
from tests.e2e.outcome import harness_problems
from tests.e2e.scenarios import F

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]


def test_f_controller_killed_and_restarted_mid_burst(
    deploy: DeployFn, kube: KubeClient, namespace: str, scheduler: Adapter
) -> None:
    d = deploy(topology_for(F, F.default_variant))
    outcome = drive(F, d, kube=kube, namespace=namespace)
    assert harness_problems(outcome) == []
    assert F.check(outcome) == [], "the restart lost or duplicated what the kubelets hold"
    assert broken_claims(scheduler, F, outcome) == []
