"""What a pod asks each kubelet hint provider to align, per Topology Manager scope. Pure.

The gate, resource by resource, as the kubelet applies it:

* ``cpu`` - the static CPU Manager gives exclusive CPUs only to containers of Guaranteed
  pods whose CPU request is a whole number (``guaranteedCPUs`` in
  ``pkg/kubelet/cm/cpumanager/policy_static.go``); a fractional request has no NUMA
  preference, so its CPU is not aligned.
* ``memory`` and ``hugepages-*`` - the static Memory Manager, Guaranteed pods only, all
  memory types sized together under one NUMA mask
  (``pkg/kubelet/cm/memorymanager/policy_static.go``).
* device resources - any QoS class, when the device plugin reports NUMA affinity (NRT
  reports them per zone), from container limits
  (``pkg/kubelet/cm/devicemanager/topology_hints.go``).

A resource takes part only if some NRT zone reports it and it is not in ``ignoreList``;
memory types go together: once one is aligned, every memory type the pod requests is
(a type no zone reports then cannot be satisfied, as on the kubelet).

Container scope walks init containers (sidecars included) in order, then app containers,
as ``scope_container.go`` does. Pod scope asks once with the pod-level totals each
provider computes (init containers and native sidecars as in upstream ``PodRequests``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from fakenrt.kubelet.provider_memory import NotInt64Error, container_memory_requests
from fakenrt.podspec import ContainerSpec, PodSpec, QOSClass, pod_level, qos_class
from fakenrt.scheduler.placement import is_memory_type

#: Resources that are never device-plugin resources.
NON_DEVICE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods", "storage"})


def is_device_resource(resource: str) -> bool:
    return resource not in NON_DEVICE_RESOURCES and not is_memory_type(resource)


class UnitKind(StrEnum):
    INIT = "init"
    SIDECAR = "sidecar"
    APP = "app"
    POD = "pod"


@dataclass(frozen=True)
class AlignmentUnit:
    """One Topology Manager admission step: a container (container scope) or the whole pod
    (pod scope, ``container`` None). Zero / missing amounts mean "no NUMA preference"."""

    container: str | None
    kind: UnitKind
    cpu: int = 0
    memory: Mapping[str, int] = field(default_factory=dict)
    devices: Mapping[str, int] = field(default_factory=dict)
    #: Pod scope only: (container, kind, memory request) of every container asking for
    #: memory, init containers first: each allocates its own memory inside the pod's mask.
    container_memory: tuple[tuple[str, UnitKind, Mapping[str, int]], ...] = ()

    @property
    def empty(self) -> bool:
        return self.cpu == 0 and not self.memory and not self.devices

    def amounts(self) -> dict[str, int]:
        out: dict[str, int] = dict(self.devices)
        out.update(self.memory)
        if self.cpu:
            out["cpu"] = self.cpu
        return out

    @property
    def label(self) -> str:
        return "pod" if self.container is None else f"container {self.container}"


def _whole(value: Decimal) -> int | None:
    return int(value) if value == value.to_integral_value() else None


def _guaranteed_cpus(container: ContainerSpec, guaranteed: bool) -> int:
    if not guaranteed:
        return 0
    whole = _whole(container.requests.get("cpu", Decimal(0)))
    return whole if whole is not None and whole > 0 else 0


def _memory(
    container: ContainerSpec, guaranteed: bool, relevant: frozenset[str], ignore: frozenset[str]
) -> dict[str, int]:
    """Every memory type the container requests, once the Memory Manager aligns memory at
    all on this node (some memory type is relevant): it sizes all types together, and a
    type no zone reports has nothing to give (the kubelet then fails the pod). A request
    that is not a whole number of bytes gives no hints (no preference), as the Memory
    Manager's; :func:`memory_failure` then fails the pod."""
    if not guaranteed or not any(is_memory_type(r) for r in relevant):
        return {}
    try:
        requested = container_memory_requests(container)
    except NotInt64Error:
        return {}
    return {name: v for name, v in requested.items() if name not in ignore and v > 0}


def memory_failure(pod: PodSpec, *, reported: frozenset[str], ignore: frozenset[str]) -> str | None:
    """Why the kubelet fails ``pod`` outright whatever the Topology Manager decides, when
    the node's Memory Manager aligns memory (some memory type is relevant): its
    ``Allocate`` runs for every container of a Guaranteed pod under every policy and fails
    (``UnexpectedAdmissionError``) on a request that is not a whole number of bytes
    (``1.1Gi``). The same rule as the simulator's
    (:func:`fakenrt.kubelet.provider_memory.container_memory_requests`)."""
    relevant = relevant_resources(reported, ignore)
    if qos_class(pod) != QOSClass.GUARANTEED or not any(is_memory_type(r) for r in relevant):
        return None
    for c in (*pod.init_containers, *pod.containers):
        try:
            container_memory_requests(c)
        except NotInt64Error as exc:
            return f"memory manager: container {c.name}: {exc} (UnexpectedAdmissionError)"
    return None


def _devices(container: ContainerSpec, relevant: frozenset[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in container.limits.items():
        if is_device_resource(name) and name in relevant and value > 0:
            out[name] = int(value)
    return out


def alignment_units(
    pod: PodSpec, *, reported: frozenset[str], ignore: frozenset[str], pod_scope: bool
) -> tuple[AlignmentUnit, ...]:
    """The admission steps for ``pod`` given the resources some zone reports and the
    ``ignoreList``. Container scope keeps one unit per container in the kubelet's order,
    including units asking for nothing (they align and reuse nothing; the walk skips
    them)."""
    relevant = relevant_resources(reported, ignore)
    guaranteed = qos_class(pod) == QOSClass.GUARANTEED
    cpu_relevant = "cpu" in relevant

    def unit(c: ContainerSpec, kind: UnitKind) -> AlignmentUnit:
        return AlignmentUnit(
            container=c.name,
            kind=kind,
            cpu=_guaranteed_cpus(c, guaranteed) if cpu_relevant else 0,
            memory=_memory(c, guaranteed, relevant, ignore),
            devices=_devices(c, relevant),
        )

    units = [
        unit(c, UnitKind.SIDECAR if c.restartable else UnitKind.INIT) for c in pod.init_containers
    ]
    units += [unit(c, UnitKind.APP) for c in pod.containers]
    if not pod_scope:
        return tuple(units)
    inits = [u for u in units if u.kind in (UnitKind.INIT, UnitKind.SIDECAR)]
    apps = [u for u in units if u.kind == UnitKind.APP]
    cpu = pod_level(
        ((u.kind == UnitKind.SIDECAR, {"cpu": u.cpu}) for u in inits),
        ({"cpu": u.cpu} for u in apps),
    ).get("cpu", 0)
    devices = pod_level(
        ((u.kind == UnitKind.SIDECAR, u.devices) for u in inits), (u.devices for u in apps)
    )
    memory = pod_level(
        ((u.kind == UnitKind.SIDECAR, u.memory) for u in inits), (u.memory for u in apps)
    )
    # The Memory Manager's pod-level sizing keeps only the types app containers request.
    app_types = {name for u in apps for name in u.memory}
    memory = {k: v for k, v in memory.items() if k in app_types}
    per_container = tuple((u.container or "", u.kind, dict(u.memory)) for u in units if u.memory)
    return (
        AlignmentUnit(
            container=None,
            kind=UnitKind.POD,
            cpu=cpu,
            memory=memory,
            devices=devices,
            container_memory=per_container,
        ),
    )


def relevant_resources(reported: frozenset[str], ignore: frozenset[str]) -> frozenset[str]:
    """Resources some zone reports, minus the ignore list."""
    return reported - ignore
