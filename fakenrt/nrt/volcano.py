"""Volcano's ``Numatopology`` objects (``nodeinfo.volcano.sh/v1alpha1``) from a node
profile and the pods' allocations, as Volcano's resource-exporter writes them. Pure.

Volcano's scheduler (its ``numa-aware`` plugin) does not read NodeResourceTopology: it
reads one cluster-scoped ``Numatopology`` per node, named after it, that Volcano's node
agent ``resource-exporter`` (github.com/volcano-sh/resource-exporter) keeps up to date
from the kubelet's configuration, sysfs and the podresources API. The fields and what the
scheduler makes of them (``pkg/scheduler/cache/event_handlers.go`` ``getNumaInfo``,
``pkg/scheduler/plugins/numaaware``):

* ``spec.policies``: ``CPUManagerPolicy`` and ``TopologyManagerPolicy`` as the kubelet
  configuration spells them (the exporter's ``TryUpdatingResourceReservation``). The
  plugin considers a node only with the ``static`` CPU Manager, and only for pods whose
  ``volcano.sh/numa-topology-policy`` annotation equals the node's policy;
* ``spec.resReserved``: ``{"cpu": <quantity>}``, the kubelet's ``kubeReserved`` +
  ``systemReserved`` cpu (plus eviction thresholds, which reserve no cpu). The plugin takes
  that many CPUs (rounded up) by topology out of every node's free set - the exporter never
  reads ``reservedSystemCPUs``;
* ``spec.numares``: ``{"cpu": {"allocatable": <cpuset>, "capacity": <count>}}``. With the
  podresources API (the exporter's default, ``--enable-pod-resource=true``): every CPU of
  the online NUMA nodes minus the CPUs podresources ``List`` reports for any container
  (``GetFreeCPUListAndPodAllocationsByPodResources``) - reserved CPUs stay in it;
  ``capacity`` is the number of CPUs of the online NUMA nodes;
* ``spec.cpuDetail``: per CPU id (a string) ``numa``, ``socket`` and ``core`` from sysfs
  (``core_id``, ``physical_package_id``); Go's ``omitempty`` leaves zeros out;
* ``spec.podAllocations``: per pod with CPUs in ``List`` (name and namespace: podresources
  has no uid), its containers' ``{"cpu": <cpuset>}``, containers sorted by name, pods by
  namespace then name. The scheduler keeps a CPU set it assigned reserved until the pod
  shows up here (``NodeInfo.RefreshNumaSchedulerInfoByCrd``).

Only CPUs: the exporter reports no memory and no devices, and the plugin's one hint
provider is the CPU manager's. Regular init containers are not listed by podresources,
so their CPUs are not subtracted (as on a real node).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from exporter.cpulist import format_cpulist
from fakenrt.kubelet.allocation import INIT, PodAllocation
from fakenrt.profiles.model import NodeProfile

GROUP = "nodeinfo.volcano.sh"
VERSION = "v1alpha1"
PLURAL = "numatopologies"
KIND = "Numatopology"
API_VERSION = f"{GROUP}/{VERSION}"
CRD_NAME = f"{PLURAL}.{GROUP}"
#: The pod annotation naming the Topology Manager policy a pod must be aligned under.
POD_POLICY_ANNOTATION = "volcano.sh/numa-topology-policy"


def cpu_quantity(millis: int) -> str:
    """A cpu amount in millicores as Kubernetes' canonical quantity (``0``, ``500m``,
    ``2``)."""
    if millis % 1000 == 0:
        return str(millis // 1000)
    return f"{millis}m"


def listed_cpus(allocation: PodAllocation) -> dict[str, frozenset[int]]:
    """Container name -> CPUs, for the containers podresources ``List`` reports with CPUs
    (app containers and native sidecars; regular init containers are never listed)."""
    return {c.name: c.cpus for c in allocation.containers if c.kind != INIT and c.cpus}


def render_numatopology(
    profile: NodeProfile, allocations: Iterable[PodAllocation]
) -> dict[str, Any]:
    """The ``Numatopology`` object of ``profile`` while its pods hold ``allocations``
    (every pod holding resources on the node, foreign ones included). Pure."""
    kubelet = profile.kubelet
    every_cpu = frozenset(c for z in profile.zones for c in z.cpus)
    used: set[int] = set()
    pods: list[tuple[str, str, dict[str, frozenset[int]]]] = []
    for allocation in allocations:
        containers = listed_cpus(allocation)
        if not containers:
            continue
        for cpus in containers.values():
            used |= cpus
        pods.append((allocation.namespace, allocation.name, containers))
    reserved_millis = kubelet.system_reserved.get("cpu", 0) + kubelet.kube_reserved.get("cpu", 0)
    detail = {
        str(cpu): {
            key: value
            for key, value in (("numa", info.numa), ("socket", info.socket), ("core", info.core))
            if value  # Go's omitempty
        }
        for cpu, info in sorted(profile.cpu_topology.items())
    }
    spec: dict[str, Any] = {
        "policies": {
            "CPUManagerPolicy": kubelet.cpu_manager_policy,
            "TopologyManagerPolicy": kubelet.topology_manager_policy,
        },
        "resReserved": {"cpu": cpu_quantity(reserved_millis)},
        "numares": {
            "cpu": _omit_empty(
                {"allocatable": format_cpulist(every_cpu - used), "capacity": len(every_cpu)}
            )
        },
        "cpuDetail": detail,
    }
    if pods:  # Go's omitempty
        spec["podAllocations"] = [
            {
                "name": name,
                "namespace": namespace,
                "containerAllocations": [
                    {"name": container, "allocations": {"cpu": format_cpulist(cpus)}}
                    for container, cpus in sorted(containers.items())
                ],
            }
            for namespace, name, containers in sorted(pods)
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": profile.name},
        "spec": spec,
    }


def _omit_empty(fields: dict[str, Any]) -> dict[str, Any]:
    """What Go's ``omitempty`` leaves of a struct: no empty strings, no zeros."""
    return {k: v for k, v in fields.items() if v not in ("", 0)}
