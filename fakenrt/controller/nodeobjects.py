"""The Node and Lease objects of a fake node, built from its profile. Pure.

A fake node carries two labels that mark it (see :data:`FAKE_NODE_LABEL`,
:data:`CONTROLLER_LABEL`); the controller only ever writes nodes that carry its own
controller label value, so two controllers (or a real cluster's nodes) never collide.
Capacity and allocatable come from ``fakenrt.profiles.resources`` (devices and hugepages
included). Addresses are deterministic per node index: node IPs from 100.64.0.0/10, a
pod CIDR ``10.<1 + i // 256>.<i % 256>.0/24`` per node.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from exporter.quantities import format_integer
from fakenrt import __version__
from fakenrt.controller.timestamps import micro_time, rfc3339
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.resources import node_allocatable, node_capacity

FAKE_NODE_LABEL = "fakenrt.io/fake-node"
CONTROLLER_LABEL = "fakenrt.io/controller"
TAINT_KEY = "fakenrt.io/fake-node"
LEASE_NAMESPACE = "kube-node-lease"
#: Annotation on a fake Node holding its simulated kubelet's Memory Manager checkpoint
#: (``memory_manager_state``), re-read when the controller starts.
MEMORY_STATE_ANNOTATION = "fakenrt.io/memory-manager-state"
KUBELET_VERSION = f"v1.36.0-fakenrt.{__version__}"
_NODE_NET = ipaddress.IPv4Network("100.64.0.0/10")


@dataclass(frozen=True)
class NodeIdentity:
    """Where a fake node sits in the controller's fleet: its profile order and addresses."""

    name: str
    index: int

    @cached_property
    def internal_ip(self) -> str:
        # Kept: every pod status the node writes carries it.
        return str(_NODE_NET.network_address + self.index + 1)

    @property
    def _pod_net(self) -> str:
        """The first three octets of this node's pod CIDR."""
        return f"10.{1 + self.index // 256}.{self.index % 256}"

    @property
    def pod_cidr(self) -> str:
        return f"{self._pod_net}.0/24"

    def pod_ip(self, host: int) -> str:
        """The ``host``-th address (2..254) of this node's pod CIDR."""
        return f"{self._pod_net}.{host}"

    def pod_host(self, ip: str) -> int | None:
        """The host number of ``ip`` in this node's pod CIDR; None when it lies outside."""
        net, _, host = ip.rpartition(".")
        return int(host) if net == self._pod_net and host.isdigit() else None


def owner_selector(controller: str) -> str:
    """Label selector for the nodes one controller owns."""
    return f"{FAKE_NODE_LABEL}=true,{CONTROLLER_LABEL}={controller}"


def is_owned(labels: Mapping[str, str] | None, controller: str) -> bool:
    """Whether a node with these labels belongs to ``controller``."""
    labels = labels or {}
    return labels.get(FAKE_NODE_LABEL) == "true" and labels.get(CONTROLLER_LABEL) == controller


def _quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    return {name: format_integer(v) for name, v in sorted(amounts.items())}


def node_labels(profile: NodeProfile, controller: str) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": profile.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "fakenrt",
    }
    labels.update(profile.labels)
    labels[FAKE_NODE_LABEL] = "true"
    labels[CONTROLLER_LABEL] = controller
    return labels


def owned_taint() -> dict[str, str]:
    """The taint that keeps pods without a toleration off the fake nodes."""
    return {"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}


#: Taints the node lifecycle controller derives from a NotReady / Unknown Ready condition
#: (the API server also adds ``not-ready`` to every new Node). This controller reports its
#: nodes Ready, so it clears them as the lifecycle controller would - which also makes the
#: nodes usable on a control plane without kube-controller-manager.
CONDITION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def merged_taints(current: Sequence[Mapping[str, Any]], *, taint: bool) -> list[dict[str, Any]]:
    """The node's taints with this controller's own taint set or removed as ``taint`` says,
    the condition taints of :data:`CONDITION_TAINTS` cleared, and every other taint (added
    by an operator or another controller) kept as it is."""
    dropped = (TAINT_KEY, *CONDITION_TAINTS)
    kept = [dict(t) for t in current if t.get("key") not in dropped]
    return [*kept, owned_taint()] if taint else kept


def node_object(
    profile: NodeProfile, identity: NodeIdentity, *, controller: str, taint: bool
) -> dict[str, Any]:
    """The Node's metadata and spec (what ``create`` sends; status is written separately)."""
    spec: dict[str, Any] = {"podCIDR": identity.pod_cidr, "podCIDRs": [identity.pod_cidr]}
    if taint:
        spec["taints"] = [owned_taint()]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": profile.name,
            "labels": node_labels(profile, controller),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
    }


#: The conditions a healthy kubelet reports: (type, status, reason, message).
_HEALTHY = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "fakenrt: simulated kubelet is posting ready status"),
)  # fmt: skip


def node_status(
    profile: NodeProfile,
    identity: NodeIdentity,
    *,
    at: float,
    since: float | None = None,
    not_ready: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The Node ``status`` a kubelet would report: capacity, allocatable, conditions
    (heartbeat ``at``; unchanged since ``since``, default ``at``). ``not_ready``
    (reason, message): the Ready condition is False with them."""
    since = at if since is None else since
    conditions = list(_HEALTHY)
    if not_ready is not None:
        conditions[-1] = ("Ready", "False", *not_ready)
    return {
        "capacity": _quantities(node_capacity(profile)),
        "allocatable": _quantities(node_allocatable(profile)),
        "conditions": [
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": rfc3339(at),
                "lastTransitionTime": rfc3339(since),
            }
            for kind, status, reason, message in conditions
        ],
        "addresses": [
            {"type": "InternalIP", "address": identity.internal_ip},
            {"type": "Hostname", "address": profile.name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": identity.name,
            "systemUUID": identity.name,
            "bootID": identity.name,
            "kernelVersion": "fakenrt",
            "osImage": "fakenrt simulated node",
            "containerRuntimeVersion": "fakenrt://" + __version__,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def lease_object(node: str, node_uid: str | None, *, at: float, duration_s: int) -> dict[str, Any]:
    """The node's Lease in kube-node-lease (owned by the Node, so it goes with it)."""
    meta: dict[str, Any] = {"name": node, "namespace": LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}
        ]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": duration_s,
            "renewTime": micro_time(at),
        },
    }
