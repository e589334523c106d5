"""Fake node shapes the scenarios use (raw profile nodes, docs/profiles.md)."""

from __future__ import annotations

from typing import Any

from tests.e2e.cluster import unique


def two_zone_node(
    *,
    policy: str,
    cores: int = 4,
    gpus: int = 0,
    memory: str = "8Gi",
    nrt: dict[str, Any] | None = None,
    prefix: str = "e2e",
) -> dict[str, Any]:
    """A node of two identical NUMA zones (``cores`` CPUs, ``gpus`` GPUs, ``memory`` each)
    under Topology Manager ``policy``, container scope, static CPU and Memory Managers."""
    shape: dict[str, Any] = {
        "numaNodes": 2,
        "coresPerNumaNode": cores,
        "threadsPerCore": 1,
        "memoryPerNumaNode": memory,
    }
    if gpus:
        shape["devicesPerNumaNode"] = {"nvidia.com/gpu": gpus}
    node: dict[str, Any] = {
        "name": unique(prefix),
        "kubelet": {"topologyManagerPolicy": policy},
        "shape": shape,
    }
    if nrt is not None:
        node["nrt"] = nrt
    return node


def lopsided_gpu_node(*, policy: str, prefix: str = "e2e") -> dict[str, Any]:
    """Two zones of 4 CPUs and 8Gi; all 4 GPUs in zone 0."""
    return {
        "name": unique(prefix),
        "kubelet": {"topologyManagerPolicy": policy},
        "zones": [
            {"id": 0, "cpus": "0-3", "memory": "8Gi", "devices": {"nvidia.com/gpu": 4}},
            {"id": 1, "cpus": "4-7", "memory": "8Gi"},
        ],
    }
