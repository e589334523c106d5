"""The KubeletConfiguration of a profile node, and what a real kubelet would refuse."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.realnode.kubeletconfig import MANAGED_FIELDS, kubelet_configuration
from fakenrt.realnode.machine import RenderError

SHAPE = {"numaNodes": 2, "coresPerNumaNode": 2, "threadsPerCore": 2, "memoryPerNumaNode": "4Gi"}
DISKS_OFF = {
    "nodefs.available": "0%",
    "nodefs.inodesFree": "0%",
    "imagefs.available": "0%",
    "imagefs.inodesFree": "0%",
}


def _node(kubelet: dict[str, Any], **extra: Any) -> NodeProfile:
    raw = {"name": "n", "kubelet": kubelet, "shape": SHAPE, **extra}
    (profile,) = parse_profiles({"nodes": [raw]}, source="t.yaml")
    return profile


@pytest.mark.parametrize(
    ("kubelet", "extra", "expected"),
    [
        pytest.param(
            {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0,4"},
            {},
            {
                "topologyManagerPolicy": "none",
                "topologyManagerScope": "container",
                "cpuManagerPolicy": "static",
                "memoryManagerPolicy": "None",
                "reservedSystemCPUs": "0,4",
                "maxPods": 110,
                "evictionHard": {"memory.available": "0%", **DISKS_OFF},
            },
            id="defaults-no-eviction",
        ),
        pytest.param(
            {
                "topologyManagerPolicy": "single-numa-node",
                "topologyManagerScope": "pod",
                "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
                "cpuManagerPolicyOptions": {"full-pcpus-only": "true", "align-by-socket": "false"},
                "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                "memoryManagerPolicy": "Static",
                "systemReserved": {"cpu": "500m", "memory": "512Mi"},
                "kubeReserved": {"cpu": "1", "memory": "256Mi"},
                "evictionHard": {"memory.available": "256Mi"},
                "reservedMemory": [
                    {"numaNode": 0, "limits": {"memory": "512Mi"}},
                    {"numaNode": 1, "limits": {"memory": "512Mi"}},
                ],
            },
            {"maxPods": 20},
            {
                "topologyManagerPolicy": "single-numa-node",
                "topologyManagerScope": "pod",
                "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
                "cpuManagerPolicyOptions": {"full-pcpus-only": "true", "align-by-socket": "false"},
                "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                "memoryManagerPolicy": "Static",
                "systemReserved": {"cpu": "500m", "memory": str(512 * 1024**2)},
                "kubeReserved": {"cpu": "1000m", "memory": str(256 * 1024**2)},
                "evictionHard": {"memory.available": str(256 * 1024**2), **DISKS_OFF},
                "reservedMemory": [
                    {"numaNode": 0, "limits": {"memory": str(512 * 1024**2)}},
                    {"numaNode": 1, "limits": {"memory": str(512 * 1024**2)}},
                ],
                "maxPods": 20,
                # the cpu reservation comes from systemReserved + kubeReserved
                "reservedSystemCPUs": None,
            },
            id="everything-cpu-from-reservations",
        ),
        pytest.param(
            {
                "memoryManagerPolicy": "None",
                "reservedSystemCPUs": "0",
                "evictionHard": {"memory.available": "10%"},
            },
            {},
            {"evictionHard": {"memory.available": "10%", **DISKS_OFF}},
            id="eviction-percentage",
        ),
        pytest.param(
            {"cpuManagerPolicy": "none", "memoryManagerPolicy": "None"},
            {},
            {"cpuManagerPolicy": "none", "reservedSystemCPUs": None},
            id="cpu-none-needs-no-reservation",
        ),
    ],
)
def test_configuration(
    kubelet: dict[str, Any], extra: dict[str, Any], expected: dict[str, Any]
) -> None:
    doc = kubelet_configuration(_node(kubelet, **extra))
    assert doc["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
    assert doc["kind"] == "KubeletConfiguration"
    assert doc["failCgroupV1"] is False
    assert {k: doc.get(k) for k in expected} == expected
    assert set(doc) - {"apiVersion", "kind"} <= MANAGED_FIELDS


@pytest.mark.parametrize(
    ("kubelet", "message"),
    [
        pytest.param(
            {"memoryManagerPolicy": "None"},
            "node n: kubelet: the static CPU Manager policy needs reservedSystemCPUs",
            id="static-cpu-without-reservation",
        ),
        pytest.param(
            {"reservedSystemCPUs": "0"},
            "node n: kubelet: memoryManagerPolicy Static needs reservedMemory",
            id="static-memory-without-reservation",
        ),
    ],
)
def test_configurations_the_kubelet_refuses(kubelet: dict[str, Any], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        kubelet_configuration(_node(kubelet))
