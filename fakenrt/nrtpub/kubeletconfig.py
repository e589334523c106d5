"""The kubelet settings the publisher needs, from a KubeletConfiguration document. Pure.

Read from the kubelet's own configuration file (``/var/lib/kubelet/config.yaml`` on a
kubeadm / Kind node, ``kubelet.config.k8s.io/v1beta1``): the Topology Manager policy and
scope, the CPU and Memory Manager policies - with the kubelet's defaults (``none``,
``container``, ``none``, ``None``) for fields the file leaves out - and
``reservedSystemCPUs``. Every other field is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fakenrt.nrt.render import NodePolicies
from fakenrt.nrtpub.machine import MachineError, parse_cpus
from fakenrt.profiles.model import CPU_MANAGER_POLICIES, MEMORY_MANAGER_POLICIES, POLICIES, SCOPES

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"
#: The kubelet's defaults (``pkg/kubelet/apis/config/v1beta1/defaults.go``).
DEFAULTS = {
    "topologyManagerPolicy": "none",
    "topologyManagerScope": "container",
    "cpuManagerPolicy": "none",
    "memoryManagerPolicy": "None",
}
_ALLOWED = {
    "topologyManagerPolicy": POLICIES,
    "topologyManagerScope": SCOPES,
    "cpuManagerPolicy": CPU_MANAGER_POLICIES,
    "memoryManagerPolicy": MEMORY_MANAGER_POLICIES,
}


class KubeletConfigError(ValueError):
    """The document is not a KubeletConfiguration the publisher can use; the message
    names the field."""


@dataclass(frozen=True)
class PublisherKubeletConfig:
    policies: NodePolicies
    #: ``reservedSystemCPUs`` (empty when not given).
    reserved_cpus: frozenset[int] = frozenset()


def parse_kubelet_config(doc: Any) -> PublisherKubeletConfig:
    """The settings from a parsed YAML document. Raises KubeletConfigError."""
    if not isinstance(doc, Mapping):
        raise KubeletConfigError(
            f"expected a KubeletConfiguration mapping, got {type(doc).__name__}"
        )
    kind = doc.get("kind", KIND)
    if kind != KIND:
        raise KubeletConfigError(f"kind: expected {KIND}, got {kind!r}")
    api = doc.get("apiVersion", API_VERSION)
    if api != API_VERSION:
        raise KubeletConfigError(f"apiVersion: expected {API_VERSION}, got {api!r}")
    values: dict[str, str] = {}
    for name, default in DEFAULTS.items():
        raw = doc.get(name)
        value = default if raw is None or raw == "" else raw
        if value not in _ALLOWED[name]:
            raise KubeletConfigError(f"{name}: {value!r} is not one of {', '.join(_ALLOWED[name])}")
        values[name] = value
    raw_cpus = doc.get("reservedSystemCPUs")
    if raw_cpus is None:
        raw_cpus = ""
    if not isinstance(raw_cpus, str):
        raise KubeletConfigError(f"reservedSystemCPUs: expected a cpulist string, got {raw_cpus!r}")
    try:
        reserved = parse_cpus(raw_cpus, "reservedSystemCPUs")
    except MachineError as exc:
        raise KubeletConfigError(str(exc)) from None
    return PublisherKubeletConfig(
        policies=NodePolicies(
            topology_manager_policy=values["topologyManagerPolicy"],
            topology_manager_scope=values["topologyManagerScope"],
            cpu_manager_policy=values["cpuManagerPolicy"],
            memory_manager_policy=values["memoryManagerPolicy"],
        ),
        reserved_cpus=reserved,
    )
