"""The pods a node runs besides the simulated ones: a profile's foreign capacity as Pod
specs. Pure; the one rule every part reuses.

In a real cluster every consumer of a node is a pod. A profile describes two kinds of
consumers outside the simulation (docs/profiles.md), and both become pods:

* a zone's ``allocated`` - exclusive CPUs, memory, hugepages or devices: one pod per zone
  holding anything, ``kube-system/fakenrt-foreign-<node>-node-<zone>``, one container
  whose limits (= requests) are exactly the zone's amounts, plus 1m CPU or 1Mi memory when
  the zone holds only one of the two, so the pod is Guaranteed, as every holder of
  exclusive CPUs or memory is;
* ``foreignRequests`` - non-exclusive requests: ``pods`` pods (at least one when ``cpu``
  or ``memory`` is given), ``kube-system/fakenrt-foreign-<node>-requests-<i>``; the first
  requests the ``cpu`` and ``memory`` (no limits: Burstable), the others nothing.

The kubelet simulator counts exactly these pods' requests and their number in its
whole-node fit check (:class:`fakenrt.kubelet.node.NodeState`); ``fakenrt controller``
creates them on the API (:mod:`fakenrt.controller.foreign`), where schedulers see them
as they would in a real cluster; ``fakenrt nrt render --pods-out`` writes them; and
``fakenrt simulate`` runs the controller's core, which makes them in simulated time.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles.model import NodeProfile

#: Namespace of the foreign pods.
FOREIGN_NAMESPACE = "kube-system"
FOREIGN_CONTAINER = "foreign"
#: The smallest CPU / memory a zone's foreign pod asks for when the zone holds none of it,
#: so that a pod holding CPUs or memory is Guaranteed, as every exclusive holder is.
_NO_CPU = Decimal("0.001")
_NO_MEMORY = Decimal(1024 * 1024)
_MILLI = Decimal(1000)


@dataclass(frozen=True)
class ForeignPod:
    """One foreign pod. ``zone``: the zone whose ``allocated`` it holds (its exclusive
    resources were taken at the node's start); None for a pod of ``foreignRequests``,
    which holds nothing exclusively."""

    spec: PodSpec
    zone: int | None


def foreign_pod_name(node: str, zone: int) -> str:
    return f"fakenrt-foreign-{node}-node-{zone}"


def foreign_requests_pod_name(node: str, index: int) -> str:
    return f"fakenrt-foreign-{node}-requests-{index}"


def _pod(profile: NodeProfile, name: str, container: ContainerSpec) -> PodSpec:
    return PodSpec(
        namespace=FOREIGN_NAMESPACE, name=name, containers=(container,), node_name=profile.name
    )


def foreign_pod_specs(profile: NodeProfile) -> tuple[ForeignPod, ...]:
    """The node's foreign pods: the zones' ``allocated`` pods by zone id, then the
    ``foreignRequests`` pods."""
    out = []
    for zone in profile.zones:
        limits = {name: Decimal(amount) for name, amount in zone.allocated.items() if amount > 0}
        if not limits:
            continue
        if "cpu" in limits or "memory" in limits:
            limits.setdefault("cpu", _NO_CPU)
            limits.setdefault("memory", _NO_MEMORY)
        container = ContainerSpec(FOREIGN_CONTAINER, requests=limits, limits=dict(limits))
        name = foreign_pod_name(profile.name, zone.id)
        out.append(ForeignPod(_pod(profile, name, container), zone.id))
    requests: dict[str, Decimal] = {}
    cpu = profile.foreign_requests.get("cpu", 0)
    memory = profile.foreign_requests.get("memory", 0)
    if cpu > 0:
        requests["cpu"] = Decimal(cpu) / _MILLI
    if memory > 0:
        requests["memory"] = Decimal(memory)
    count = max(profile.foreign_requests.get("pods", 0), 1 if requests else 0)
    for index in range(count):
        container = ContainerSpec(FOREIGN_CONTAINER, requests=requests if index == 0 else {})
        name = foreign_requests_pod_name(profile.name, index)
        out.append(ForeignPod(_pod(profile, name, container), None))
    return tuple(out)
