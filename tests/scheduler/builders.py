"""Small builders for scheduler tests: NRT objects, topologies and pods as plain dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.scheduler.ledger import ZoneLedger
from fakenrt.scheduler.nrt import read_nrt
from fakenrt.scheduler.topology import NumaTopology

GPU = "nvidia.com/gpu"
GI = 1024**3


def nrt_object(
    name: str,
    zones: Sequence[Mapping[str, Any]],
    *,
    policy: str | None = "restricted",
    scope: str | None = "container",
    legacy: Sequence[str] = (),
    distances: Sequence[Sequence[int]] | None = None,
) -> dict[str, Any]:
    """An NRT v1alpha2 object. Each zone: {"capacity": {...}, "allocatable": {...},
    "available": {...}} (allocatable defaults to capacity, available to allocatable)."""
    attributes = []
    if policy is not None:
        attributes.append({"name": "topologyManagerPolicy", "value": policy})
    if scope is not None:
        attributes.append({"name": "topologyManagerScope", "value": scope})
    raw_zones = []
    for i, zone in enumerate(zones):
        capacity = dict(zone["capacity"])
        allocatable = dict(zone.get("allocatable", capacity))
        available = dict(zone.get("available", allocatable))
        resources = [
            {
                "name": r,
                "capacity": str(capacity[r]),
                "allocatable": str(allocatable.get(r, 0)),
                "available": str(available.get(r, 0)),
            }
            for r in sorted(capacity)
        ]
        entry: dict[str, Any] = {"name": f"node-{i}", "type": "Node", "resources": resources}
        if distances is not None:
            entry["costs"] = [{"name": f"node-{j}", "value": d} for j, d in enumerate(distances[i])]
        raw_zones.append(entry)
    obj: dict[str, Any] = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "zones": raw_zones,
        "attributes": attributes,
    }
    if legacy:
        obj["topologyPolicies"] = list(legacy)
    return obj


def topology(
    zones: Sequence[Mapping[str, Any]],
    *,
    policy: str = "restricted",
    scope: str = "container",
    distances: Sequence[Sequence[int]] | None = None,
) -> NumaTopology:
    return read_nrt(
        nrt_object("n1", zones, policy=policy, scope=scope, distances=distances), source="test"
    )


def ledger(topo: NumaTopology) -> ZoneLedger:
    return ZoneLedger.from_nrt(topo)


def container(
    name: str, resources: Mapping[str, Any], *, restart_always: bool = False
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": name,
        "resources": {"limits": {k: str(v) for k, v in resources.items()}},
    }
    if restart_always:
        c["restartPolicy"] = "Always"
    return c


def pod_manifest(
    name: str,
    containers: Sequence[Mapping[str, Any]],
    *,
    init: Sequence[Mapping[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
    node: str | None = None,
    phase: str | None = None,
    requests: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers]}
    if init:
        spec["initContainers"] = [dict(c) for c in init]
    if node:
        spec["nodeName"] = node
    if requests:
        for c in spec["containers"]:
            if c["name"] in requests:
                c["resources"]["requests"] = {k: str(v) for k, v in requests[c["name"]].items()}
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": dict(annotations or {})},
        "spec": spec,
    }
    if phase:
        manifest["status"] = {"phase": phase}
    return manifest


def guaranteed(name: str, **resources: Any) -> PodSpec:
    """A one-container Guaranteed pod (limits only, so requests default to them); keyword
    ``gpu`` means nvidia.com/gpu."""
    res = {GPU if k == "gpu" else k: v for k, v in resources.items()}
    res.setdefault("memory", "1Gi")
    res.setdefault("cpu", "1")
    return pod_from_manifest(pod_manifest(name, [container("main", res)]))
