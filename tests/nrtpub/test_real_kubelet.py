"""The publisher on a REAL kubelet (marked ``kind``: runs with ``pytest --kind``): the first
real-kubelet worker of the session's cluster (``realnode_cluster``, tests/conftest.py,
shared with the e2e scenarios on real kubelets and the oracle) is configured with oracle
scenarios and
runs their pods; the publisher then reads the real kubelet - its podresources socket, the
machine files the worker's kubelet reads, and the KubeletConfiguration file the kubelet
runs with (kubeadm's, with the scenario's fields merged in) - and its object must equal
the one it computes when the same node is served by the fake podresources server with the
kubelet simulator's allocations for the same pods (which the differential test shows is
the fake controller's object). Pods the scenario does not hold (Kind's own, such as
kindnet, a Guaranteed pod the Memory Manager gives a block) are counted on both sides as
the real kubelet reports them."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import pytest

from exporter.podresources_client import PodResourcesClient
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import node_allocations
from fakenrt.nrtpub.compute import Observation, compute_nrt, holds_exclusive
from fakenrt.nrtpub.inputs import observe
from fakenrt.realnode.scenarios import Scenario, fixed_scenarios, scenario_inputs
from tests.e2e.realnode_deployment import RealNodeCluster
from tests.nrtpub.realnode_files import served_node
from tests.realnode.realkubelet import RealKubeletNode

pytestmark = [pytest.mark.kind, pytest.mark.timeout(3600)]

#: Devices and the Static Memory Manager; hugepages; four NUMA nodes with memory None.
SCENARIOS = ("best-effort", "hugepages-static-memory", "closest-numa-4-nodes")


def _compare(real: RealKubeletNode, scenario: Scenario, work: Path) -> list[str]:
    profile, pods = scenario_inputs(scenario)
    real.configure(profile, scenario.profile_text)
    real.run_pods(scenario.pods)
    config = work / f"{scenario.name}-kubelet-config.yaml"
    config.write_text(real.node_exec("cat", "/var/lib/kubelet/config.yaml"))
    sysfs = real.work_dir / "nodes" / real.node / "sys"
    client = PodResourcesClient(real.socket)
    try:
        seen = observe(client=client, sysfs_root=sysfs, kubelet_config=config)
    finally:
        client.close()
    got = compute_nrt(profile.name, seen)

    state = NodeState.from_profile(profile)
    for pod in pods:
        state.admit(dataclasses.replace(pod, node_name=profile.name))
    scenario_keys = {p.key for p in pods}
    held = [p.key for p in seen.pods if p.key in scenario_keys and holds_exclusive(p)]
    if not held:
        return [f"{scenario.name}: no scenario pod holds anything on the real kubelet"]
    others = tuple(p for p in seen.pods if p.key not in scenario_keys)
    with served_node(profile) as served:
        served.serve(node_allocations(state))
        client = PodResourcesClient(served.socket)
        try:
            simulated = observe(
                client=client, sysfs_root=served.sysfs_root, kubelet_config=served.kubelet_config
            )
        finally:
            client.close()
    want = compute_nrt(
        profile.name,
        Observation(
            machine=simulated.machine,
            config=simulated.config,
            allocatable=simulated.allocatable,
            pods=simulated.pods + others,
        ),
    )
    if got == want:
        return []
    return [f"{scenario.name}:\n got  {_zones(got)}\n want {_zones(want)}"]


def _zones(obj: dict[str, Any]) -> Any:
    return [obj["zones"], obj["attributes"]]


def test_the_publisher_on_a_real_kubelet_agrees_with_the_simulated_node(
    realnode_cluster: RealNodeCluster,
) -> None:
    scenarios = [s for s in fixed_scenarios() if s.name in SCENARIOS]
    assert [s.name for s in scenarios] == list(SCENARIOS)
    realnode_cluster.remove_exporter()  # only the scenario's pods and Kind's on the worker
    real = realnode_cluster.nodes[0]
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nrtpub-kind-", dir="/tmp") as tmp:
        for scenario in scenarios:
            failures += _compare(real, scenario, Path(tmp))
    assert not failures, "\n".join(failures)
