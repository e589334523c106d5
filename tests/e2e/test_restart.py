"""Scenario f: the controller SIGKILLed and restarted mid-burst. No CPU or GPU is ever
held twice, and every node's NRT and every pod's observed annotations converge to what
the rebuilt simulator holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS
from exporter.kubeclient import KubeClient
from tests.e2e.cluster import (
    create,
    double_allocations,
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
    node_of,
    phase,
)
from tests.e2e.topologies import two_zone_node

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]

#: (name, cores, GPUs, run duration): long-running pods and short ones that finish
#: around the kill.
FIRST = [(f"a{i}", 1 + i % 2, i % 2, None if i % 3 else "2s") for i in range(6)]
SECOND = [(f"b{i}", 1 + i % 2, (i + 1) % 2, None if i % 3 else "2s") for i in range(6)]


def test_f_controller_killed_and_restarted_mid_burst(
    deploy: DeployFn, kube: KubeClient, namespace: str
) -> None:
    nodes = tuple(two_zone_node(policy="single-numa-node", gpus=2) for _ in range(2))
    d = deploy(Topology(nodes=nodes, controller_args=("--start-delay", "500ms")))
    profiles = {p.name: p for p in d.profiles}

    def submit(batch: list[tuple[str, int, int, str | None]]) -> None:
        for name, cores, gpus, run in batch:
            pod = workload_pod(
                name, namespace=namespace, deployment=d, cpu=str(cores), gpus=gpus, run_duration=run
            )
            create(kube, pod)

    submit(FIRST)
    wait_for(
        lambda: sum(1 for p in pods(kube, namespace).values() if node_of(p)) >= 3,
        deployment=d,
        timeout=60,
        what="three pods bound",
    )
    d.kill_controller()
    submit(SECOND)  # bound (or not) while no kubelet simulator runs
    d.restart_controller()

    everyone = {n for n, *_ in FIRST + SECOND}

    seen_double: list[str] = []

    def converged() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        held = d.allocations(listed.values())
        # checked at every poll, not only once things settle
        seen_double.extend(double_allocations(listed.values(), held))
        if set(listed) != everyone:
            return None
        # every pod has reached its end or is running (a pod nothing could place stays
        # Pending unbound), and what the simulator holds shows in NRT and annotations
        if any(phase(p) == "Pending" and node_of(p) for p in listed.values()):
            return None
        if any(
            phase(p) == "Running" and OBSERVED_MEMORY_GROUPS not in annotations_of(p)
            for p in listed.values()
        ):
            return None
        if observation_mismatches(listed.values(), profiles, held):
            return None
        if not all(nrt_converged(kube, p, listed.values(), held) for p in d.profiles):
            return None
        return listed

    listed = wait_for(converged, deployment=d, timeout=120, what="NRT and annotations converged")
    assert seen_double == []
    running = [p for p in listed.values() if phase(p) == "Running"]
    assert running, "nothing survived the restart"
    held = d.allocations(listed.values())
    assert {p["metadata"]["name"] for p in holding(listed.values(), held)} == {
        p["metadata"]["name"] for p in running
    }
