"""Profile fields for the CPU Manager policy options, feature gates, reservations and
foreign requests: what is accepted, the totals that follow, one clear error per mistake."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.profiles import ProfileError, parse_profiles
from fakenrt.profiles.model import CpuPolicyOptions, EvictionThreshold, NodeProfile
from fakenrt.profiles.resources import (
    node_allocatable,
    node_allocatable_units,
    node_capacity,
    zone_allocatable,
    zone_capacity,
)

GI = 2**30
MI = 2**20


def _node(kubelet: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": "n1",
        "kubelet": kubelet or {},
        "cpuTopology": {"threadsPerCore": 2},
        "zones": [
            {"id": 0, "cpus": "0-3,8-11", "memory": "8Gi"},
            {"id": 1, "cpus": "4-7,12-15", "memory": "8Gi"},
        ],
    }
    node.update(fields)
    return node


def _parse(node: dict[str, Any]) -> NodeProfile:
    return parse_profiles({"nodes": [node]}, source="p.yaml")[0]


def test_cpu_policy_options_are_parsed() -> None:
    profile = _parse(
        _node(
            {"cpuManagerPolicyOptions": {"full-pcpus-only": "true", "strict-cpu-reservation": True}}
        )
    )
    assert profile.kubelet.cpu_options == CpuPolicyOptions(
        full_pcpus_only=True, strict_cpu_reservation=True
    )
    assert profile.kubelet.cpu_policy_options == {
        "full-pcpus-only": "true",
        "strict-cpu-reservation": "true",
    }


def test_alpha_options_need_the_gate() -> None:
    kubelet = {
        "featureGates": {"CPUManagerPolicyAlphaOptions": True},
        "cpuManagerPolicyOptions": {"distribute-cpus-across-cores": "true"},
    }
    assert _parse(_node(kubelet)).kubelet.cpu_options.distribute_cpus_across_cores


def test_uncore_caches_split_sockets_by_core_id() -> None:
    profile = _parse(_node(cpuTopology={"threadsPerCore": 2, "coresPerUncoreCache": 2}))
    uncore = {cpu: info.uncore for cpu, info in profile.cpu_topology.items()}
    # cores 0,1 | 2,3 (zone 0, one socket each), 4,5 | 6,7 (zone 1); siblings +8
    assert uncore[0] == uncore[1] == uncore[8] == uncore[9] == 0
    assert uncore[2] == uncore[3] == uncore[10] == 1
    assert uncore[4] == uncore[12] == 2 and uncore[15] == 3


def test_reserved_system_cpus_replace_cpu_reservations() -> None:
    profile = _parse(
        _node(
            {
                "reservedSystemCPUs": "0,8",
                "systemReserved": {"cpu": "500m"},
                "kubeReserved": {"cpu": 1},
            }
        )
    )
    assert profile.kubelet.reserved_cpus == {0, 8}
    assert node_allocatable_units(profile)["cpu"] == 14000


def test_cpu_reservation_picks_cpus_like_the_static_policy() -> None:
    """Without reservedSystemCPUs the static policy reserves ceil(1.5) = 2 CPUs taken by
    its own algorithm (a whole core: 0 and its sibling 8); allocatable keeps the exact
    1500m."""
    profile = _parse(_node({"systemReserved": {"cpu": "1"}, "kubeReserved": {"cpu": "500m"}}))
    assert profile.kubelet.reserved_cpus == {0, 8}
    assert node_allocatable_units(profile)["cpu"] == 16000 - 1500
    assert node_allocatable(profile)["cpu"] == 14  # the Node object shows whole CPUs


def test_memory_reservations_give_capacity_and_allocatable() -> None:
    """Zone memory is what the Memory Manager can hand out; the machine has reservedMemory
    and hugepages on top; allocatable = capacity - reservations - eviction - hugepages."""
    kubelet = {
        "systemReserved": {"memory": "1Gi"},
        "kubeReserved": {"memory": "512Mi"},
        "evictionHard": {"memory.available": "512Mi"},
        "reservedMemory": [
            {"numaNode": 0, "limits": {"memory": "1Gi"}},
            {"numaNode": 1, "limits": {"memory": "1Gi"}},
        ],
    }
    node = _node(kubelet)
    node["zones"][0]["hugepages-2Mi"] = "1Gi"
    profile = _parse(node)
    assert profile.kubelet.eviction_hard_memory == EvictionThreshold(amount=512 * MI)
    assert zone_capacity(profile)[0]["memory"] == 9 * GI
    assert zone_allocatable(profile)[0]["memory"] == 8 * GI
    assert node_capacity(profile)["memory"] == 19 * GI
    assert node_capacity(profile)["hugepages-2Mi"] == GI
    # 19Gi - 1Gi - 512Mi - 512Mi - 1Gi of hugepages = the zones' 16Gi
    assert node_allocatable(profile)["memory"] == 16 * GI


def test_eviction_percentage_of_capacity() -> None:
    profile = _parse(
        _node({"memoryManagerPolicy": "None", "evictionHard": {"memory.available": "10%"}})
    )
    # 10% is a Go float32 (0.100000001...): 16Gi * that, truncated, is 1717986944, not
    # the exact 1717986918
    assert node_allocatable(profile)["memory"] == 16 * GI - 1717986944


def test_foreign_requests() -> None:
    profile = _parse(_node(foreignRequests={"cpu": "850m", "memory": "300Mi", "pods": 8}))
    assert profile.foreign_requests == {"cpu": 850, "memory": 300 * MI, "pods": 8}


ERROR_CASES = [
    pytest.param(
        _node({"cpuManagerPolicyOptions": {"full-pcpu-only": "true"}}),
        'kubelet.cpuManagerPolicyOptions["full-pcpu-only"]',
        "did you mean 'full-pcpus-only'",
        id="option-typo",
    ),
    pytest.param(
        _node({"cpuManagerPolicyOptions": {"align-by-socket": "true"}}),
        'kubelet.cpuManagerPolicyOptions["align-by-socket"]',
        "CPU Manager Policy Alpha-level Options not enabled, but option 'align-by-socket' provided",
        id="alpha-without-gate",
    ),
    pytest.param(
        _node(
            {
                "featureGates": {"CPUManagerPolicyBetaOptions": False},
                "cpuManagerPolicyOptions": {"strict-cpu-reservation": "true"},
            }
        ),
        'kubelet.cpuManagerPolicyOptions["strict-cpu-reservation"]',
        "Beta-level Options not enabled",
        id="beta-gate-off",
    ),
    pytest.param(
        _node({"cpuManagerPolicyOptions": {"full-pcpus-only": "yes"}}),
        'kubelet.cpuManagerPolicyOptions["full-pcpus-only"]',
        "bad value 'yes'",
        id="not-a-bool",
    ),
    pytest.param(
        _node(
            {
                "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                "cpuManagerPolicyOptions": {
                    "full-pcpus-only": "true",
                    "distribute-cpus-across-cores": "true",
                },
            }
        ),
        "kubelet.cpuManagerPolicyOptions",
        "full-pcpus-only and distribute-cpus-across-cores can not be used at the same time",
        id="incompatible-options",
    ),
    pytest.param(
        _node(
            {
                "cpuManagerPolicyOptions": {
                    "prefer-align-cpus-by-uncorecache": "true",
                    "distribute-cpus-across-numa": "true",
                },
            }
        ),
        "kubelet.cpuManagerPolicyOptions",
        "can not be used at the same time",
        id="uncore-and-numa",
    ),
    pytest.param(
        _node({"cpuManagerPolicy": "none", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}),
        "kubelet.cpuManagerPolicyOptions",
        "cpuManagerPolicy none",
        id="options-with-none",
    ),
    pytest.param(
        _node(
            {
                "topologyManagerPolicy": "single-numa-node",
                "featureGates": {"CPUManagerPolicyAlphaOptions": True},
                "cpuManagerPolicyOptions": {"align-by-socket": "true"},
            }
        ),
        'kubelet.cpuManagerPolicyOptions["align-by-socket"]',
        "single-numa-node policy is incompatible",
        id="align-by-socket-single-numa",
    ),
    pytest.param(
        _node({"featureGates": {"CPUManagerPolicyGammaOptions": True}}),
        "kubelet.featureGates.CPUManagerPolicyGammaOptions",
        "unknown key",
        id="unknown-gate",
    ),
    pytest.param(
        _node({"systemReserved": {"memory": "1Gi"}}),
        "kubelet.reservedMemory",
        "the total amount 0 of type 'memory' is not equal to the value 1073741824",
        id="static-memory-manager-needs-reserved-memory",
    ),
    pytest.param(
        _node({"reservedMemory": [{"numaNode": 3, "limits": {"memory": "1Gi"}}]}),
        "kubelet.reservedMemory",
        "references a NUMA node 3 that does not exist",
        id="no-such-numa",
    ),
    pytest.param(
        _node({"reservedMemory": [{"numaNode": 0, "limits": {"memory": 0}}]}),
        "kubelet.reservedMemory[0].limits.memory",
        "may not be zero",
        id="zero-reservation",
    ),
    pytest.param(
        _node(
            {
                "reservedMemory": [
                    {"numaNode": 0, "limits": {"memory": "1Gi"}},
                    {"numaNode": 0, "limits": {"memory": "1Gi"}},
                ]
            }
        ),
        "kubelet.reservedMemory[1].limits.memory",
        "duplicate",
        id="duplicate-reservation",
    ),
    pytest.param(
        _node({"reservedMemory": [{"numaNode": 0, "limits": {"cpu": "1"}}]}),
        "kubelet.reservedMemory[0].limits.cpu",
        "expected memory or hugepages",
        id="cpu-reserved-memory",
    ),
    pytest.param(
        _node({"evictionHard": {"nodefs.available": "10%"}}),
        'kubelet.evictionHard["nodefs.available"]',
        "unknown key",
        id="eviction-signal-not-modelled",
    ),
    pytest.param(
        _node({"memoryManagerPolicy": "None", "evictionHard": {"memory.available": "120%"}}),
        'kubelet.evictionHard["memory.available"]',
        "must not exceed 100%",
        id="eviction-over-100",
    ),
    pytest.param(
        _node(
            {"memoryManagerPolicy": "None", "evictionHard": {"memory.available": "9" * 400 + "%"}}
        ),
        'kubelet.evictionHard["memory.available"]',
        "must not exceed 100%",
        id="eviction-huge",
    ),
    pytest.param(
        _node({"systemReserved": {"cpu": "64"}}),
        "kubelet.systemReserved.cpu",
        "must reserve 64 CPUs but the node has 16",
        id="too-many-cpus",
    ),
    pytest.param(
        _node(foreignRequests={"gpu": 1}),
        "foreignRequests.gpu",
        "unknown key",
        id="foreign-unknown",
    ),
    pytest.param(
        _node(foreignRequests={"cpu": "1e999999999"}),
        "foreignRequests.cpu",
        "is not a Kubernetes quantity",
        id="foreign-hostile-cpu",
    ),
    pytest.param(
        _node(foreignRequests={"cpu": "lots"}),
        "foreignRequests.cpu",
        "not a Kubernetes quantity",
        id="foreign-bad-cpu",
    ),
    pytest.param(
        _node(cpuTopology={"threadsPerCore": 2, "coresPerUncoreCache": 3}),
        "cpuTopology.coresPerUncoreCache",
        "4 cores per socket cannot be split",
        id="uncore-split",
    ),
]


@pytest.mark.parametrize(("node", "field", "detail"), ERROR_CASES)
def test_errors_name_the_field(*, node: dict[str, Any], field: str, detail: str) -> None:
    with pytest.raises(ProfileError) as exc:
        _parse(node)
    assert exc.value.node == "n1"
    assert exc.value.field == field
    assert detail in exc.value.detail


@given(
    system=st.integers(0, 4 * GI),
    kube=st.integers(0, 4 * GI),
    eviction=st.integers(0, GI),
    split=st.integers(0, 100),
    hugepages=st.integers(0, 4),
)
def test_consistent_reservations_leave_the_zones_allocatable(
    *, system: int, kube: int, eviction: int, split: int, hugepages: int
) -> None:
    """With the Static Memory Manager the kubelet insists that reservedMemory adds up to
    systemReserved + kubeReserved + evictionHard; then the Node's allocatable memory is
    exactly what the zones can hand out, and capacity - allocatable is the reservation
    plus the hugepages."""
    total = system + kube + eviction
    on_zero = total * split // 100
    limits = [(0, on_zero), (1, total - on_zero)]
    kubelet = {
        "systemReserved": {"memory": system},
        "kubeReserved": {"memory": kube},
        "evictionHard": {"memory.available": str(eviction)},
        "reservedMemory": [{"numaNode": n, "limits": {"memory": m}} for n, m in limits if m],
    }
    node = _node(kubelet)
    node["zones"][1]["hugepages-2Mi"] = f"{2 * hugepages}Mi"
    profile = _parse(node)
    capacity, allocatable = node_capacity(profile), node_allocatable(profile)
    assert allocatable["memory"] == sum(a["memory"] for a in zone_allocatable(profile).values())
    assert capacity["memory"] - allocatable["memory"] == total + hugepages * 2 * MI
    assert sum(c["memory"] for c in zone_capacity(profile).values()) == 16 * GI + total
