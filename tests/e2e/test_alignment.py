"""Scenarios a, b, c and e: where the scheduler under test places NUMA-aligned pods, and
that what the exporter observes is what the simulated kubelet allocated."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from fakenrt.profiles import NodeProfile
from tests.e2e.cluster import (
    create,
    observation_mismatches,
    pods,
    prediction_mismatches,
    wait_for,
    wait_unschedulable,
    workload_pod,
)
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.outcome import (
    annotations_of,
    node_of,
    phase,
    rejected,
)
from tests.e2e.topologies import lopsided_gpu_node, two_zone_node

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]


def _observed_zones(pod: dict[str, Any]) -> dict[str, dict[str, str]]:
    raw = annotations_of(pod).get(OBSERVED_PLACEMENT, "[]")
    return {entry["zone"]: entry["amount"] for entry in json.loads(raw)}


def _settled(kube: KubeClient, deployment: Deployment, namespace: str, running: set[str]) -> None:
    """Until ``running`` pods are Running and observed, then check scenario e on every pod."""

    def probe() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        ok = all(
            phase(listed[n]) == "Running" and OBSERVED_MEMORY_GROUPS in annotations_of(listed[n])
            for n in running
        )
        return (
            listed
            if ok
            and not observation_mismatches(
                listed.values(), _by_name(deployment), deployment.allocations(listed.values())
            )
            else None
        )

    listed = wait_for(probe, deployment=deployment, timeout=90, what=f"{sorted(running)} observed")
    assert prediction_mismatches(listed.values()) == []


def _by_name(deployment: Deployment) -> dict[str, NodeProfile]:
    return {p.name: p for p in deployment.profiles}


def test_a_gpu_and_cpu_pods_run_only_where_alignable(
    deploy: DeployFn, kube: KubeClient, namespace: str
) -> None:
    """Two single-numa-node nodes with 4 GPUs each: "split" has 2 per zone, "lopsided" all 4
    in zone 0. Every pod runs inside one zone; a pod of 3 GPUs runs only on "lopsided"
    although both nodes have the GPUs; a pod of 5 CPUs (4 per zone) fits no zone and stays
    Pending unbound - never sent to a kubelet that would refuse it."""
    split = two_zone_node(policy="single-numa-node", gpus=2)
    lopsided = lopsided_gpu_node(policy="single-numa-node")
    d = deploy(Topology(nodes=(split, lopsided)))

    def submit(name: str, cpu: str, gpus: int) -> None:
        create(kube, workload_pod(name, namespace=namespace, deployment=d, cpu=cpu, gpus=gpus))

    submit("three-gpus", "1", 3)
    # Every node could hold it as a whole (so the reason is the plugin's, not
    # "Insufficient cpu"); no zone can.
    submit("five-cpus", "5", 0)
    wait_unschedulable(kube, d, namespace, "five-cpus")
    submit("two-gpus", "3", 2)
    submit("one-gpu", "1", 1)
    running = {"three-gpus": (1, 3), "two-gpus": (3, 2), "one-gpu": (1, 1)}
    _settled(kube, d, namespace, set(running))
    listed = pods(kube, namespace)
    assert node_of(listed["three-gpus"]) == d.node_name(lopsided["name"])
    assert node_of(listed["two-gpus"]) == d.node_name(split["name"])  # lopsided has 1 GPU left
    for name, (cpu, gpus) in running.items():
        zones = _observed_zones(listed[name])
        assert len(zones) == 1, (name, zones)
        (amount,) = zones.values()
        assert amount["nvidia.com/gpu"] == str(gpus) and amount["cpu"] == str(cpu)
    assert node_of(listed["five-cpus"]) is None and phase(listed["five-cpus"]) == "Pending"
    assert not any(rejected(p) for p in listed.values())


def test_b_three_three_two_on_two_four_core_zones(
    deploy: DeployFn, kube: KubeClient, namespace: str
) -> None:
    """Two 4-core zones, Guaranteed pods of 3, 3 and 2 cores: whole-node accounting would
    admit all three (8 cores), the zones hold only two. Exactly two run; the third stays
    Pending with the plugin's reason - never bound, never rejected by the kubelet."""
    d = deploy(Topology(nodes=(two_zone_node(policy="single-numa-node"),)))
    for name, cpu in (("three-a", "3"), ("three-b", "3"), ("two", "2")):
        create(kube, workload_pod(name, namespace=namespace, deployment=d, cpu=cpu))

    def two_running() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        return listed if sum(phase(p) == "Running" for p in listed.values()) == 2 else None

    listed = wait_for(two_running, deployment=d, timeout=60, what="two pods Running")
    (waiting,) = [n for n, p in listed.items() if phase(p) != "Running"]
    message = wait_unschedulable(kube, d, namespace, waiting)
    _settled(kube, d, namespace, {n for n in listed if n != waiting})
    listed = pods(kube, namespace)
    assert node_of(listed[waiting]) is None, message
    assert phase(listed[waiting]) == "Pending"
    assert not any(rejected(p) for p in listed.values())
    assert sum(phase(p) == "Running" for p in listed.values()) == 2


def test_c_full_node_gpu_pods_span_both_zones_on_restricted_nodes(
    deploy: DeployFn, kube: KubeClient, namespace: str
) -> None:
    """restricted, two zones of 8 cores, 8Gi and 4 GPUs: a pod of 8 GPUs, 12 cores and
    12Gi needs both zones for every resource, which restricted admits (every provider's
    narrowest width is the same mask). One per node runs, on both zones. Its memory is a
    Memory Manager group over both zones: the predicted annotations must equal the
    observed ones for it too (per-zone memory none, the 12Gi in the groups)."""
    nodes = tuple(two_zone_node(policy="restricted", cores=8, gpus=4) for _ in range(2))
    d = deploy(Topology(nodes=nodes))
    for i in range(2):
        create(
            kube,
            workload_pod(
                f"full-{i}", namespace=namespace, deployment=d, cpu="12", memory="12Gi", gpus=8
            ),
        )
    _settled(kube, d, namespace, {"full-0", "full-1"})
    listed = pods(kube, namespace)
    assert {node_of(listed["full-0"]), node_of(listed["full-1"])} == {
        d.node_name(n["name"]) for n in nodes
    }
    for name in ("full-0", "full-1"):
        zones = _observed_zones(listed[name])
        assert sorted(zones) == ["node-0", "node-1"], (name, zones)
        assert not any("memory" in a for a in zones.values())
        assert json.loads(annotations_of(listed[name])[OBSERVED_MEMORY_GROUPS]) == [
            {"memoryNodes": ["node-0", "node-1"], "amount": {"memory": str(12 << 30)}}
        ]
        assert [a["nvidia.com/gpu"] for a in zones.values()] == ["4", "4"]
        assert sum(int(a["cpu"]) for a in zones.values()) == 12
    assert not any(rejected(p) for p in listed.values())


def test_e_observed_equals_allocated_and_predicted_equals_observed(
    deploy: DeployFn, kube: KubeClient, namespace: str
) -> None:
    """A mixed workload on a single-numa-node and a restricted node: every Running pod's
    observed annotations equal the simulator's allocation (CPUs, GPUs, memory, nothing for
    a Burstable pod), and where the scheduler wrote a predicted placement it equals the
    observed one."""
    nodes = (
        two_zone_node(policy="single-numa-node", gpus=2),
        two_zone_node(policy="restricted", gpus=2),
    )
    d = deploy(Topology(nodes=nodes))
    shapes = {
        "gpu-cpu": ("2", 1, True),
        "gpu-only": ("500m", 1, False),
        "cpu-mem": ("2", 0, True),
        "burstable": ("1", 0, False),
        "one-core": ("1", 0, True),
        "two-gpu": ("1", 2, True),
    }
    for name, (cpu, gpus, guaranteed) in shapes.items():
        create(
            kube,
            workload_pod(
                name, namespace=namespace, deployment=d, cpu=cpu, gpus=gpus, guaranteed=guaranteed,
                memory="1Gi",
            ),
        )  # fmt: skip
    _settled(kube, d, namespace, set(shapes))
    listed = pods(kube, namespace)
    assert OBSERVED_PLACEMENT not in annotations_of(listed["burstable"])
    assert annotations_of(listed["burstable"])[OBSERVED_MEMORY_GROUPS] == "[]"
    assert _observed_zones(listed["gpu-only"]) and all(
        set(a) == {"nvidia.com/gpu"} for a in _observed_zones(listed["gpu-only"]).values()
    )
    assert all(phase(p) == "Running" for p in listed.values())
    assert not any(rejected(p) for p in listed.values())
