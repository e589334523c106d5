"""Pods, events and outcomes as the API and the driver give them, for the scorecard's
pure tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from exporter.annotations import PREDICTED_PLACEMENT
from fakenrt.controller.pods import ALLOCATION_ANNOTATION
from fakenrt.profiles import NodeProfile, parse_profiles
from tests.e2e.allocations import recorded_allocations
from tests.e2e.outcome import Outcome, Transition
from tests.e2e.variants import VARIANTS, Variant

NODE = "n1"


def profile(name: str = NODE) -> NodeProfile:
    """Two zones of 4 CPUs (0-3, 4-7) and 2 GPUs each."""
    (p,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": name,
                    "kubelet": {"topologyManagerPolicy": "single-numa-node"},
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 4,
                        "threadsPerCore": 1,
                        "memoryPerNumaNode": "8Gi",
                        "devicesPerNumaNode": {"nvidia.com/gpu": 2},
                    },
                }
            ]
        },
        source="test",
    )
    return p


def gpu(zone: int, index: int) -> str:
    return profile().zones[zone].devices["nvidia.com/gpu"].ids[index]


def pod(
    name: str,
    *,
    node: str | None = NODE,
    phase: str = "Running",
    reason: str | None = None,
    cpus: str = "",
    gpus: tuple[str, ...] = (),
    predicted: str | None = None,
    unschedulable: str | None = None,
) -> dict[str, Any]:
    """A pod; bound to ``node`` (None: not bound); holding ``cpus`` and ``gpus`` (its
    allocation record, when it holds anything); ``reason``: its status reason (e.g.
    TopologyAffinityError, with phase Failed); ``unschedulable``: a PodScheduled=False
    message."""
    annotations: dict[str, str] = {}
    if cpus or gpus:
        container: dict[str, Any] = {"name": "main"}
        if cpus:
            container["cpus"] = cpus
        if gpus:
            container["devices"] = {"nvidia.com/gpu": list(gpus)}
        annotations[ALLOCATION_ANNOTATION] = json.dumps(
            {"v": 1, "uid": f"uid-{name}", "containers": [container]}
        )
    if predicted is not None:
        annotations[PREDICTED_PLACEMENT] = predicted
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
        status["message"] = f"Pod was rejected: {reason}"
    if unschedulable is not None:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": unschedulable,
            }
        ]
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": annotations,
        },
        "spec": {"nodeName": node} if node else {},
        "status": status,
    }


def kubelet_rejection(name: str, *, node: str = NODE, uid: str | None = None) -> dict[str, Any]:
    """The kubelet's Warning event refusing ``name`` with TopologyAffinityError."""
    return {
        "involvedObject": {"kind": "Pod", "name": name, "uid": uid or f"uid-{name}"},
        "reason": "TopologyAffinityError",
        "type": "Warning",
        "message": "Resources cannot be allocated with Topology locality",
        "source": {"component": "kubelet", "host": node},
        "lastTimestamp": "2026-01-01T00:00:05Z",
    }


def scheduler_event(name: str, message: str, *, reason: str = "FailedScheduling") -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "Pod", "name": name, "uid": f"uid-{name}"},
        "reason": reason,
        "type": "Warning",
        "message": message,
        "source": {"component": "numa-reference"},
        "lastTimestamp": "2026-01-01T00:00:03Z",
    }


def placement(zone: int, **amounts: str) -> str:
    return json.dumps(
        [{"zone": f"node-{zone}", "amount": dict(sorted(amounts.items()))}],
        separators=(",", ":"),
    )


def outcome(
    pods: Iterable[Mapping[str, Any]],
    *,
    events: Iterable[Mapping[str, Any]] = (),
    workload: Iterable[str] | None = None,
    timeline: Iterable[Transition] = (),
    first_submit_s: float | None = 0.0,
    variant: Variant = VARIANTS[0],
    settled: bool = True,
    double_allocations: tuple[str, ...] = (),
    scenario: str = "t",
    deleted: Iterable[Mapping[str, Any]] = (),
) -> Outcome:
    """An outcome on one node ``n1`` (:func:`profile`); ``workload``: the pods the
    scheduler placed (default: every pod)."""
    listed = {p["metadata"]["name"]: dict(p) for p in pods}
    gone = {p["metadata"]["name"]: dict(p) for p in deleted}
    return Outcome(
        scenario=scenario,
        variant=variant,
        pods=listed,
        workload=tuple(workload) if workload is not None else (*listed, *gone),
        prebound=(),
        allocations=recorded_allocations(listed.values()),
        events=tuple(events),
        timeline=tuple(timeline),
        first_submit_s=first_submit_s,
        profiles=(profile(),),
        settled=settled,
        double_allocations=double_allocations,
        deleted=gone,
    )
