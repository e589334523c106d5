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

from collections.abc import Iterable, Mapping
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


def foreign_usage(profile: NodeProfile) -> dict[int, dict[str, int]]:
    """What the profile says pods outside the simulation hold, per zone (its ``allocated``)."""
    return {z.id: dict(z.allocated) for z in profile.zones}


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
    held = foreign_usage(profile) if usage is None else usage
    unknown = set(held) - set(profile.zone_ids)
    if unknown:
        raise ValueError(f"usage names zones {sorted(unknown)} that node {profile.name} lacks")
    capacity = zone_capacity(profile)
    allocatable = zone_allocatable(profile)
    zones = []
    for zone in profile.zones:
        zone_held = held.get(zone.id, {})
        resources = [
            {
                "name": name,
                "capacity": str(capacity[zone.id][name]),
                "allocatable": str(allocatable[zone.id][name]),
                "available": str(max(0, allocatable[zone.id][name] - zone_held.get(name, 0))),
            }
            for name in sorted(capacity[zone.id])
        ]
        zones.append(
            {
                "name": zone_name(zone.id),
                "type": ZONE_TYPE,
                "costs": [
                    {"name": zone_name(other), "value": profile.distance(zone.id, other)}
                    for other in profile.zone_ids
                ],
                "resources": resources,
            }
        )
    kubelet = profile.kubelet
    legacy = legacy_topology_policy(kubelet.topology_manager_policy, kubelet.topology_manager_scope)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": profile.name},
        **({"topologyPolicies": [legacy]} if topology_policies else {}),
        "zones": zones,
        "attributes": [
            {"name": "topologyManagerPolicy", "value": kubelet.topology_manager_policy},
            {"name": "topologyManagerScope", "value": kubelet.topology_manager_scope},
            {"name": CPU_MANAGER_POLICY_ATTRIBUTE, "value": kubelet.cpu_manager_policy},
            {"name": MEMORY_MANAGER_POLICY_ATTRIBUTE, "value": kubelet.memory_manager_policy},
            {"name": ATTRIBUTE, "value": fingerprint_keys(pods)},
            {"name": ATTRIBUTE_METHOD, "value": METHOD_WITH_EXCLUSIVE_RESOURCES},
        ],
    }
