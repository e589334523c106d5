"""A scenario's profile node as a real kubelet can run it (the real-kubelet backend of the
e2e scenarios, docs/e2e.md). Pure.

A scenario's node takes the simulator's defaults - the static CPU Manager and the Static
Memory Manager without any reservation - which a real kubelet refuses to start with
(docs/real-kubelet.md, "What a profile cannot carry"). :func:`for_real_kubelet` adds
what the kubelet needs while keeping what the scenario's checks count on - the exclusive
CPUs, memory and devices of every zone, and the Node's allocatable CPUs and memory:

* the static CPU policy without a cpu reservation: one more CPU, in the first zone, as
  ``reservedSystemCPUs`` (the shared pool). Every zone keeps its exclusive CPUs and the
  Node its allocatable CPUs. (``kubeReserved: {cpu: 100m}`` would leave a fraction of a
  CPU free for DaemonSets, but the policy picks the reserved CPU from the zone with the
  fewest CPUs, whichever zone the extra CPU is put in; the backend's DaemonSets request
  no CPU instead.)
* the Static Memory Manager without ``reservedMemory``: 256Mi more ``kubeReserved``
  memory and as much ``reservedMemory`` on the first zone - on top of the zone's memory,
  so the Memory Manager's allocatable and the Node's allocatable memory stay the same.

The node is renamed to the Kind worker that runs it (its labels stay); ``shape`` is
written out as explicit zones, with the zones' device ids, so the extra CPU can go into
one zone. ``foreignRequests`` are dropped: on a real kubelet the pods outside the
scenario are real (kube-proxy, the DaemonSets). A zone's ``allocated`` cannot be carried
and is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from exporter.cpulist import format_cpulist
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.profiles.resources import node_allocatable, zone_allocatable

RESERVED_MEMORY = 256 << 20
_SHAPE_TOPOLOGY = ("threadsPerCore", "numaNodesPerSocket", "coresPerUncoreCache")


class TranslationError(ValueError):
    """A scenario node a real kubelet cannot run as the scenario means it."""


def _parse(raw: Mapping[str, Any]) -> NodeProfile:
    (profile,) = parse_profiles({"nodes": [copy.deepcopy(dict(raw))]}, source="e2e topology")
    return profile


def _zones(profile: NodeProfile, extra_cpu: int | None) -> list[dict[str, Any]]:
    zones: list[dict[str, Any]] = []
    for zone in profile.zones:
        if zone.allocated:
            raise TranslationError(
                f"node {profile.name}: zones[{zone.id}].allocated cannot be carried to a real "
                "kubelet (it holds exclusive resources only for pods that run on it)"
            )
        cpus = set(zone.cpus)
        if extra_cpu is not None and zone is profile.zones[0]:
            cpus.add(extra_cpu)
        out: dict[str, Any] = {"id": zone.id, "cpus": format_cpulist(cpus), "memory": zone.memory}
        out.update(zone.hugepages)
        if zone.devices:
            out["devices"] = {
                name: {"ids": list(ds.ids), "unhealthy": sorted(ds.unhealthy)}
                for name, ds in zone.devices.items()
            }
        if zone.distances:
            out["distances"] = list(zone.distances)
        zones.append(out)
    return zones


def for_real_kubelet(raw: Mapping[str, Any], *, name: str) -> dict[str, Any]:
    """``raw`` (a profile node, docs/profiles.md) as the profile of real-kubelet worker
    ``name``. Raises TranslationError for what cannot be carried."""
    original = _parse(raw)
    kubelet = copy.deepcopy(dict(raw.get("kubelet") or {}))
    cfg = original.kubelet
    base: dict[str, Any] = {
        k: copy.deepcopy(v)
        for k, v in raw.items()
        if k not in ("name", "shape", "zones", "kubelet", "foreignRequests")
    }
    shape = raw.get("shape")
    if shape is not None:
        topology = {k: shape[k] for k in _SHAPE_TOPOLOGY if k in shape}
        if topology:
            base["cpuTopology"] = topology
    extra_cpu: int | None = None
    if cfg.cpu_manager_policy == "static" and not cfg.reserved_cpus:
        threads = {len([c for c in original.cpu_topology.values() if c.core == core])
                   for core in {c.core for c in original.cpu_topology.values()}}  # fmt: skip
        if threads != {1}:
            raise TranslationError(
                f"node {original.name}: cannot add a reserved CPU to a node with SMT; give "
                "the scenario's node reservedSystemCPUs"
            )
        extra_cpu = max(original.cpu_topology) + 1
        kubelet["reservedSystemCPUs"] = str(extra_cpu)
    if cfg.memory_manager_policy == "Static" and not any(
        limits.get("memory", 0) for limits in cfg.reserved_memory.values()
    ):
        reserved = dict(kubelet.get("kubeReserved") or {})
        kube_memory = cfg.kube_reserved.get("memory", 0) + RESERVED_MEMORY
        reserved["memory"] = str(kube_memory)
        kubelet["kubeReserved"] = reserved
        # The profile parsed, so its systemReserved / kubeReserved / evictionHard memory
        # add up to its reservedMemory: none here.
        total = cfg.system_reserved.get("memory", 0) + kube_memory
        kubelet["reservedMemory"] = [
            {"numaNode": original.zones[0].id, "limits": {"memory": str(total)}}
        ]
    node = {"name": name, "kubelet": kubelet, **base, "zones": _zones(original, extra_cpu)}
    translated = _parse(node)
    # What the scenario counts on, checked rather than assumed.
    assert zone_allocatable(translated) == zone_allocatable(original), node
    assert _same_node_allocatable(original, translated), node
    return node


def _same_node_allocatable(original: NodeProfile, translated: NodeProfile) -> bool:
    """The Node's allocatable CPUs (whole) and memory are the scenario's."""
    before, after = node_allocatable(original), node_allocatable(translated)
    return (before["cpu"], before["memory"]) == (after["cpu"], after["memory"])
