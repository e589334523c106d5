"""One strategy's run broken down: the fates of the workload pods, and the binds,
rejections and GPU-hours by node shape and by pod class. Derived from the run's per-pod
outcomes (:mod:`fakenrt.simulate.outcomes`) and the scenario. Pure.

A pod's GPU-hours are delivered on the node of its last bind (a rejected Pod object holds
nothing), so the GPU-hours of the node shapes, and of the pod classes, add up to the run's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fakenrt.profiles.resources import node_allocatable
from fakenrt.simulate.metrics import TOPOLOGY_AFFINITY_ERROR, StrategyResult, percentile
from fakenrt.simulate.outcomes import COMPLETED, DROPPED, PENDING, RUNNING, STARTING, PodOutcome
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.workload import GPU


def fates(result: StrategyResult) -> dict[str, int]:
    """The workload pods' fates at the horizon (``--json`` keys)."""
    pods = result.outcomes.pods
    return {
        "pods_arrived": len(pods),
        "never_placed": sum(1 for p in pods if p.fate == PENDING and p.binds == 0),
        "waiting_after_rejection": sum(1 for p in pods if p.fate == PENDING and p.binds > 0),
        "starting_at_end": sum(1 for p in pods if p.fate == STARTING),
    }


def node_shapes(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's node shapes (the profiles its nodes copy), in order of first node."""
    out: dict[str, dict[str, Any]] = {}
    for node in scenario.nodes:
        shape = scenario.profile_of(node.name)
        row = out.setdefault(shape, {"node_shape": shape, "nodes": 0, "gpus": 0})
        row["nodes"] += 1
        row["gpus"] += int(node_allocatable(node).get(GPU, 0))
    return list(out.values())


def pod_classes(scenario: Scenario) -> list[str]:
    """The workload's pod classes, in order of first pod."""
    return list(dict.fromkeys(item.pod_class for item in scenario.workload))


def _rejections(rows: dict[str, dict[str, Any]], key: str, reason: str) -> None:
    field = (
        "topology_affinity_errors"
        if reason == TOPOLOGY_AFFINITY_ERROR
        else "other_admission_failures"
    )
    rows[key][field] += 1


def by_node_shape(result: StrategyResult, scenario: Scenario) -> list[dict[str, Any]]:
    """Binds, rejections, GPU-hours and utilization per node shape."""
    horizon_hours = scenario.horizon / 3600.0
    rows = {
        shape["node_shape"]: {
            **shape,
            "binds": 0,
            "topology_affinity_errors": 0,
            "other_admission_failures": 0,
            "gpu_seconds": 0.0,
        }
        for shape in node_shapes(scenario)
    }
    for r in result.outcomes.rejections:
        shape = scenario.profile_of(r.node)
        rows[shape]["binds"] += 1
        _rejections(rows, shape, r.reason)
    for p in result.outcomes.pods:
        if p.fate in (COMPLETED, RUNNING, STARTING):
            shape = scenario.profile_of(p.node)
            rows[shape]["binds"] += 1
            rows[shape]["gpu_seconds"] += p.gpu_seconds
    out = []
    for row in rows.values():
        seconds = row.pop("gpu_seconds")
        capacity = row["gpus"] * horizon_hours
        row["gpu_hours"] = round(seconds / 3600.0, 3)
        row["gpu_utilization"] = round(seconds / 3600.0 / capacity, 4) if capacity else None
        out.append(row)
    return out


def _p50(values: Iterable[float]) -> float | None:
    found = percentile(sorted(values), 50)
    return None if found is None else round(found, 3)


def by_pod_class(result: StrategyResult, scenario: Scenario) -> list[dict[str, Any]]:
    """The fates, rejections, GPU-hours and time to first bind per pod class."""
    workload = scenario.workload
    classes = pod_classes(scenario)
    members: dict[str, list[PodOutcome]] = {c: [] for c in classes}
    for p in result.outcomes.pods:
        members[workload[p.item].pod_class].append(p)
    rejected: dict[str, dict[str, Any]] = {
        c: {"topology_affinity_errors": 0, "other_admission_failures": 0} for c in classes
    }
    for r in result.outcomes.rejections:
        _rejections(rejected, workload[r.item].pod_class, r.reason)
    out = []
    for c in classes:
        pods = members[c]
        out.append(
            {
                "pod_class": c,
                "pods": len(pods),
                "completed": sum(1 for p in pods if p.fate == COMPLETED),
                "running_at_end": sum(1 for p in pods if p.fate == RUNNING),
                "starting_at_end": sum(1 for p in pods if p.fate == STARTING),
                "waiting_after_rejection": sum(
                    1 for p in pods if p.fate == PENDING and p.binds > 0
                ),
                "never_placed": sum(1 for p in pods if p.fate == PENDING and p.binds == 0),
                "dropped": sum(1 for p in pods if p.fate == DROPPED),
                **rejected[c],
                "gpu_hours": round(sum(p.gpu_seconds for p in pods) / 3600.0, 3),
                "first_bind_seconds_p50": _p50(
                    p.first_bound - p.arrived for p in pods if p.first_bound is not None
                ),
            }
        )
    return out


def rejection_rows(result: StrategyResult, scenario: Scenario) -> list[dict[str, Any]]:
    """Every rejection of the run, in the order they happened (``--rejections`` lines)."""
    workload = scenario.workload
    return [
        {
            "strategy": result.strategy,
            "at_seconds": round(r.at, 3),
            "pod": r.pod,
            "workload_pod": workload[r.item].key,
            "pod_class": workload[r.item].pod_class,
            "node": r.node,
            "node_shape": scenario.profile_of(r.node),
            "reason": r.reason,
            "message": r.message,
        }
        for r in result.outcomes.rejections
    ]
