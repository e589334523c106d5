"""Either exporter: this project's numa-exporter and KAI's Go numa-placement-exporter on the
same fake nodes, the same pods (bound without a scheduler). What the kubelet allocated is
known (the simulator's record); each exporter's observed annotations are compared with it.
Ours must agree entirely (a harness invariant); KAI's placements must agree too (the
harness serves it the podresources and sysfs a kubelet would), its other differences are
printed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from schedulers.kai import BUILD as KAI_BUILD
from schedulers.reference import RECONSTRUCTION
from tests.e2e.cluster import create, pods, wait_for, workload_pod
from tests.e2e.deployment import KAI_EXPORTER, NUMA_EXPORTER, Deployment, Topology
from tests.e2e.invariants import observation_mismatches
from tests.e2e.outcome import annotations_of, phase
from tests.e2e.topologies import two_zone_node

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]
#: name -> (cpu, memory, GPUs, Guaranteed, node): one zone, both zones (a Memory Manager
#: group over both, alone on its node), GPUs only, nothing exclusive.
SHAPES = {
    "one-zone": ("2", "1Gi", 1, True, 0),
    "gpu-only": ("500m", "1Gi", 1, False, 0),
    "burstable": ("1", "1Gi", 0, False, 0),
    "two-zones": ("12", "12Gi", 6, True, 1),
}


@pytest.mark.parametrize("scheduler", [RECONSTRUCTION], ids=["bound-without-scheduler"])
@pytest.mark.parametrize(
    "exporter", [NUMA_EXPORTER, pytest.param(KAI_EXPORTER, marks=pytest.mark.build(KAI_BUILD))]
)
def test_either_exporter_observes_what_the_kubelet_allocated(
    *,
    deploy: DeployFn,
    kube: KubeClient,
    namespace: str,
    exporter: str,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    in_cluster = request.config.getoption("--kind") or request.config.getoption("--real-kubelet")
    if exporter == KAI_EXPORTER and in_cluster:
        # KAI's exporter runs beside the fake nodes as a local process; in-cluster, the
        # nodes run the production exporter (docs/e2e.md)
        pytest.skip("KAI's exporter runs on the local control plane only")
    nodes = (
        two_zone_node(policy="single-numa-node", gpus=2),
        two_zone_node(policy="restricted", cores=8, gpus=4),
    )
    d = deploy(replace(Topology(nodes=nodes), exporter=exporter))
    for name, (cpu, memory, gpus, guaranteed, on) in SHAPES.items():
        pod = workload_pod(
            name, namespace=namespace, deployment=d, cpu=cpu, memory=memory, gpus=gpus,
            guaranteed=guaranteed, node=d.node_name(nodes[on]["name"]),
        )  # fmt: skip
        create(kube, pod)

    def observed() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        running = all(phase(listed[n]) == "Running" for n in SHAPES)
        exclusive = ("one-zone", "two-zones", "gpu-only")
        seen = all(OBSERVED_PLACEMENT in annotations_of(listed[n]) for n in exclusive)
        # Ours writes the groups of every Running pod ("[]" when none); KAI's writes none.
        complete = exporter == KAI_EXPORTER or all(
            OBSERVED_MEMORY_GROUPS in annotations_of(listed[n]) for n in SHAPES
        )
        return listed if running and seen and complete else None

    listed = wait_for(observed, deployment=d, timeout=90, what="every exclusive pod observed")
    held = d.allocations(listed.values())
    mismatches = observation_mismatches(listed.values(), {p.name: p for p in d.profiles}, held)
    with capsys.disabled():
        print(f"\n[exporters] {exporter}:")
        for name in SHAPES:
            got = annotations_of(listed[name])
            print(
                f"  {name}: placement={got.get(OBSERVED_PLACEMENT)} "
                f"groups={got.get(OBSERVED_MEMORY_GROUPS)}"
            )
        for problem in mismatches:
            print(f"  differs from the allocation: {problem}")
    if exporter == KAI_EXPORTER:
        # Its placements are the kubelet's (the harness serves it what a kubelet would);
        # it writes no memory-groups annotation at this commit (docs/schedulers/kai.md).
        assert [m for m in mismatches if "observed groups None" not in m] == []
    else:
        assert mismatches == []
