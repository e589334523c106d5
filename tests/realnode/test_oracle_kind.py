"""The oracle on a real kubelet (marked ``kind``: runs with ``pytest --kind``): the fixed
scenarios, the DRA scenarios (claims allocated by the cluster's kube-scheduler, prepared
by the kubelet through the fake DRA kubelet plugin) and 50 seeded random ones on a
real-kubelet Kind worker, each compared pod by pod with the simulator. A disagreement
fails with its reproducer.

The workers are the session's real-kubelet cluster's (``realnode_cluster``,
tests/conftest.py), which the e2e scenarios on real kubelets share when they run in the
same session (``make kind-test``); their exporter DaemonSet is removed first, so the
workers run only the oracle's pods and Kind's. They run the scenarios side by side, each
in a namespace of its own (``oracle_run.run_on``)."""

from __future__ import annotations

import io

import pytest

from fakenrt.realnode.scenarios import PAUSE, dra_scenarios, fixed_scenarios, random_scenarios
from tests.e2e.realnode_deployment import RealNodeCluster
from tests.realnode.oracle_run import run_on

pytestmark = [pytest.mark.kind, pytest.mark.timeout(3600)]

RANDOM = 50
SEED = 1


def test_real_kubelet_agrees_with_the_simulator(realnode_cluster: RealNodeCluster) -> None:
    # the scenarios' pods run the pause image the node carries (nothing can be pulled)
    assert realnode_cluster.pause == PAUSE
    realnode_cluster.remove_exporter()
    out = io.StringIO()
    scenarios = fixed_scenarios() + dra_scenarios() + random_scenarios(RANDOM, SEED)
    report = run_on(realnode_cluster.nodes, scenarios, out=out)
    assert report.scenarios == len(scenarios)
    assert not report.reproducers, out.getvalue() + "\n\n".join(report.reproducers)
    # the point of the DRA scenarios: the kubelet admits pods whose DRA devices sit on
    # another NUMA node than their CPUs, exactly as the simulator says
    assert report.dra_scenarios == len(dra_scenarios())
    assert report.misaligned, out.getvalue()
    # the exporter on the real kubelet sees the DRA devices where the kubelet put them
    assert report.exporter_pods and not report.exporter_differences, out.getvalue()
