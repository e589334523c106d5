"""NodeResourceTopology ``v1alpha1`` objects as Koordinator's node agent (koordlet) writes
them, from a node profile and the pods' allocations. Pure.

Koordinator's scheduler (its ``NodeNUMAResource`` plugin) reads the node's NRT through
``topology.node.k8s.io/v1alpha1`` and expects koordlet's content: koordlet's
``nodeTopoInformer`` (``pkg/koordlet/statesinformer/impl/states_noderesourcetopology.go``,
``calcNodeTopo``) writes

* ``topologyPolicies``: one value from the kubelet's Topology Manager policy and scope
  (``getTopologyPolicy``: ``SingleNUMANodeContainerLevel``, ``RestrictedPodLevel``, ...,
  ``None``). The scheduler maps only ``SingleNUMANodePodLevel``, ``Restricted`` and
  ``BestEffort`` to a NUMA policy (``convertToNUMATopologyPolicy`` in
  ``pkg/scheduler/plugins/nodenumaresource/topology_options.go``); every other value is
  ``None`` unless the Node carries the label ``node.koordinator.sh/numa-topology-policy``;
* ``zones``: ``node-<i>`` of type ``Node`` for i in 0..(number of NUMA nodes - 1), by
  name, each with ``cpu`` (every CPU of the NUMA node, reserved ones included),
  ``memory`` (the NUMA node's ``MemTotal`` - hugepages included, as the ``HugePageReport``
  feature is off by default), ``hugepages-1Gi`` and ``hugepages-2Mi`` (0 with that feature
  off), with ``capacity`` = ``allocatable`` = ``available`` (``ZoneResourcesToZoneList``):
  the scheduler counts use itself, from its own placements and the annotations below;
* annotations (``managedNRTAnnotationKeys``), JSON as Go marshals it:

  - ``node.koordinator.sh/cpu-topology``: every CPU's ``id``, ``core``, ``socket`` and
    ``node``, by id;
  - ``kubelet.koordinator.sh/cpu-manager-policy``: the CPU Manager ``policy``, its
    ``options`` and, with the static policy, its ``reservedCPUs``;
  - ``node.koordinator.sh/pod-cpu-allocs``: the exclusive CPUs the kubelet's CPU Manager
    gave each pod (its ``cpu_manager_state`` entries, every container including init
    ones, per pod uid), ``managedByKubelet: true``, by uid - except pods whose CPUs
    Koordinator manages (QoS class ``LS`` / ``BE``, or a ``cpuset`` in their
    ``scheduling.koordinator.sh/resource-status``: ``calGuaranteedCpu``); ``null`` when
    none. The scheduler holds these CPUs back (``NewTopologyOptions``);
  - ``node.koordinator.sh/cpu-shared-pools`` / ``be-cpu-shared-pools``: per NUMA node the
    CPUs left after those and after the cpusets of Koordinator's own placements (``LSE``
    pods' also out of the BE pools), by socket then node (``calCPUSharePools``);
  - ``node.koordinator.sh/cpu-basic-info`` (only ``hyperThreadEnabled``: a fake node has
    no CPU model, vendor or turbo state), ``node.koordinator.sh/reservation`` and
    ``node.koordinator.sh/system-qos-resource`` (``{}``: no Node annotation asks for them);
* the label ``app.kubernetes.io/managed-by: Koordinator``.

koordlet also reports GPUs and RDMA devices as Koordinator ``Device`` objects, which this
module does not write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.cpulist import format_cpulist, parse_cpulist
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.nrt.render import KIND, NRT_GROUP, legacy_topology_policy
from fakenrt.profiles.limits import MAX_CPUS
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.resources import zone_capacity

VERSION = "v1alpha1"
API_VERSION = f"{NRT_GROUP}/{VERSION}"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "Koordinator"
CPU_BASIC_INFO = "node.koordinator.sh/cpu-basic-info"
CPU_TOPOLOGY = "node.koordinator.sh/cpu-topology"
CPU_SHARED_POOLS = "node.koordinator.sh/cpu-shared-pools"
BE_CPU_SHARED_POOLS = "node.koordinator.sh/be-cpu-shared-pools"
CPU_MANAGER_POLICY = "kubelet.koordinator.sh/cpu-manager-policy"
POD_CPU_ALLOCS = "node.koordinator.sh/pod-cpu-allocs"
NODE_RESERVATION = "node.koordinator.sh/reservation"
SYSTEM_QOS_RESOURCE = "node.koordinator.sh/system-qos-resource"
#: What koordlet and Koordinator's scheduler read on a pod.
QOS_LABEL = "koordinator.sh/qosClass"
RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"
#: QoS classes whose CPUs koordlet leaves to Koordinator (``calGuaranteedCpu``).
_KOORDINATOR_QOS = ("LS", "BE")
#: The longest resource-status cpuset read: longer ones (and CPU ids beyond the profiles'
#: limit) are unreadable, never expanded.
_MAX_CPUSET_TEXT = 4096
_BINARY = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20))


@dataclass(frozen=True)
class KoordinatorPod:
    """What koordlet reads of a pod's object besides the kubelet's state: its uid, its
    Koordinator QoS class (label ``koordinator.sh/qosClass``) and the cpuset Koordinator's
    scheduler gave it (``scheduling.koordinator.sh/resource-status``)."""

    uid: str
    qos: str = ""
    cpuset: frozenset[int] = frozenset()

    @property
    def managed_by_koordinator(self) -> bool:
        """Its CPUs are Koordinator's to manage, not the kubelet's."""
        return self.qos in _KOORDINATOR_QOS or bool(self.cpuset)


def koordinator_pod(
    uid: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> KoordinatorPod:
    """A pod as koordlet sees it; an unreadable resource-status counts as no cpuset (koordlet
    logs it and goes on)."""
    return KoordinatorPod(
        uid=uid,
        qos=labels.get(QOS_LABEL, ""),
        cpuset=_status_cpuset(annotations.get(RESOURCE_STATUS)),
    )


def _status_cpuset(raw: str | None) -> frozenset[int]:
    """The ``cpuset`` of a resource-status annotation; empty when absent or unreadable -
    including a cpuset too long or naming a CPU id no node can have (bounded before it is
    expanded)."""
    if not raw or len(raw) > _MAX_CPUSET_TEXT:
        return frozenset()
    try:
        status = json.loads(raw)
    except ValueError:
        return frozenset()
    text = status.get("cpuset") if isinstance(status, dict) else None
    if not isinstance(text, str) or any(int(n) >= MAX_CPUS for n in re.findall(r"[0-9]+", text)):
        return frozenset()
    try:
        return parse_cpulist(text)
    except ValueError:
        return frozenset()


def go_binary_quantity(value: int) -> str:
    """A byte count as Go's ``resource.Quantity`` prints a ``BinarySI`` one: values below
    1024 in decimal form, else the largest power-of-1024 suffix that divides it."""
    if value < 1024:
        return f"{value // 1000}k" if value and value % 1000 == 0 else str(value)
    for suffix, factor in _BINARY:
        if value % factor == 0:
            return f"{value // factor}{suffix}"
    return f"{value // 1024}Ki" if value % 1024 == 0 else str(value)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def render_koordlet_nrt(
    profile: NodeProfile,
    allocations: Iterable[PodAllocation],
    pods: Mapping[str, KoordinatorPod],
) -> dict[str, Any]:
    """The NRT object koordlet writes for ``profile`` while its pods hold ``allocations``
    (every pod holding resources on the node, foreign ones included); ``pods``: what
    koordlet reads of the objects of the pods on the node, by ``namespace/name`` (a pod
    missing there has no uid koordlet could match: it is left out of ``pod-cpu-allocs``,
    as the scheduler drops an entry without uid). Pure."""
    kubelet = profile.kubelet
    static = kubelet.cpu_manager_policy == "static"
    topology = profile.cpu_topology
    shared = set(topology)
    allocs: list[dict[str, Any]] = []
    for allocation in allocations:
        pod = pods.get(allocation.key)
        if not static or pod is None or not pod.uid or pod.managed_by_koordinator:
            continue
        cpus = frozenset(c for container in allocation.containers for c in container.cpus)
        if not cpus:
            continue
        shared -= cpus
        allocs.append(
            {
                "namespace": allocation.namespace,
                "name": allocation.name,
                "uid": pod.uid,
                "cpuset": format_cpulist(cpus),
                "managedByKubelet": True,
            }
        )
    allocs.sort(key=lambda a: str(a["uid"]))
    for pod in pods.values():
        shared -= pod.cpuset
    be_shared = set(shared)
    for pod in pods.values():
        if pod.qos == "LSE":
            be_shared -= pod.cpuset
    policy: dict[str, Any] = {"policy": kubelet.cpu_manager_policy}
    if kubelet.cpu_policy_options:
        policy["options"] = dict(sorted(kubelet.cpu_policy_options.items()))
    if static and kubelet.reserved_cpus:
        policy["reservedCPUs"] = format_cpulist(kubelet.reserved_cpus)
    basic = {"hyperThreadEnabled": True} if _threads_per_core(profile) > 1 else {}
    annotations = {
        CPU_BASIC_INFO: _json(basic),
        CPU_TOPOLOGY: _json(
            {
                "detail": [
                    {"id": cpu, "core": info.core, "socket": info.socket, "node": info.numa}
                    for cpu, info in sorted(topology.items())
                ]
            }
        ),
        CPU_SHARED_POOLS: _json(_pools(profile, shared)),
        CPU_MANAGER_POLICY: _json(policy),
        BE_CPU_SHARED_POOLS: _json(_pools(profile, be_shared)),
        POD_CPU_ALLOCS: _json(allocs or None),
        NODE_RESERVATION: _json({}),
        SYSTEM_QOS_RESOURCE: _json({}),
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": profile.name,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": annotations,
        },
        "topologyPolicies": [
            legacy_topology_policy(kubelet.topology_manager_policy, kubelet.topology_manager_scope)
        ],
        "zones": _zones(profile),
    }


def _threads_per_core(profile: NodeProfile) -> int:
    per_core: dict[int, int] = {}
    for info in profile.cpu_topology.values():
        per_core[info.core] = per_core.get(info.core, 0) + 1
    return max(per_core.values(), default=1)


def _pools(profile: NodeProfile, cpus: set[int]) -> list[dict[str, Any]] | None:
    """``covertCPUsToSharePool``: per NUMA node holding any of ``cpus``, its socket, node
    and cpuset, by socket then node; None (``null``) when no CPU is left."""
    by_node: dict[int, list[int]] = {}
    for cpu in cpus:
        by_node.setdefault(profile.cpu_topology[cpu].numa, []).append(cpu)
    keyed = sorted(
        (profile.cpu_topology[min(members)].socket, node, format_cpulist(members))
        for node, members in by_node.items()
    )
    pools = [{"socket": socket, "node": node, "cpuset": text} for socket, node, text in keyed]
    return pools or None


def _zones(profile: NodeProfile) -> list[dict[str, Any]]:
    """``calTopologyZoneList``: koordlet numbers NUMA nodes 0..n-1 (a machine whose NUMA
    ids skip a number gets zones for the low ids only, as koordlet gives it)."""
    capacity = zone_capacity(profile)
    zones = []
    for index in range(len(profile.zones)):
        amounts = capacity.get(index, {})
        memory = amounts.get("memory", 0) + sum(
            v for k, v in amounts.items() if k.startswith("hugepages-")
        )
        values = {
            "cpu": str(amounts.get("cpu", 0)),
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": go_binary_quantity(memory),
        }
        zones.append(
            {
                "name": f"node-{index}",
                "type": "Node",
                "resources": [
                    {"name": name, "capacity": value, "allocatable": value, "available": value}
                    for name, value in sorted(values.items())
                ],
            }
        )
    zones.sort(key=lambda z: str(z["name"]))
    return zones
