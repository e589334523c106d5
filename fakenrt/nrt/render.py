"""NodeResourceTopology v1alpha2 objects from a node profile and its use. Pure.

One object per node, named after it (the CRD is cluster-scoped):

* ``zones``: one per NUMA node, ``node-<id>`` of type ``Node``, in id order, with
  ``costs`` (the NUMA distance to every zone, itself included) and ``resources`` sorted by
  name. Per resource: ``capacity`` = everything the zone has (reserved CPUs and unhealthy
  devices included), ``allocatable`` = capacity minus reserved CPUs and unhealthy devices,
  ``available`` = allocatable minus what pods hold exclusively there (the profile's foreign
  ``allocated`` included). Quantities are decimal strings (bytes for memory and hugepages).
  Devices without NUMA affinity belong to no zone and are not listed, as a topology
  exporter reports them.
* ``attributes``: ``topologyManagerPolicy``, ``topologyManagerScope``, the resource
  managers' policies ``cpuManagerPolicy`` (``none`` / ``static``) and
  ``memoryManagerPolicy`` (``None`` / ``Static``) - not a standard NRT attribute (seed 000
  names it as the missing piece): with them a scheduler knows whether ``cpu`` and memory
  are aligned at all - and the pod-set
  fingerprint ``nodeTopologyPodsFingerprint`` with method ``with-exclusive-resources``:
  the pods it covers are exactly those counted in ``available`` (pods holding exclusive
  CPUs, memory, hugepages or devices), the set a scheduler computes when it sees that method.
* ``topologyPolicies``: the deprecated single-value form of policy and scope (as the
  noderesourcetopology-api helper ``topologypolicy.DetectTopologyPolicy`` maps them); left
  out with ``topology_policies=False`` (v1alpha2 does not require it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.annotations import zone_name
from fakenrt.nrt.fingerprint import (
    ATTRIBUTE,
    ATTRIBUTE_METHOD,
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    fingerprint_keys,
)
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.resources import zone_allocatable, zone_capacity

#: The NodeResourceTopology API (the CRD of k8stopologyawareschedwg) and its zone type.
NRT_GROUP = "topology.node.k8s.io"
NRT_VERSION = "v1alpha2"
NRT_PLURAL = "noderesourcetopologies"
API_VERSION = f"{NRT_GROUP}/{NRT_VERSION}"
KIND = "NodeResourceTopology"
ZONE_TYPE = "Node"
#: The kubelet's CPU Manager / Memory Manager policy, as the kubelet configuration spells it.
CPU_MANAGER_POLICY_ATTRIBUTE = "cpuManagerPolicy"
MEMORY_MANAGER_POLICY_ATTRIBUTE = "memoryManagerPolicy"

_LEGACY_POLICIES = {
    ("single-numa-node", "container"): "SingleNUMANodeContainerLevel",
    ("single-numa-node", "pod"): "SingleNUMANodePodLevel",
    ("restricted", "container"): "RestrictedContainerLevel",
    ("restricted", "pod"): "RestrictedPodLevel",
    ("best-effort", "container"): "BestEffortContainerLevel",
    ("best-effort", "pod"): "BestEffortPodLevel",
}

#: Per zone id: resource name -> amount (CPUs and devices as counts, memory in bytes).
Usage = Mapping[int, Mapping[str, int]]


def legacy_topology_policy(policy: str, scope: str) -> str:
    """The deprecated ``topologyPolicies`` value for a Topology Manager policy and scope."""
    return _LEGACY_POLICIES.get((policy, scope), "None")


def available_amount(allocatable: int, held: int) -> int:
    """A zone's ``available`` amount of a resource: what it can give minus what pods hold
    there, never below 0."""
    return max(0, allocatable - held)


def foreign_usage(profile: NodeProfile) -> dict[int, dict[str, int]]:
    """What the profile says pods outside the simulation hold, per zone (its ``allocated``)."""
    return {z.id: dict(z.allocated) for z in profile.zones}


@dataclass(frozen=True)
class NodePolicies:
    """The kubelet settings an NRT object states: Topology Manager policy and scope, CPU
    Manager and Memory Manager policies, as the kubelet configuration spells them."""

    topology_manager_policy: str
    topology_manager_scope: str
    cpu_manager_policy: str
    memory_manager_policy: str


def nrt_object(
    *,
    name: str,
    zone_ids: Sequence[int],
    distance: Callable[[int, int], int],
    capacity: Mapping[int, Mapping[str, int]],
    allocatable: Mapping[int, Mapping[str, int]],
    held: Usage,
    policies: NodePolicies,
    pods: Iterable[str] = (),
    topology_policies: bool = True,
) -> dict[str, Any]:
    """The NodeResourceTopology object from per-zone amounts. Pure. The one place the
    object's shape is decided: :func:`render_nrt` (fake nodes, from a profile) and the
    real-kubelet publisher (:mod:`fakenrt.nrtpub.compute`, from podresources and sysfs)
    both end here, so the two cannot drift.

    Every zone of ``zone_ids`` lists the resources of its ``capacity`` row (sorted by
    name); ``allocatable`` gives 0 for a resource it lacks; ``available`` is allocatable
    minus ``held`` (never below 0). Raises ValueError for ``held`` naming a zone that is
    not in ``zone_ids``, or a pod key that is not ``namespace/name``.
    """
    unknown = set(held) - set(zone_ids)
    if unknown:
        raise ValueError(f"usage names zones {sorted(unknown)} that node {name} lacks")
    zones = []
    for zone_id in zone_ids:
        zone_held = held.get(zone_id, {})
        zone_allocatable = allocatable.get(zone_id, {})
        resources = []
        for resource in sorted(capacity.get(zone_id, {})):
            can_give = zone_allocatable.get(resource, 0)
            resources.append(
                {
                    "name": resource,
                    "capacity": str(capacity[zone_id][resource]),
                    "allocatable": str(can_give),
                    "available": str(available_amount(can_give, zone_held.get(resource, 0))),
                }
            )
        zones.append(
            {
                "name": zone_name(zone_id),
                "type": ZONE_TYPE,
                "costs": [
                    {"name": zone_name(other), "value": distance(zone_id, other)}
                    for other in zone_ids
                ],
                "resources": resources,
            }
        )
    legacy = legacy_topology_policy(
        policies.topology_manager_policy, policies.topology_manager_scope
    )
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        **({"topologyPolicies": [legacy]} if topology_policies else {}),
        "zones": zones,
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policies.topology_manager_policy},
            {"name": "topologyManagerScope", "value": policies.topology_manager_scope},
            {"name": CPU_MANAGER_POLICY_ATTRIBUTE, "value": policies.cpu_manager_policy},
            {"name": MEMORY_MANAGER_POLICY_ATTRIBUTE, "value": policies.memory_manager_policy},
            {"name": ATTRIBUTE, "value": fingerprint_keys(pods)},
            {"name": ATTRIBUTE_METHOD, "value": METHOD_WITH_EXCLUSIVE_RESOURCES},
        ],
    }


def render_nrt(
    profile: NodeProfile,
    *,
    usage: Usage | None,
    pods: Iterable[str] = (),
    topology_policies: bool = True,
) -> dict[str, Any]:
    """The NodeResourceTopology object for ``profile``. Pure.

    ``usage`` is what pods hold per zone, the profile's foreign ``allocated`` included (the
    simulator's per-zone use); None means before any pod ran, i.e. only the foreign
    ``allocated``. ``pods`` are the ``namespace/name`` keys of the pods the fingerprint
    covers: those counted in that usage (plus, for a kubelet before 1.32, the terminated
    pods still on the node - the caller decides). An amount above what a zone can give leaves
    ``available`` at 0 rather than negative. Raises ValueError for a usage of a zone the
    profile does not have, or a pod key that is not ``namespace/name``.
    """
    kubelet = profile.kubelet
    return nrt_object(
        name=profile.name,
        zone_ids=profile.zone_ids,
        distance=profile.distance,
        capacity=zone_capacity(profile),
        allocatable=zone_allocatable(profile),
        held=foreign_usage(profile) if usage is None else usage,
        policies=NodePolicies(
            topology_manager_policy=kubelet.topology_manager_policy,
            topology_manager_scope=kubelet.topology_manager_scope,
            cpu_manager_policy=kubelet.cpu_manager_policy,
            memory_manager_policy=kubelet.memory_manager_policy,
        ),
        pods=pods,
        topology_policies=topology_policies,
    )
