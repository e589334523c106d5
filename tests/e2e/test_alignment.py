"""Scenarios a, b, c and e: where the scheduler under test places NUMA-aligned pods, and
that what the exporter observes is what the simulated kubelet allocated.

Where a pod runs, whether it runs and whether the scheduler says why it cannot place one
are the scheduler's properties (its adapter's claims are asserted, the rest reported as
findings); that every rejection counted is the kubelet's, that nothing is held twice and
that observed equals allocated are the harness's, asserted for every scheduler."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.kubeclient import KubeClient
from fakenrt.profiles import NodeProfile
from schedulers.adapter import Claim
from tests.e2e.cluster import (
    annotations_of,
    create,
    node_of,
    observation_mismatches,
    phase,
    pods,
    rejected,
    reported_unschedulable,
    wait_until,
    workload_pod,
)
from tests.e2e.deployment import Deployment, Topology
from tests.e2e.findings import Findings
from tests.e2e.topologies import lopsided_gpu_node, two_zone_node

pytestmark = pytest.mark.controlplane
DeployFn = Callable[[Topology], Deployment]
FindingsFn = Callable[[Deployment, str], Findings]
#: How long the pods of a scenario may take to settle.
SETTLE_S = 90


def _observed_zones(pod: dict[str, Any]) -> dict[str, dict[str, str]]:
    raw = annotations_of(pod).get(OBSERVED_PLACEMENT, "[]")
    return {entry["zone"]: entry["amount"] for entry in json.loads(raw)}


def _settled(
    kube: KubeClient, f: Findings, namespace: str, names: set[str]
) -> dict[str, dict[str, Any]]:
    """Until every pod of ``names`` has an outcome - Running and observed as allocated,
    finished, or Pending unbound and reported unschedulable - then check the harness
    invariants. A scheduler that leaves a pod Pending without a word is a finding
    (``reports-unschedulable``) after the wait, unless it claims otherwise."""
    d = f.deployment

    def outcome(listed: dict[str, dict[str, Any]], name: str) -> bool:
        pod = listed[name]
        if phase(pod) == "Running":
            return OBSERVED_MEMORY_GROUPS in annotations_of(pod)
        if phase(pod) in ("Succeeded", "Failed"):
            return True
        return node_of(pod) is None and reported_unschedulable(kube, d, namespace, name) is not None

    quiet: dict[str, Any] = {"state": None, "since": 0.0}

    def probe() -> dict[str, dict[str, Any]] | None:
        listed = pods(kube, namespace)
        # Settled once nothing has moved for the adapter's quiet_s: a pod reported
        # unschedulable may still be placed once the scheduler's view catches up
        # (scheduler-plugins' cache after a resync, KAI's next cycle).
        state = sorted((n, phase(p), node_of(p)) for n, p in listed.items())
        if state != quiet["state"]:
            quiet.update(state=state, since=time.monotonic())
        if time.monotonic() - quiet["since"] < d.scheduler.quiet_s:
            return None
        if not all(outcome(listed, n) for n in names):
            return None
        held = d.allocations(listed.values())
        return None if observation_mismatches(listed.values(), _by_name(d), held) else listed

    what = f"{sorted(names)} running and observed, finished or reported unschedulable"
    listed = wait_until(
        probe,
        deployment=d,
        timeout=SETTLE_S,
        what=what,
        required=Claim.REPORTS_UNSCHEDULABLE in f.claims,
    )
    if listed is None:
        listed = pods(kube, namespace)
        silent = sorted(n for n in names if node_of(listed[n]) is None)
        f.check(
            Claim.REPORTS_UNSCHEDULABLE,
            False,
            f"{silent} Pending after {SETTLE_S} s without a report",
        )
        # The harness's part must still converge: every Running pod observed as allocated.
        listed = wait_until(
            lambda: _observed(kube, d, namespace),
            deployment=d,
            timeout=SETTLE_S,
            what="every Running pod observed as allocated",
            required=True,
        )
        assert listed is not None
    f.invariants(listed.values())
    return listed


def _observed(kube: KubeClient, d: Deployment, namespace: str) -> dict[str, dict[str, Any]] | None:
    listed = pods(kube, namespace)
    held = d.allocations(listed.values())
    return None if observation_mismatches(listed.values(), _by_name(d), held) else listed


def _by_name(deployment: Deployment) -> dict[str, NodeProfile]:
    return {p.name: p for p in deployment.profiles}


def _no_rejection(f: Findings, listed: dict[str, dict[str, Any]]) -> None:
    refused = sorted(n for n, p in listed.items() if rejected(p))
    f.check(Claim.ALIGNED, not refused, f"the kubelet rejected {refused}")


def _unschedulable(f: Findings, kube: KubeClient, namespace: str, pod: dict[str, Any]) -> None:
    """``pod`` - which no zone of any node can hold - stays Pending, unbound and reported."""
    name = pod["metadata"]["name"]
    if node_of(pod) is not None:
        f.check(Claim.REPORTS_UNSCHEDULABLE, False, f"{name} bound to {node_of(pod)}")
        return
    message = reported_unschedulable(kube, f.deployment, namespace, name)
    f.check(Claim.REPORTS_UNSCHEDULABLE, message is not None, f"{name} Pending unreported")


def test_a_gpu_and_cpu_pods_run_only_where_alignable(
    deploy: DeployFn, findings: FindingsFn, kube: KubeClient, namespace: str
) -> None:
    """Two single-numa-node nodes with 4 GPUs each: "split" has 2 per zone, "lopsided" all 4
    in zone 0. Every pod runs inside one zone; a pod of 3 GPUs runs only on "lopsided"
    although both nodes have the GPUs; a pod of 5 CPUs (4 per zone) fits no zone and stays
    Pending unbound - never sent to a kubelet that would refuse it."""
    split = two_zone_node(policy="single-numa-node", gpus=2)
    lopsided = lopsided_gpu_node(policy="single-numa-node")
    d = deploy(Topology(nodes=(split, lopsided)))
    f = findings(d, "a")

    def submit(name: str, cpu: str, gpus: int) -> None:
        create(kube, workload_pod(name, namespace=namespace, deployment=d, cpu=cpu, gpus=gpus))

    submit("three-gpus", "1", 3)
    # Every node could hold it as a whole (so the reason is the plugin's, not
    # "Insufficient cpu"); no zone can.
    submit("five-cpus", "5", 0)
    wait_until(
        lambda: (
            reported_unschedulable(kube, d, namespace, "five-cpus")
            or node_of(pods(kube, namespace)["five-cpus"])
        ),
        deployment=d,
        timeout=60,
        what="five-cpus reported unschedulable",
        required=Claim.REPORTS_UNSCHEDULABLE in f.claims,
    )
    submit("two-gpus", "3", 2)
    submit("one-gpu", "1", 1)
    running = {"three-gpus": (1, 3), "two-gpus": (3, 2), "one-gpu": (1, 1)}
    listed = _settled(kube, f, namespace, {*running, "five-cpus"})
    where = {n: node_of(listed[n]) for n in running}
    f.check(
        Claim.ALIGNED,
        where["three-gpus"] == d.node_name(lopsided["name"]),
        f"three-gpus on {where['three-gpus']}, not on the node whose zone holds 3 GPUs",
    )
    f.check(
        Claim.ALIGNED,
        where["two-gpus"] == d.node_name(split["name"]),  # lopsided has 1 GPU left
        f"two-gpus on {where['two-gpus']}, not on the node with 2 GPUs in a zone left",
    )
    for name, (cpu, gpus) in running.items():
        if phase(listed[name]) != "Running":
            f.check(Claim.ALIGNED, False, f"{name} {phase(listed[name])}, not Running")
            continue
        zones = _observed_zones(listed[name])
        amounts = [(a.get("nvidia.com/gpu"), a.get("cpu")) for a in zones.values()]
        f.check(
            Claim.ALIGNED,
            amounts == [(str(gpus), str(cpu))],
            f"{name} observed over {zones}, not in one zone",
        )
    _unschedulable(f, kube, namespace, listed["five-cpus"])
    _no_rejection(f, listed)
    f.predictions(listed.values())
    f.report(listed.values())


def test_b_three_three_two_on_two_four_core_zones(
    deploy: DeployFn, findings: FindingsFn, kube: KubeClient, namespace: str
) -> None:
    """Two 4-core zones, Guaranteed pods of 3, 3 and 2 cores: whole-node accounting would
    admit all three (8 cores), the zones hold only two. Exactly two run; the third stays
    Pending with the plugin's reason - never bound, never rejected by the kubelet."""
    d = deploy(Topology(nodes=(two_zone_node(policy="single-numa-node"),)))
    f = findings(d, "b")
    names = {"three-a": "3", "three-b": "3", "two": "2"}
    for name, cpu in names.items():
        create(kube, workload_pod(name, namespace=namespace, deployment=d, cpu=cpu))
    listed = _settled(kube, f, namespace, set(names))
    running = sorted(n for n, p in listed.items() if phase(p) == "Running")
    f.check(Claim.ALIGNED, len(running) == 2, f"{running} Running, not two of them")
    for pod in listed.values():
        if phase(pod) != "Running" and not rejected(pod):
            _unschedulable(f, kube, namespace, pod)
    _no_rejection(f, listed)
    f.predictions(listed.values())
    f.report(listed.values())


def test_c_full_node_gpu_pods_span_both_zones_on_restricted_nodes(
    deploy: DeployFn, findings: FindingsFn, kube: KubeClient, namespace: str
) -> None:
    """restricted, two zones of 8 cores, 8Gi and 4 GPUs: a pod of 8 GPUs, 12 cores and
    12Gi needs both zones for every resource, which restricted admits (every provider's
    narrowest width is the same mask). One per node runs, on both zones. Its memory is a
    Memory Manager group over both zones: the predicted annotations must equal the
    observed ones for it too (per-zone memory none, the 12Gi in the groups)."""
    nodes = tuple(two_zone_node(policy="restricted", cores=8, gpus=4) for _ in range(2))
    d = deploy(Topology(nodes=nodes))
    f = findings(d, "c")
    for i in range(2):
        create(
            kube,
            workload_pod(
                f"full-{i}", namespace=namespace, deployment=d, cpu="12", memory="12Gi", gpus=8
            ),
        )
    listed = _settled(kube, f, namespace, {"full-0", "full-1"})
    placed = {node_of(listed["full-0"]), node_of(listed["full-1"])}
    f.check(
        Claim.ALIGNED,
        placed == {d.node_name(n["name"]) for n in nodes},
        f"the two pods on {sorted(map(str, placed))}, not one per node",
    )
    for name in ("full-0", "full-1"):
        if phase(listed[name]) != "Running":
            f.check(Claim.ALIGNED, False, f"{name} {phase(listed[name])}, not Running")
            continue
        # What the kubelet does with such a pod (the harness's simulation, then the
        # exporter's observation of it): both zones, memory as one group over both.
        zones = _observed_zones(listed[name])
        assert sorted(zones) == ["node-0", "node-1"], (name, zones)
        assert not any("memory" in a for a in zones.values())
        assert json.loads(annotations_of(listed[name])[OBSERVED_MEMORY_GROUPS]) == [
            {"memoryNodes": ["node-0", "node-1"], "amount": {"memory": str(12 << 30)}}
        ]
        assert [a["nvidia.com/gpu"] for a in zones.values()] == ["4", "4"]
        assert sum(int(a["cpu"]) for a in zones.values()) == 12
    _no_rejection(f, listed)
    f.predictions(listed.values())
    f.report(listed.values())


def test_e_observed_equals_allocated_and_predicted_equals_observed(
    deploy: DeployFn, findings: FindingsFn, kube: KubeClient, namespace: str
) -> None:
    """A mixed workload on a single-numa-node and a restricted node: every Running pod's
    observed annotations equal the simulator's allocation (CPUs, GPUs, memory, nothing for
    a Burstable pod) - the harness's part - and where the scheduler wrote a predicted
    placement it equals the observed one - the scheduler's."""
    nodes = (
        two_zone_node(policy="single-numa-node", gpus=2),
        two_zone_node(policy="restricted", gpus=2),
    )
    d = deploy(Topology(nodes=nodes))
    f = findings(d, "e")
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
    listed = _settled(kube, f, namespace, set(shapes))
    if phase(listed["burstable"]) == "Running":
        assert OBSERVED_PLACEMENT not in annotations_of(listed["burstable"])
        assert annotations_of(listed["burstable"])[OBSERVED_MEMORY_GROUPS] == "[]"
    if phase(listed["gpu-only"]) == "Running":
        assert _observed_zones(listed["gpu-only"]) and all(
            set(a) == {"nvidia.com/gpu"} for a in _observed_zones(listed["gpu-only"]).values()
        )
    idle = sorted(n for n, p in listed.items() if phase(p) != "Running")
    f.check(Claim.ALIGNED, not idle, f"{idle} not Running")
    _no_rejection(f, listed)
    f.predictions(listed.values())
    f.report(listed.values())
