"""The publisher's pure mapping, as tables: machine files, kubelet configuration, and
podresources answers -> per-zone capacity / allocatable / available and the object."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from fakenrt.nrt.fingerprint import fingerprint_keys
from fakenrt.nrt.render import NodePolicies
from fakenrt.nrtpub.compute import Observation, compute_nrt, zone_amounts
from fakenrt.nrtpub.kubeletconfig import (
    KubeletConfigError,
    PublisherKubeletConfig,
    parse_kubelet_config,
)
from fakenrt.nrtpub.machine import (
    Machine,
    MachineError,
    NodeFiles,
    NumaNode,
    parse_machine,
)

GI = 1 << 30
MI = 1 << 20
PAGE_2M = 2 * MI


def machine(pages: int = 0) -> Machine:
    """Two nodes of 4 CPUs, 8Gi MemTotal each (``pages`` 2Mi hugepages each included)."""
    return Machine(
        (
            NumaNode(0, frozenset({0, 1, 2, 3}), (10, 21), 8 * GI, {PAGE_2M: pages}),
            NumaNode(1, frozenset({4, 5, 6, 7}), (21, 10), 8 * GI, {PAGE_2M: pages}),
        )
    )


def config(
    cpu: str = "static", memory: str = "Static", reserved: str = ""
) -> PublisherKubeletConfig:
    return parse_kubelet_config(
        {
            "topologyManagerPolicy": "single-numa-node",
            "cpuManagerPolicy": cpu,
            "memoryManagerPolicy": memory,
            "reservedSystemCPUs": reserved,
        }
    )


def gpu(device: str, *numa: int) -> DeviceAssignment:
    return DeviceAssignment("nvidia.com/gpu", (device,), numa)


def mem(size: int, *numa: int, kind: str = "memory") -> MemoryBlock:
    return MemoryBlock(kind, size, numa)


STATIC_ALLOCATABLE = AllocatableResources(
    cpu_ids=(1, 2, 3, 4, 5, 6, 7),
    devices=(
        gpu("G0", 0),
        gpu("G1", 0),
        gpu("G2", 1),
        gpu(
            "N",
        ),
    ),
    memory=(mem(7 * GI, 0), mem(8 * GI, 1)),
)


def pod(name: str, **container: Any) -> PodResources:
    return PodResources("ns", name, (ContainerResources("c", **container),))


def table(obs: Observation) -> dict[int, dict[str, tuple[int, int, int]]]:
    """zone -> resource -> (capacity, allocatable, available)."""
    a = zone_amounts(obs)
    return {
        z: {
            r: (
                cap,
                a.allocatable[z].get(r, 0),
                max(0, a.allocatable[z].get(r, 0) - a.held[z].get(r, 0)),
            )
            for r, cap in a.capacity[z].items()
        }
        for z in a.capacity
    }


@pytest.mark.parametrize(
    ("obs", "want"),
    [
        pytest.param(
            Observation(machine(), config(reserved="0"), STATIC_ALLOCATABLE, ()),
            {
                0: {
                    "cpu": (4, 3, 3),
                    "memory": (8 * GI, 7 * GI, 7 * GI),
                    "nvidia.com/gpu": (2, 2, 2),
                },
                1: {
                    "cpu": (4, 4, 4),
                    "memory": (8 * GI, 8 * GI, 8 * GI),
                    "nvidia.com/gpu": (1, 1, 1),
                },
            },
            id="static: allocatable from GetAllocatableResources, capacity from sysfs",
        ),
        pytest.param(
            Observation(
                machine(),
                config(reserved="0"),
                STATIC_ALLOCATABLE,
                (pod("a", cpu_ids=(1, 2), devices=(gpu("G1", 0), gpu("N")), memory=(mem(GI, 0),)),),
            ),
            {
                0: {
                    "cpu": (4, 3, 1),
                    "memory": (8 * GI, 7 * GI, 6 * GI),
                    "nvidia.com/gpu": (2, 2, 1),
                },
                1: {
                    "cpu": (4, 4, 4),
                    "memory": (8 * GI, 8 * GI, 8 * GI),
                    "nvidia.com/gpu": (1, 1, 1),
                },
            },
            id="held: cpu ids, devices with a NUMA node, single-node blocks",
        ),
        pytest.param(
            Observation(
                machine(), config("none", "None", reserved="0,4"), AllocatableResources(), ()
            ),
            {
                0: {"cpu": (4, 3, 3), "memory": (8 * GI, 8 * GI, 8 * GI)},
                1: {"cpu": (4, 3, 3), "memory": (8 * GI, 8 * GI, 8 * GI)},
            },
            id="none / None: nothing allocatable reported; capacity minus reservedSystemCPUs",
        ),
        pytest.param(
            Observation(
                machine(pages=512),
                config(),
                AllocatableResources(
                    cpu_ids=tuple(range(8)),
                    memory=(
                        mem(7 * GI, 0),
                        mem(7 * GI, 1),
                        mem(GI, 0, kind="hugepages-2Mi"),
                        mem(512 * MI, 1, kind="hugepages-2Mi"),
                    ),
                ),
                (pod("a", memory=(mem(3 * GI, 0, 1), mem(768 * MI, 0, 1, kind="hugepages-2Mi"))),),
            ),
            {
                0: {
                    "cpu": (4, 4, 4),
                    "memory": (7 * GI, 7 * GI, 4 * GI),
                    "hugepages-2Mi": (GI, GI, 256 * MI),
                },
                1: {
                    "cpu": (4, 4, 4),
                    "memory": (7 * GI, 7 * GI, 7 * GI),
                    "hugepages-2Mi": (GI, 512 * MI, 512 * MI),
                },
            },
            id="a group block fills node 0 first; hugepages out of MemTotal",
        ),
        pytest.param(
            Observation(
                machine(),
                config(),
                AllocatableResources(
                    cpu_ids=tuple(range(8)), memory=(mem(2 * GI, 0), mem(2 * GI, 1))
                ),
                (
                    pod("a", memory=(mem(3 * GI, 0, 1),)),
                    pod("b", memory=(mem(GI, 0, 1),)),
                ),
            ),
            {
                0: {"cpu": (4, 4, 4), "memory": (8 * GI, 2 * GI, 0)},
                1: {"cpu": (4, 4, 4), "memory": (8 * GI, 2 * GI, 0)},
            },
            id="several blocks of one group: filled in ascending order, each up to allocatable",
        ),
        pytest.param(
            Observation(
                machine(),
                config(),
                AllocatableResources(cpu_ids=(9,), devices=(gpu("G0", 7),)),
                (pod("a", cpu_ids=(9,), devices=(gpu("G0", 7),), memory=(mem(GI, 7),)),),
            ),
            {
                0: {"cpu": (4, 0, 0), "memory": (8 * GI, 0, 0)},
                1: {"cpu": (4, 0, 0), "memory": (8 * GI, 0, 0)},
            },
            id="CPUs, devices and blocks on NUMA nodes sysfs does not have are ignored",
        ),
    ],
)
def test_zone_amounts(obs: Observation, want: dict[int, dict[str, tuple[int, int, int]]]) -> None:
    assert table(obs) == want


def test_the_object_carries_policies_costs_and_the_exclusive_pods_fingerprint() -> None:
    obs = Observation(
        machine(),
        config(reserved="0"),
        STATIC_ALLOCATABLE,
        (
            pod("cpus", cpu_ids=(1,)),
            pod("shared"),
            pod("nogpu-numa", devices=(gpu("N"),)),
            pod("memory", memory=(mem(GI, 1),)),
        ),
    )
    obj = compute_nrt("n1", obs)
    assert obj["metadata"] == {"name": "n1"}
    assert obj["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
    assert [z["name"] for z in obj["zones"]] == ["node-0", "node-1"]
    assert obj["zones"][0]["costs"] == [
        {"name": "node-0", "value": 10},
        {"name": "node-1", "value": 21},
    ]
    assert [r["name"] for r in obj["zones"][0]["resources"]] == ["cpu", "memory", "nvidia.com/gpu"]
    attributes = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attributes == {
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "container",
        "cpuManagerPolicy": "static",
        "memoryManagerPolicy": "Static",
        "nodeTopologyPodsFingerprint": fingerprint_keys(["ns/cpus", "ns/nogpu-numa", "ns/memory"]),
        "nodeTopologyPodsFingerprintMethod": "with-exclusive-resources",
    }
    assert "topologyPolicies" not in compute_nrt("n1", obs, topology_policies=False)


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param({}, NodePolicies("none", "container", "none", "None"), id="kubelet defaults"),
        pytest.param(
            {
                "kind": "KubeletConfiguration",
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "topologyManagerPolicy": "restricted",
                "topologyManagerScope": "pod",
                "cpuManagerPolicy": "static",
                "memoryManagerPolicy": "Static",
                "maxPods": 50,
            },
            NodePolicies("restricted", "pod", "static", "Static"),
            id="given, other fields ignored",
        ),
    ],
)
def test_kubelet_config(doc: dict[str, Any], want: NodePolicies) -> None:
    assert parse_kubelet_config(doc).policies == want


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param([], "expected a KubeletConfiguration mapping, got list", id="not a mapping"),
        pytest.param({"kind": "Pod"}, "kind: expected KubeletConfiguration", id="kind"),
        pytest.param({"apiVersion": "v1"}, "apiVersion: expected kubelet.config", id="api"),
        pytest.param(
            {"cpuManagerPolicy": "Static"},
            "cpuManagerPolicy: 'Static' is not one of",
            id="cpu policy",
        ),
        pytest.param(
            {"topologyManagerScope": ["pod"]}, "topologyManagerScope: ['pod']", id="scope"
        ),
        pytest.param(
            {"reservedSystemCPUs": 0}, "reservedSystemCPUs: expected a cpulist", id="cpus type"
        ),
        pytest.param(
            {"reservedSystemCPUs": "0-99999999"}, "CPU ids must be below", id="hostile cpus"
        ),
        pytest.param({"reservedSystemCPUs": "3-1"}, "is not ascending", id="bad cpulist"),
    ],
)
def test_kubelet_config_errors_name_the_field(doc: Any, message: str) -> None:
    with pytest.raises(KubeletConfigError, match=None) as info:
        parse_kubelet_config(doc)
    assert message in str(info.value)


def _files(**overrides: Any) -> list[NodeFiles]:
    base: dict[str, Any] = {
        "id": 0,
        "where": "node0",
        "cpulist": "0-3\n",
        "distance": "10\n",
        "meminfo": "Node 0 MemTotal:  8388608 kB\nNode 0 MemFree: 1 kB\n",
        "hugepages": {PAGE_2M: "4\n"},
    }
    return [NodeFiles(**(base | overrides))]


def test_machine_files_parse() -> None:
    (node,) = parse_machine(_files()).nodes
    assert node == NumaNode(0, frozenset(range(4)), (10,), 8 * GI, {PAGE_2M: 4})
    assert node.memory == 8 * GI - 4 * PAGE_2M
    assert node.hugepage_bytes() == {"hugepages-2Mi": 4 * PAGE_2M}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param(
            {"cpulist": "0-9999999"}, "node0/cpulist: CPU ids must be below", id="hostile cpulist"
        ),
        pytest.param({"cpulist": "x"}, "node0/cpulist:", id="bad cpulist"),
        pytest.param(
            {"distance": "10 20\n"}, "node0/distance: 2 distances for 1 NUMA nodes", id="distance"
        ),
        pytest.param(
            {"meminfo": "MemTotal: 5 kB"}, "node0/meminfo: no 'Node <N> MemTotal", id="meminfo"
        ),
        pytest.param(
            {"meminfo": "Node 0 MemTotal: " + "9" * 30 + " kB"}, "node0/meminfo: ", id="huge"
        ),
        pytest.param(
            {"hugepages": {PAGE_2M: "-1"}}, "hugepages-2048kB: '-1' is not a count", id="pages"
        ),
    ],
)
def test_machine_errors_name_the_file(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(MachineError) as info:
        parse_machine(_files(**overrides))
    assert message in str(info.value)


def test_a_cpu_under_two_nodes_is_refused() -> None:
    files = [
        NodeFiles(0, "node0", "0-3", "10 20", "Node 0 MemTotal: 4 kB"),
        NodeFiles(1, "node1", "3-4", "20 10", "Node 1 MemTotal: 4 kB"),
    ]
    with pytest.raises(MachineError, match="node1/cpulist: CPU 3 is also listed under node0"):
        parse_machine(files)
