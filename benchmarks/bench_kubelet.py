"""Admissions per second of the kubelet simulator (``fakenrt.kubelet``).

Two example nodes from ``fakenrt/examples/profiles/shapes.yaml``:

* ``gpu-2numa``: 2 NUMA nodes, 224 CPUs, 8 GPUs (restricted, pod scope);
* ``gpu-8numa``: 8 NUMA nodes, 256 CPUs, 8 GPUs (best-effort, prefer closest).

A fixed mix of Guaranteed pods (GPU trainers of 1, 2 and 4 GPUs, CPU-only services, a pod
with an init container) is admitted in a loop; when a pod is rejected the node is drained
(every pod released) and the loop goes on, so admissions, rejections and releases all
count. Run: ``.venv/bin/python benchmarks/bench_kubelet.py``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from fakenrt.kubelet.node import NodeState
from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.profiles import example_profile, load_profiles


def _pod(name: str, cpu: int, memory: str, gpus: int, *, init_cpu: int = 0) -> PodSpec:
    limits: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if init_cpu:
        spec["initContainers"] = [
            {"name": "setup", "resources": {"limits": {"cpu": str(init_cpu), "memory": "1Gi"}}}
        ]
    return pod_from_manifest({"kind": "Pod", "metadata": {"name": name}, "spec": spec})


MIX = (
    ("train-1gpu", 12, "64Gi", 1, 0),
    ("train-2gpu", 24, "128Gi", 2, 0),
    ("svc", 4, "8Gi", 0, 0),
    ("train-4gpu", 48, "256Gi", 4, 4),
    ("svc-small", 2, "4Gi", 0, 0),
)


def bench(node_name: str, seconds: float) -> tuple[float, int, int]:
    profile = next(p for p in load_profiles(example_profile("shapes")) if p.name == node_name)
    state = NodeState.from_profile(profile)
    admitted = rejected = 0
    counter = itertools.count()
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for name, cpu, memory, gpus, init_cpu in MIX:
            result = state.admit(
                _pod(f"{name}-{next(counter)}", cpu, memory, gpus, init_cpu=init_cpu)
            )
            if result.admit:
                admitted += 1
            else:
                rejected += 1
                for key in list(state.allocations()):
                    state.release(key)
    elapsed = time.perf_counter() - start
    return (admitted + rejected) / elapsed, admitted, rejected


def main() -> None:
    for node_name, label in (
        ("gpu-2numa", "2-NUMA node (224 CPUs, 8 GPUs)"),
        ("gpu-8numa", "8-NUMA node (256 CPUs, 8 GPUs)"),
    ):
        rate, admitted, rejected = bench(node_name, seconds=10.0)
        print(
            f"{label}: {rate:,.0f} admissions/s "
            f"({admitted} admitted, {rejected} rejected, node drained after each rejection)"
        )


if __name__ == "__main__":
    main()
