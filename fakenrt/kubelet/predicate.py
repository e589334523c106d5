"""The kubelet's whole-node fit check at admission. Pure.

Mirrors ``pkg/kubelet/lifecycle/predicate.go`` with the scheduler's ``Fits``
(``noderesources/fit.go``): the pod count, then cpu (in millicores), memory, then scalar
resources (hugepages, extended resources) - each against node allocatable minus the
requests of the pods already admitted. Only the first failure is reported: reason
``OutOf<resource>`` (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``, ``OutOfnvidia.com/gpu``)
and message ``Node didn't have enough resource: <name>, requested: R, used: U, capacity:
C``. Extended resources the node does not have at all are dropped first
(``removeMissingExtendedResources``); ``spec.nodeName`` naming another node fails with
reason ``NodeName``.

Not modelled: ephemeral-storage (profiles carry none), host ports, node affinity,
taints, OS checks. The upstream loop over scalar resources runs in Go map order; this
model checks them sorted by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fakenrt.kubelet.quantities import milli_value, value
from fakenrt.podspec import PodSpec, effective_requests

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
_NATIVE_SKIPPED = ("ephemeral-storage",)


@dataclass(frozen=True)
class PredicateFailure:
    reason: str
    message: str


def is_extended_resource(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io``."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_scalar_resource(name: str) -> bool:
    return is_extended_resource(name) or name.startswith("hugepages-") or "kubernetes.io/" in name


def pod_request_units(pod: PodSpec) -> dict[str, int]:
    """The pod's effective requests in the units the check compares: cpu in millicores,
    everything else rounded up to whole units."""
    out: dict[str, int] = {}
    for name, amount in effective_requests(pod).items():
        if name == CPU:
            out[name] = milli_value(amount)
        elif name == MEMORY or is_scalar_resource(name):
            out[name] = value(amount)
    return out


def _insufficient(name: str, requested: int, used: int, capacity: int) -> PredicateFailure:
    reason = "OutOf" + name
    return PredicateFailure(
        reason,
        f"Node didn't have enough resource: {name}, requested: {requested}, "
        f"used: {used}, capacity: {capacity}",
    )


def check(
    *,
    node_name: str,
    pod: PodSpec,
    request: Mapping[str, int],
    allocatable: Mapping[str, int],
    used: Mapping[str, int],
    pod_count: int,
) -> PredicateFailure | None:
    """The first reason the pod does not fit, or None. ``allocatable`` and ``used`` are in
    the units of :func:`pod_request_units` (cpu in millicores), ``pods`` a count."""
    max_pods = allocatable.get(PODS, 0)
    if pod_count + 1 > max_pods:
        return _insufficient(PODS, 1, pod_count, max_pods)
    wanted = {
        k: v for k, v in request.items() if not (is_extended_resource(k) and k not in allocatable)
    }
    for name in (CPU, MEMORY):
        amount = wanted.get(name, 0)
        if amount > 0 and amount > allocatable.get(name, 0) - used.get(name, 0):
            return _insufficient(name, amount, used.get(name, 0), allocatable.get(name, 0))
    for name in sorted(wanted):
        amount = wanted[name]
        if name in (CPU, MEMORY, *_NATIVE_SKIPPED) or amount == 0:
            continue
        if amount > allocatable.get(name, 0) - used.get(name, 0):
            return _insufficient(name, amount, used.get(name, 0), allocatable.get(name, 0))
    if pod.node_name and pod.node_name != node_name:
        return PredicateFailure(
            "NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"
        )
    return None
