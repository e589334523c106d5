"""A loaded node: a profile node after the kubelet simulator admitted pods, as the outside
world sees it - its NRT object and its pods with the annotations the exporter writes. Pure.

What ``fakenrt nrt render --pod`` prints, and what the differential tests feed the
scheduler plugin:

* :func:`foreign_pods` - the pods standing for the profile's foreign ``allocated``
  amounts and ``foreignRequests`` (in a real cluster every consumer is a pod), with what
  each holds;
* :func:`render_loaded` - the NRT the node publishes once its allocations are current:
  ``available`` from the simulator's per-zone use, the fingerprint over the pods holding
  exclusive resources (the foreign pods included);
* :func:`observed_annotations` - per admitted pod, the annotations the exporter derives
  from the node's podresources report (:mod:`exporter.placement`; podresources lists app
  containers and native sidecars, not regular init containers);
* :func:`bound_pod_manifest` - an admitted pod as the API shows it: bound to the node,
  ``Running``, with those annotations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from exporter.placement import annotation_values, derive_placement
from fakenrt.kubelet.allocation import ContainerAllocation, PodAllocation
from fakenrt.kubelet.foreign import FOREIGN_CONTAINER
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.render import render_nrt
from fakenrt.podresources_report import device_numa, pod_report
from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles.model import NodeProfile

#: Label on the foreign pods (value: the node name).
FOREIGN_LABEL = "fakenrt.io/foreign-for"


def foreign_pods(state: NodeState) -> tuple[tuple[PodSpec, PodAllocation], ...]:
    """The node's foreign pods (:func:`fakenrt.kubelet.foreign.foreign_pod_specs`: the
    zones' ``allocated`` pods, then the ``foreignRequests`` pods) with what each holds:
    the CPU ids, devices and memory blocks the simulator took at start for a zone's
    ``allocated``, nothing for a ``foreignRequests`` pod (podresources lists it with an
    empty container, as a kubelet lists every pod it runs)."""
    held = state.foreign()
    out = []
    for foreign in state.foreign_pods():
        spec = foreign.spec
        container = (
            ContainerAllocation(name=FOREIGN_CONTAINER)
            if foreign.zone is None
            else replace(held[foreign.zone], name=FOREIGN_CONTAINER)
        )
        out.append((spec, PodAllocation(spec.namespace, spec.name, "", (container,))))
    return tuple(out)


def node_allocations(state: NodeState) -> tuple[PodAllocation, ...]:
    """Every pod holding resources on the node: the foreign pods, then the admitted ones."""
    return (*(a for _, a in foreign_pods(state)), *state.allocations().values())


def holds_exclusive(allocation: PodAllocation) -> bool:
    """The pod holds exclusive CPUs, memory blocks or devices: it counts in ``available``
    and in the ``with-exclusive-resources`` fingerprint."""
    return allocation.exclusive


def exclusive_pods(allocations: Iterable[PodAllocation]) -> tuple[str, ...]:
    """``namespace/name`` of the pods :func:`holds_exclusive` keeps, in the order given."""
    return tuple(a.key for a in allocations if holds_exclusive(a))


def render_loaded(state: NodeState) -> dict[str, Any]:
    """The NRT object of the node in ``state``, current for every pod on it (the foreign
    pods included)."""
    return render_nrt(
        state.profile, usage=state.zone_usage(), pods=exclusive_pods(node_allocations(state))
    )


def observed_annotations(profile: NodeProfile, allocation: PodAllocation) -> dict[str, str]:
    """The annotations the exporter writes on the pod (none for a pod it does not
    annotate)."""
    cpu_to_numa = {cpu: zone.id for zone in profile.zones for cpu in zone.cpus}
    report = pod_report(allocation, device_numa(profile))
    values = annotation_values(derive_placement(report, cpu_to_numa))
    return {k: v for k, v in values.items() if v is not None}


def _resources(c: ContainerSpec) -> dict[str, Any]:
    return {
        "requests": {name: str(v) for name, v in sorted(c.requests.items())},
        "limits": {name: str(v) for name, v in sorted(c.limits.items())},
    }


def bound_pod_manifest(
    pod: PodSpec, *, node: str, annotations: Mapping[str, str]
) -> dict[str, Any]:
    """``pod`` as the API server shows it once bound to ``node`` and running."""
    inits = []
    for c in pod.init_containers:
        entry: dict[str, Any] = {"name": c.name, "resources": _resources(c)}
        if c.restartable:
            entry["restartPolicy"] = "Always"
        inits.append(entry)
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [{"name": c.name, "resources": _resources(c)} for c in pod.containers],
    }
    if inits:
        spec["initContainers"] = inits
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        metadata["uid"] = pod.uid
    merged = {**pod.annotations, **annotations}
    if merged:
        metadata["annotations"] = dict(sorted(merged.items()))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Running"},
    }
