"""The KubeletConfiguration (``kubelet.config.k8s.io/v1beta1``) of a profile node, for a
real kubelet v1.36. Pure.

Only the fields that decide NUMA admission and allocatable amounts are set; the rest is
left to the kubelet's (and Kind's) defaults. Eviction thresholds are written in full:
``memory.available`` is the profile's or ``0%`` (no threshold, as a profile without
``evictionHard`` means), and the disk signals are ``0%`` as Kind sets them, so that a
busy build machine's disk does not evict pods.
"""

from __future__ import annotations

from typing import Any

from exporter.cpulist import format_cpulist
from fakenrt.profiles.model import EvictionThreshold, NodeProfile
from fakenrt.realnode.machine import RenderError

API_VERSION = "kubelet.config.k8s.io/v1beta1"
#: Disk eviction signals switched off (Kind's own cluster config does the same).
_DISK_SIGNALS = ("nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree")


#: Every field :func:`kubelet_configuration` may set: a reconfigured kubelet takes these
#: from the new profile only (none of them may linger from an earlier one).
MANAGED_FIELDS = frozenset(
    {
        "failCgroupV1",
        "maxPods",
        "topologyManagerPolicy",
        "topologyManagerScope",
        "topologyManagerPolicyOptions",
        "cpuManagerPolicy",
        "cpuManagerPolicyOptions",
        "memoryManagerPolicy",
        "featureGates",
        "reservedSystemCPUs",
        "systemReserved",
        "kubeReserved",
        "evictionHard",
        "reservedMemory",
    }
)


def _quantity(name: str, amount: int) -> str:
    """A reservation value: ``cpu`` in millicores, the rest in bytes."""
    return f"{amount}m" if name == "cpu" else str(amount)


def _threshold(value: EvictionThreshold | None) -> str:
    if value is None:
        return "0%"
    if value.amount is not None:
        return str(value.amount)
    # The profile keeps the percentage as the kubelet's float32; repr() round-trips it.
    return f"{(value.percentage or 0.0) * 100:g}%"


def kubelet_configuration(profile: NodeProfile) -> dict[str, Any]:
    """The KubeletConfiguration document of ``profile``. Raises RenderError for a
    configuration the kubelet would refuse to start with."""
    cfg = profile.kubelet
    where = f"node {profile.name}: kubelet"
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "KubeletConfiguration",
        # kubelet >= 1.35 refuses cgroup v1 hosts unless told otherwise (a no-op on v2).
        "failCgroupV1": False,
        "maxPods": profile.max_pods,
        "topologyManagerPolicy": cfg.topology_manager_policy,
        "topologyManagerScope": cfg.topology_manager_scope,
        "cpuManagerPolicy": cfg.cpu_manager_policy,
        "memoryManagerPolicy": cfg.memory_manager_policy,
        "evictionHard": {"memory.available": _threshold(cfg.eviction_hard_memory)}
        | dict.fromkeys(_DISK_SIGNALS, "0%"),
    }
    if cfg.policy_options:
        doc["topologyManagerPolicyOptions"] = dict(cfg.policy_options)
    if cfg.cpu_policy_options:
        doc["cpuManagerPolicyOptions"] = dict(cfg.cpu_policy_options)
    if cfg.feature_gates:
        doc["featureGates"] = dict(cfg.feature_gates)
    system = dict(cfg.system_reserved)
    kube = dict(cfg.kube_reserved)
    if cfg.cpu_reservation_millis is None and cfg.reserved_cpus:
        # reservedSystemCPUs replaces the cpu of systemReserved / kubeReserved.
        doc["reservedSystemCPUs"] = format_cpulist(cfg.reserved_cpus)
    if cfg.cpu_manager_policy == "static" and not cfg.reserved_cpus:
        # cpu_manager.go NewManager: the static policy needs a non-zero cpu reservation.
        raise RenderError(
            f"{where}: the static CPU Manager policy needs reservedSystemCPUs or a cpu in "
            "systemReserved / kubeReserved (the kubelet refuses to start without)"
        )
    if system:
        doc["systemReserved"] = {k: _quantity(k, v) for k, v in sorted(system.items())}
    if kube:
        doc["kubeReserved"] = {k: _quantity(k, v) for k, v in sorted(kube.items())}
    if cfg.memory_manager_policy == "Static":
        if not any(limits.get("memory", 0) for limits in cfg.reserved_memory.values()):
            # policy_static.go NewPolicyStatic: "you should specify the system reserved memory"
            raise RenderError(
                f"{where}: memoryManagerPolicy Static needs reservedMemory with memory (and "
                "systemReserved / kubeReserved / evictionHard adding up to it)"
            )
        doc["reservedMemory"] = [
            {
                "numaNode": numa,
                "limits": {k: str(v) for k, v in sorted(limits.items())},
            }
            for numa, limits in sorted(cfg.reserved_memory.items())
        ]
    return doc
