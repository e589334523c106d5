"""Scenario d: NRT lag of 5 s +- 3 s on a workload where the lag matters.

Two single-numa-node nodes of two 4-core zones, each with a long-running 3-core pod bound
to it directly (zone use uneven: 1 core free in one zone, 4 in the other). Then pods of 3,
2 and 1 cores arrive one at a time and finish after a few seconds, so pods both arrive and
finish while the nodes' NRT still shows an older state. A 3-core pod landing in the free
zone leaves 1 core in each zone: whole-node accounting still admits a 2-core pod, and an
NRT that has not caught up still shows the zone free - a scheduler trusting it sends the
pod to a kubelet that rejects it (TopologyAffinityError). Reconstructing zone use from
observed (else predicted) placements never does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from exporter.annotations import OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from schedulers.adapter import Adapter
from tests.e2e.cluster import (
    create,
    holding,
    nrt_converged,
    observation_mismatches,
    pods,
    wait_for,
    workload_pod,
)
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.outcome import (
    annotations_of,
    figures,
    phase,
)
from tests.e2e.topologies import two_zone_node

pytestmark = [pytest.mark.controlplane, pytest.mark.every_mode]
DeployFn = Callable[[Topology], Deployment]

#: 5 s +- 3 s: every change of a node shows in its NRT 2 s + U(0, 6 s) after it happened.
LAG = {"delay": "2s", "jitter": "6s"}
#: Arrivals: core counts, one pod every ARRIVAL_GAP_S seconds, each running RUN_DURATION.
ARRIVALS = (3, 2, 1, 2, 3, 2, 2, 1, 3, 2, 2, 1, 3, 2, 2, 2)
ARRIVAL_GAP_S = 0.6
RUN_DURATION = "4s"


def test_d_nrt_lag_on_unevenly_used_nodes(
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    scheduler: Adapter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = tuple(two_zone_node(policy="single-numa-node", nrt=LAG) for _ in range(2))
    d = deploy(Topology(nodes=nodes, controller_args=("--seed", "7")))
    anchors = [f"anchor-{i}" for i in range(len(nodes))]
    for name, node in zip(anchors, nodes, strict=True):
        create(
            kube,
            workload_pod(
                name, namespace=namespace, deployment=d, cpu="3", node=d.node_name(node["name"])
            ),
        )

    # The same start for every scheduler: the anchors observed and in the NRT.
    def anchored() -> bool:
        listed = pods(kube, namespace)
        held = d.allocations(listed.values())
        return all(
            phase(listed[a]) == "Running" and OBSERVED_PLACEMENT in annotations_of(listed[a])
            for a in anchors
        ) and all(nrt_converged(kube, p, listed.values(), held) for p in d.profiles)

    wait_for(anchored, deployment=d, timeout=60, what="anchors observed and published")

    workload = [f"w{i:02d}-{cores}c" for i, cores in enumerate(ARRIVALS)]
    peak_pending = 0
    for name, cores in zip(workload, ARRIVALS, strict=True):
        peak_pending = max(peak_pending, figures(pods(kube, namespace).values()).pending)
        create(
            kube,
            workload_pod(
                name,
                namespace=namespace,
                deployment=d,
                cpu=str(cores),
                run_duration=RUN_DURATION,
            ),
        )
        time.sleep(ARRIVAL_GAP_S)  # pacing the arrivals, not waiting for an outcome

    def finished() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        done = all(phase(listed[n]) in ("Succeeded", "Failed") for n in workload)
        return listed if done else None

    listed = wait_for(finished, deployment=d, timeout=240, what="every workload pod finished")
    result = figures(listed[n] for n in workload)
    with capsys.disabled():
        print(f"\n[e2e d] {result.line(scheduler.id)} (Pending at most {peak_pending} meanwhile)")
    assert result.submitted == len(ARRIVALS)
    assert result.bound == result.submitted and result.pending == 0
    held = d.allocations(listed.values())
    assert observation_mismatches(listed.values(), {p.name: p for p in d.profiles}, held) == []
    assert [p["metadata"]["name"] for p in holding(listed.values(), held)] == anchors
    if scheduler.trusts_stale_nrt:
        assert result.topology_affinity_errors > 0, "the harness did not catch the stale NRT"
    else:
        assert result.topology_affinity_errors == 0
        assert result.ran == result.submitted
