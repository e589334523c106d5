"""render_numatopology: Volcano's Numatopology as its resource-exporter writes it (field
names and shapes of volcano.sh/apis nodeinfo/v1alpha1 ``NumatopoSpec``)."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.kubelet.allocation import INIT, SIDECAR, ContainerAllocation, PodAllocation
from fakenrt.nrt.volcano import API_VERSION, KIND, cpu_quantity, render_numatopology
from fakenrt.profiles import NodeProfile, parse_profiles


def _profile(kubelet: dict[str, Any] | None = None, **shape: Any) -> NodeProfile:
    node = {
        "name": "v1",
        "kubelet": {"topologyManagerPolicy": "single-numa-node", **(kubelet or {})},
        "shape": {
            "numaNodes": 2,
            "coresPerNumaNode": 2,
            "threadsPerCore": 2,
            "memoryPerNumaNode": "4Gi",
            **shape,
        },
    }
    (profile,) = parse_profiles({"nodes": [node]}, source="t.yaml")
    return profile


def _pod(name: str, *containers: ContainerAllocation, namespace: str = "ns") -> PodAllocation:
    return PodAllocation(namespace, name, f"uid-{name}", containers)


def test_empty_node_every_field_the_scheduler_reads() -> None:
    # Two zones of 2 cores x 2 threads: zone 0 = CPUs 0,1,4,5, zone 1 = 2,3,6,7.
    body = render_numatopology(_profile(), [])
    assert body["apiVersion"] == API_VERSION == "nodeinfo.volcano.sh/v1alpha1"
    assert body["kind"] == KIND == "Numatopology"
    assert body["metadata"] == {"name": "v1"}
    assert body["spec"] == {
        "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
        "resReserved": {"cpu": "0"},
        "numares": {"cpu": {"allocatable": "0-7", "capacity": 8}},
        # numa / socket / core are omitempty in Go: zeros are left out.
        "cpuDetail": {
            "0": {},
            "1": {"core": 1},
            "2": {"numa": 1, "socket": 1, "core": 2},
            "3": {"numa": 1, "socket": 1, "core": 3},
            "4": {},
            "5": {"core": 1},
            "6": {"numa": 1, "socket": 1, "core": 2},
            "7": {"numa": 1, "socket": 1, "core": 3},
        },
    }


def test_free_cpus_and_pod_allocations_are_what_podresources_lists() -> None:
    allocations = [
        _pod("b", ContainerAllocation("main", frozenset({2, 6}))),
        _pod(
            "a",
            # A regular init container is never listed by podresources: its CPU stays free.
            ContainerAllocation("setup", frozenset({3}), kind=INIT),
            ContainerAllocation("zeta", frozenset({0})),
            ContainerAllocation("proxy", frozenset({1, 4}), kind=SIDECAR),
        ),
        _pod("shared", ContainerAllocation("main")),  # no exclusive CPU: not listed
        _pod("c", ContainerAllocation("main", frozenset({5})), namespace="early"),
    ]
    spec = render_numatopology(_profile(), allocations)["spec"]
    assert spec["numares"] == {"cpu": {"allocatable": "3,7", "capacity": 8}}
    assert spec["podAllocations"] == [
        {
            "name": "c",
            "namespace": "early",
            "containerAllocations": [{"name": "main", "allocations": {"cpu": "5"}}],
        },
        {
            "name": "a",
            "namespace": "ns",
            "containerAllocations": [
                {"name": "proxy", "allocations": {"cpu": "1,4"}},
                {"name": "zeta", "allocations": {"cpu": "0"}},
            ],
        },
        {
            "name": "b",
            "namespace": "ns",
            "containerAllocations": [{"name": "main", "allocations": {"cpu": "2,6"}}],
        },
    ]


def test_a_full_node_leaves_allocatable_out() -> None:
    every = frozenset(range(8))
    spec = render_numatopology(_profile(), [_pod("all", ContainerAllocation("m", every))])["spec"]
    assert spec["numares"] == {"cpu": {"capacity": 8}}  # "" is omitempty


@pytest.mark.parametrize(
    ("kubelet", "reserved", "allocatable"),
    [
        pytest.param({}, "0", "0-7", id="none"),
        pytest.param({"kubeReserved": {"cpu": "500m"}}, "500m", "0-7", id="kube-reserved"),
        pytest.param(
            {"kubeReserved": {"cpu": "1"}, "systemReserved": {"cpu": "1500m"}},
            "2500m",
            "0-7",
            id="kube-plus-system",
        ),
        # The exporter never reads reservedSystemCPUs: nothing reserved, CPU 0 stays free.
        pytest.param({"reservedSystemCPUs": "0"}, "0", "0-7", id="reserved-system-cpus"),
    ],
)
def test_reservation_is_kube_plus_system_reserved_cpu(
    kubelet: dict[str, Any], reserved: str, allocatable: str
) -> None:
    spec = render_numatopology(_profile(kubelet), [])["spec"]
    assert spec["resReserved"] == {"cpu": reserved}
    assert spec["numares"]["cpu"]["allocatable"] == allocatable


@pytest.mark.parametrize(
    ("kubelet", "policies"),
    [
        pytest.param(
            {"topologyManagerPolicy": "restricted"},
            {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "restricted"},
            id="restricted",
        ),
        pytest.param(
            {"topologyManagerPolicy": "none", "cpuManagerPolicy": "none"},
            {"CPUManagerPolicy": "none", "TopologyManagerPolicy": "none"},
            id="none",
        ),
    ],
)
def test_policies_as_the_kubelet_configuration_spells_them(
    kubelet: dict[str, Any], policies: dict[str, str]
) -> None:
    assert render_numatopology(_profile(kubelet), [])["spec"]["policies"] == policies


@pytest.mark.parametrize(
    ("millis", "text"), [(0, "0"), (500, "500m"), (1000, "1"), (2500, "2500m"), (12000, "12")]
)
def test_cpu_quantity(millis: int, text: str) -> None:
    assert cpu_quantity(millis) == text
