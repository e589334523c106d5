"""Small scenarios built in memory for the simulation tests."""

from __future__ import annotations

from typing import Any

import yaml

from fakenrt.profiles import parse_profiles
from fakenrt.profiles.model import NodeProfile
from fakenrt.simulate.scenario import Scenario, Settings
from fakenrt.simulate.workload import WorkItem, items_from_entries

GPU = "nvidia.com/gpu"


def profiles(text: str) -> tuple[NodeProfile, ...]:
    return parse_profiles(yaml.safe_load(text), source="test")


#: Two zones of 4 cores and 4 GPUs each.
TWO_ZONES_SNN = """
nodes:
- name: n1
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape:
    numaNodes: 2
    coresPerNumaNode: 4
    threadsPerCore: 1
    memoryPerNumaNode: 64Gi
    devicesPerNumaNode: {nvidia.com/gpu: 4}
"""


def pod(name: str, *, cpu: int = 1, gpu: int = 0, memory: str = "1Gi") -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpu:
        limits[GPU] = str(gpu)
    return {
        "metadata": {"name": name, "namespace": "t"},
        "spec": {"containers": [{"name": "main", "resources": {"limits": limits}}]},
    }


def workload(*entries: tuple[float, float, dict[str, Any]]) -> tuple[WorkItem, ...]:
    """(arrival, run duration, pod manifest) triples."""
    return items_from_entries(
        (f"entry {i}", {"at": at, "duration": duration, "pod": manifest})
        for i, (at, duration, manifest) in enumerate(entries)
    )


def scenario(
    nodes: tuple[NodeProfile, ...], items: tuple[WorkItem, ...], **settings: Any
) -> Scenario:
    settings.setdefault("requeue", False)
    return Scenario(nodes=nodes, workload=items, settings=Settings(**settings))
