"""render_koordlet_nrt: the NRT v1alpha1 koordlet writes (koordinator
``pkg/koordlet/statesinformer/impl/states_noderesourcetopology.go``; the annotations'
JSON field names are those of ``apis/extension``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakenrt.kubelet.allocation import INIT, ContainerAllocation, PodAllocation
from fakenrt.nrt.koordlet import (
    API_VERSION,
    BE_CPU_SHARED_POOLS,
    CPU_BASIC_INFO,
    CPU_MANAGER_POLICY,
    CPU_SHARED_POOLS,
    CPU_TOPOLOGY,
    NODE_RESERVATION,
    POD_CPU_ALLOCS,
    QOS_LABEL,
    RESOURCE_STATUS,
    SYSTEM_QOS_RESOURCE,
    KoordinatorPod,
    go_binary_quantity,
    koordinator_pod,
    render_koordlet_nrt,
)
from fakenrt.profiles import NodeProfile, parse_profiles

GI = 2**30


def _profile(kubelet: dict[str, Any] | None = None, **node: Any) -> NodeProfile:
    raw = {
        "name": "k1",
        "kubelet": {"topologyManagerPolicy": "single-numa-node", **(kubelet or {})},
        "shape": {
            "numaNodes": 2,
            "coresPerNumaNode": 2,
            "threadsPerCore": 2,
            "memoryPerNumaNode": "4Gi",
        },
        **node,
    }
    raw = {k: v for k, v in raw.items() if v is not None}
    (profile,) = parse_profiles({"nodes": [raw]}, source="t.yaml")
    return profile


def _pod(name: str, *containers: ContainerAllocation) -> PodAllocation:
    return PodAllocation("ns", name, f"uid-{name}", containers)


def _annotation(nrt: dict[str, Any], key: str) -> Any:
    return json.loads(nrt["metadata"]["annotations"][key])


def test_empty_node() -> None:
    # Zone 0 = CPUs 0,1,4,5 (cores 0, 1), zone 1 = 2,3,6,7 (cores 2, 3), one socket each.
    nrt = render_koordlet_nrt(_profile(), [], {})
    assert nrt["apiVersion"] == API_VERSION == "topology.node.k8s.io/v1alpha1"
    assert nrt["kind"] == "NodeResourceTopology"
    assert nrt["metadata"]["name"] == "k1"
    assert nrt["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "Koordinator"}
    assert nrt["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
    assert "attributes" not in nrt  # v1alpha1 has none
    four_gi = {"capacity": "4Gi", "allocatable": "4Gi", "available": "4Gi"}
    four = {"capacity": "4", "allocatable": "4", "available": "4"}
    zero = {"capacity": "0", "allocatable": "0", "available": "0"}
    assert nrt["zones"] == [
        {
            "name": f"node-{i}",
            "type": "Node",
            "resources": [
                {"name": "cpu", **four},
                {"name": "hugepages-1Gi", **zero},
                {"name": "hugepages-2Mi", **zero},
                {"name": "memory", **four_gi},
            ],
        }
        for i in (0, 1)
    ]
    annotations = nrt["metadata"]["annotations"]
    assert set(annotations) == {
        CPU_BASIC_INFO,
        CPU_TOPOLOGY,
        CPU_SHARED_POOLS,
        CPU_MANAGER_POLICY,
        BE_CPU_SHARED_POOLS,
        POD_CPU_ALLOCS,
        NODE_RESERVATION,
        SYSTEM_QOS_RESOURCE,
    }
    assert annotations[POD_CPU_ALLOCS] == "null"  # Go marshals a nil slice so
    assert annotations[NODE_RESERVATION] == annotations[SYSTEM_QOS_RESOURCE] == "{}"
    assert annotations[CPU_BASIC_INFO] == '{"hyperThreadEnabled":true}'
    assert _annotation(nrt, CPU_MANAGER_POLICY) == {"policy": "static"}
    assert _annotation(nrt, CPU_TOPOLOGY)["detail"][:3] == [
        {"id": 0, "core": 0, "socket": 0, "node": 0},
        {"id": 1, "core": 1, "socket": 0, "node": 0},
        {"id": 2, "core": 2, "socket": 1, "node": 1},
    ]
    assert [c["id"] for c in _annotation(nrt, CPU_TOPOLOGY)["detail"]] == list(range(8))
    pools = [
        {"socket": 0, "node": 0, "cpuset": "0-1,4-5"},
        {"socket": 1, "node": 1, "cpuset": "2-3,6-7"},
    ]
    assert _annotation(nrt, CPU_SHARED_POOLS) == _annotation(nrt, BE_CPU_SHARED_POOLS) == pools


@pytest.mark.parametrize(
    ("policy", "scope", "written"),
    [
        ("none", "container", "None"),
        ("best-effort", "container", "BestEffortContainerLevel"),
        ("best-effort", "pod", "BestEffortPodLevel"),
        ("restricted", "container", "RestrictedContainerLevel"),
        ("restricted", "pod", "RestrictedPodLevel"),
        ("single-numa-node", "container", "SingleNUMANodeContainerLevel"),
        ("single-numa-node", "pod", "SingleNUMANodePodLevel"),
    ],
)
def test_topology_policies_as_get_topology_policy_maps_them(
    policy: str, scope: str, written: str
) -> None:
    profile = _profile({"topologyManagerPolicy": policy, "topologyManagerScope": scope})
    assert render_koordlet_nrt(profile, [], {})["topologyPolicies"] == [written]


def test_pod_cpu_allocs_are_the_kubelets_exclusive_cpus_of_pods_koordinator_does_not_manage() -> (
    None
):
    allocations = [
        _pod("b", ContainerAllocation("main", frozenset({2, 6}))),
        # cpu_manager_state keeps init containers' CPUs too: every container counts.
        _pod(
            "a",
            ContainerAllocation("init", frozenset({0}), kind=INIT),
            ContainerAllocation("main", frozenset({4})),
        ),
        _pod("ls", ContainerAllocation("main", frozenset({1}))),  # QoS LS: Koordinator's
        _pod("pinned", ContainerAllocation("main", frozenset({3}))),  # Koordinator's cpuset
        _pod("unseen", ContainerAllocation("main", frozenset({7}))),  # no uid known
        _pod("shared", ContainerAllocation("main")),  # no exclusive CPU
    ]
    pods = {
        "ns/a": KoordinatorPod(uid="uid-2"),
        "ns/b": KoordinatorPod(uid="uid-1"),
        "ns/ls": KoordinatorPod(uid="uid-3", qos="LS"),
        "ns/pinned": KoordinatorPod(uid="uid-4", qos="LSR", cpuset=frozenset({3})),
        "ns/shared": KoordinatorPod(uid="uid-5"),
    }
    nrt = render_koordlet_nrt(_profile(), allocations, pods)
    assert _annotation(nrt, POD_CPU_ALLOCS) == [
        {"namespace": "ns", "name": "b", "uid": "uid-1", "cpuset": "2,6", "managedByKubelet": True},
        {"namespace": "ns", "name": "a", "uid": "uid-2", "cpuset": "0,4", "managedByKubelet": True},
    ]
    # Shared pools: every CPU but the kubelet's allocations above and Koordinator's cpusets
    # (the LS pod's CPU 1 and the unseen pod's 7 are not known to be anyone's).
    assert _annotation(nrt, CPU_SHARED_POOLS) == [
        {"socket": 0, "node": 0, "cpuset": "1,5"},
        {"socket": 1, "node": 1, "cpuset": "7"},
    ]
    # The zones never move: the scheduler subtracts what it knows itself.
    assert {r["available"] for z in nrt["zones"] for r in z["resources"] if r["name"] == "cpu"} == {
        "4"
    }


def test_lse_cpusets_also_leave_the_be_pools() -> None:
    pods = {
        "ns/lse": KoordinatorPod(uid="u1", qos="LSE", cpuset=frozenset({0, 4})),
        "ns/lsr": KoordinatorPod(uid="u2", qos="LSR", cpuset=frozenset({2})),
    }
    nrt = render_koordlet_nrt(_profile(), [], pods)
    assert _annotation(nrt, CPU_SHARED_POOLS) == [
        {"socket": 0, "node": 0, "cpuset": "1,5"},
        {"socket": 1, "node": 1, "cpuset": "3,6-7"},
    ]
    assert _annotation(nrt, BE_CPU_SHARED_POOLS) == [
        {"socket": 0, "node": 0, "cpuset": "1,5"},
        {"socket": 1, "node": 1, "cpuset": "3,6-7"},
    ]


@pytest.mark.parametrize(
    ("kubelet", "policy"),
    [
        pytest.param(
            {"kubeReserved": {"cpu": "1"}}, {"policy": "static", "reservedCPUs": "0"}, id="reserved"
        ),
        pytest.param(
            {"reservedSystemCPUs": "0,4", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}},
            {"policy": "static", "options": {"full-pcpus-only": "true"}, "reservedCPUs": "0,4"},
            id="options-and-list",
        ),
        pytest.param({"cpuManagerPolicy": "none"}, {"policy": "none"}, id="none"),
    ],
)
def test_kubelet_cpu_manager_policy(kubelet: dict[str, Any], policy: dict[str, Any]) -> None:
    nrt = render_koordlet_nrt(_profile(kubelet), [], {})
    assert _annotation(nrt, CPU_MANAGER_POLICY) == policy


def test_no_pod_cpu_allocs_without_the_static_policy() -> None:
    pods = {"ns/a": KoordinatorPod(uid="u")}
    nrt = render_koordlet_nrt(
        _profile({"cpuManagerPolicy": "none"}),
        [_pod("a", ContainerAllocation("main", frozenset({1})))],
        pods,
    )
    assert nrt["metadata"]["annotations"][POD_CPU_ALLOCS] == "null"


def test_memory_is_the_numa_nodes_memtotal_hugepages_and_reservations_included() -> None:
    profile = _profile(
        {
            "memoryManagerPolicy": "Static",
            "kubeReserved": {"memory": "1Gi"},
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}],
        },
        shape={
            "numaNodes": 2,
            "coresPerNumaNode": 1,
            "memoryPerNumaNode": "4Gi",
            "hugepagesPerNumaNode": {"hugepages-1Gi": "2Gi"},
        },
    )
    zones = render_koordlet_nrt(profile, [], {})["zones"]
    memory = [next(r for r in z["resources"] if r["name"] == "memory") for z in zones]
    hugepages = [next(r for r in z["resources"] if r["name"] == "hugepages-1Gi") for z in zones]
    assert [m["capacity"] for m in memory] == ["7Gi", "6Gi"]
    assert [h["capacity"] for h in hugepages] == ["0", "0"]  # HugePageReport is off


def test_koordlet_numbers_numa_nodes_from_zero() -> None:
    profile = _profile(
        shape=None,
        zones=[
            {"id": 0, "cpus": "0-1", "memory": "1Gi"},
            {"id": 2, "cpus": "2-3", "memory": "1Gi"},
        ],
    )
    zones = render_koordlet_nrt(profile, [], {})["zones"]
    assert [z["name"] for z in zones] == ["node-0", "node-1"]
    cpus = [next(r["capacity"] for r in z["resources"] if r["name"] == "cpu") for z in zones]
    assert cpus == ["2", "0"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (1000, "1k"),
        (1023, "1023"),
        (1024, "1Ki"),
        (1536, "1536"),
        (4 * GI, "4Gi"),
        (3 * 2**20, "3Mi"),
        (2**40 + 2**20, "1048577Mi"),
    ],
)
def test_go_binary_quantity(value: int, text: str) -> None:
    assert go_binary_quantity(value) == text


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        pytest.param({}, {}, KoordinatorPod(uid="u"), id="plain"),
        pytest.param({QOS_LABEL: "BE"}, {}, KoordinatorPod(uid="u", qos="BE"), id="qos"),
        pytest.param(
            {},
            {RESOURCE_STATUS: '{"cpuset":"0-1,4","numaNodeResources":[{"node":0}]}'},
            KoordinatorPod(uid="u", cpuset=frozenset({0, 1, 4})),
            id="cpuset",
        ),
        pytest.param({}, {RESOURCE_STATUS: "not json"}, KoordinatorPod(uid="u"), id="unreadable"),
        pytest.param({}, {RESOURCE_STATUS: '{"cpuset":"3-1"}'}, KoordinatorPod(uid="u"), id="bad"),
        pytest.param(
            {},
            {RESOURCE_STATUS: '{"cpuset":"0-999999999"}'},
            KoordinatorPod(uid="u"),
            id="hostile-size-never-expanded",
        ),
        pytest.param(
            {},
            {RESOURCE_STATUS: json.dumps({"cpuset": "1," * 5000})},
            KoordinatorPod(uid="u"),
            id="hostile-length",
        ),
    ],
)
def test_what_koordlet_reads_of_a_pod(
    labels: dict[str, str], annotations: dict[str, str], expected: KoordinatorPod
) -> None:
    assert koordinator_pod("u", labels, annotations) == expected
    assert expected.managed_by_koordinator is bool(expected.qos or expected.cpuset)
