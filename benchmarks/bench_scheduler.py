"""Benchmark of the reference NUMA scheduler plugin (pure code, no API server).

Prints:
  * filter + score cost per (pod, node) on a 2-zone single-numa-node GPU node;
  * filter cost and filter + score cost per (pod, node) on an 8-zone restricted node, for
    a pod that fits one zone and for a pod that needs 4 zones;
  * one pod against 5,000 two-zone nodes: building the cycle's books (reconstruction from
    two pods with placements per node) and the schedule() call (whole-node check, NUMA
    filter and scoring on every node, pick, reserve).

Each figure is the best of three rounds (the machine is shared).

Run: .venv/bin/python benchmarks/bench_scheduler.py [--nodes 5000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.annotations import OBSERVED_PLACEMENT, PREDICTED_PLACEMENT
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.scheduler.cluster import ClusterSnapshot, NodeSnapshot, PodSnapshot
from fakenrt.scheduler.cycle import SchedulingCycle
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.plugin import NumaPlugin
from fakenrt.scheduler.topology import NumaTopology

GPU = "nvidia.com/gpu"
GI = 1024**3


def nrt(
    name: str, zones: int, *, cpus: int, gpus: int, memory_gi: int, policy: str
) -> NumaTopology:
    obj: dict[str, Any] = {
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "costs": [
                    {"name": f"node-{j}", "value": 10 if i == j else 20} for j in range(zones)
                ],
                "resources": [
                    {"name": "cpu", "capacity": cpus, "allocatable": cpus, "available": cpus},
                    {
                        "name": "memory",
                        "capacity": memory_gi * GI,
                        "allocatable": memory_gi * GI,
                        "available": memory_gi * GI,
                    },
                    {"name": GPU, "capacity": gpus, "allocatable": gpus, "available": gpus},
                ],
            }
            for i in range(zones)
        ],
    }
    return read_nrt(obj, source="bench")


def pod(
    name: str,
    *,
    cpu: int,
    gpu: int,
    memory_gi: int,
    annotations: dict[str, str] | None = None,
    node: str = "",
) -> PodSpec:
    manifest: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "annotations": annotations or {}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "limits": {"cpu": str(cpu), "memory": f"{memory_gi}Gi", GPU: str(gpu)}
                    },
                }
            ]
        },
    }
    if node:
        manifest["spec"]["nodeName"] = node
    return pod_from_manifest(manifest)


def per_call(
    fn: Callable[[], object], *, rounds: int = 3, min_seconds: float = 0.4
) -> tuple[float, int]:
    """Seconds per call: the best of ``rounds`` rounds of at least ``min_seconds`` each
    (after a warm-up), so a busy machine disturbs the figure less."""
    for _ in range(20):
        fn()
    best = float("inf")
    total = 0
    for _ in range(rounds):
        n = 0
        start = time.perf_counter()
        while True:
            for _ in range(50):
                fn()
            n += 50
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / n)
        total += n
    return best, total


def bench_node(label: str, topology: NumaTopology, spec: PodSpec) -> None:
    plugin = NumaPlugin()
    ledger = ZoneLedger.from_nrt(topology)
    result = plugin.filter(spec, topology, ledger)
    assert result.fit, result.reason
    filter_cost, n1 = per_call(lambda: plugin.filter(spec, topology, ledger))

    def both() -> None:
        verdict = plugin.filter(spec, topology, ledger)
        plugin.score(spec, topology, ledger, verdict)

    both_cost, n2 = per_call(both)
    print(
        f"{label}: filter {filter_cost * 1e6:8.1f} us/(pod,node)  "
        f"filter+score {both_cost * 1e6:8.1f} us/(pod,node)  "
        f"zones={list(result.placement.zones)}  (n={n1}, {n2})"
    )


def cluster_snapshot(nodes: int) -> ClusterSnapshot:
    """``nodes`` two-zone single-numa-node nodes (64 CPUs, 4 GPUs, 256Gi per zone), each
    with two pods of 2 GPUs on zone 0, one observed and one predicted."""
    snaps = []
    pods = []
    used = '[{"zone":"node-0","amount":{"cpu":"16","memory":"68719476736","nvidia.com/gpu":"2"}}]'
    for i in range(nodes):
        name = f"n{i:05d}"
        topo = nrt(name, 2, cpus=64, gpus=4, memory_gi=256, policy="single-numa-node")
        snaps.append(
            NodeSnapshot(
                name=name,
                allocatable={
                    "cpu": Decimal(128),
                    "memory": Decimal(512 * GI),
                    GPU: Decimal(8),
                    "pods": Decimal(110),
                },
                nrt=topo,
            )
        )
        for j, key in enumerate((OBSERVED_PLACEMENT, PREDICTED_PLACEMENT)):
            pods.append(
                PodSnapshot(
                    spec=pod(
                        f"p{i}-{j}", cpu=16, gpu=2, memory_gi=64, annotations={key: used}, node=name
                    ),
                    phase="Running",
                )
            )
    return ClusterSnapshot(nodes=tuple(snaps), pods=tuple(pods))


def bench_cluster(nodes: int) -> None:
    snapshot = cluster_snapshot(nodes)
    pods = snapshot.pods
    plugin = NumaPlugin()
    incoming = pod("incoming", cpu=32, gpu=4, memory_gi=128)
    build = schedule = float("inf")
    for _ in range(3):  # best of three
        start = time.perf_counter()
        cycle = SchedulingCycle(snapshot, plugin)
        build = min(build, time.perf_counter() - start)
        start = time.perf_counter()
        decision = cycle.schedule(incoming)
        schedule = min(schedule, time.perf_counter() - start)
    print(
        f"one pod vs {nodes} nodes: build books {build:.3f} s "
        f"({build / nodes * 1e6:.0f} us/node, {len(pods)} pods reconstructed); "
        f"schedule {schedule:.3f} s ({schedule / nodes * 1e6:.0f} us/node) -> {decision.node} "
        f"zones={list(decision.placement.zones)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000, help="nodes for the cluster case")
    opts = parser.parse_args()
    two = nrt("two", 2, cpus=64, gpus=4, memory_gi=256, policy="single-numa-node")
    bench_node("2-zone single-numa-node, 1 GPU pod", two, pod("a", cpu=8, gpu=1, memory_gi=32))
    eight = nrt("eight", 8, cpus=16, gpus=1, memory_gi=64, policy="restricted")
    bench_node("8-zone restricted, 1-zone pod   ", eight, pod("b", cpu=8, gpu=1, memory_gi=32))
    bench_node("8-zone restricted, 4-zone pod   ", eight, pod("c", cpu=64, gpu=4, memory_gi=256))
    bench_cluster(opts.nodes)


if __name__ == "__main__":
    main()
