"""Foreign non-exclusive requests and the kubelet's reservations in the whole-node fit
check and the Memory Manager (``lifecycle/predicate.go``,
``cm/node_container_manager_linux.go``, ``memorymanager/policy_static.go``)."""

from __future__ import annotations

from typing import Any

from fakenrt.kubelet.node import NodeState
from fakenrt.profiles import parse_profiles
from fakenrt.profiles.model import NodeProfile
from tests.kubelet.builders import container, pod

GI = 2**30


def _profile(kubelet: dict[str, Any] | None = None, **fields: Any) -> NodeProfile:
    node: dict[str, Any] = {
        "name": "kind-worker",
        "kubelet": {"topologyManagerPolicy": "single-numa-node", **(kubelet or {})},
        "shape": {"numaNodes": 2, "coresPerNumaNode": 4, "memoryPerNumaNode": "4Gi"},
    }
    node.update(fields)
    return parse_profiles({"nodes": [node]}, source="p.yaml")[0]


def test_foreign_cpu_requests_count_in_the_fit_check() -> None:
    """Kind's control plane held 850m on the real node: 7 burstable CPUs then do not fit
    on 8, and the message counts the foreign 850m as used."""
    state = NodeState.from_profile(_profile(foreignRequests={"cpu": "850m"}))
    burstable = pod("b", container("c", guaranteed=False, cpu="7200m"))
    result = state.admit(burstable)
    assert not result.admit
    assert result.reason == "OutOfcpu"
    assert result.message == (
        "Node didn't have enough resource: cpu, requested: 7200, used: 850, capacity: 8000"
    )
    assert state.admit(pod("ok", container("c", guaranteed=False, cpu="7150m"))).admit


def test_foreign_pods_count_against_max_pods() -> None:
    state = NodeState.from_profile(_profile(maxPods=3, foreignRequests={"pods": 2}))
    assert state.admit(pod("a", container("c", guaranteed=False, cpu="100m"))).admit
    result = state.admit(pod("b", container("c", guaranteed=False, cpu="100m")))
    assert result.reason == "OutOfpods"


def test_a_zones_foreign_pod_counts_as_a_pod_with_its_requests() -> None:
    """The pod holding a zone's ``allocated`` (fakenrt.kubelet.foreign) is a pod of the node
    like any other: it counts against maxPods, and its requests (the zone's amounts, plus
    the 1Mi of memory that makes it Guaranteed) in the fit check."""
    node: dict[str, Any] = {
        "name": "n",
        "maxPods": 2,
        "kubelet": {"topologyManagerPolicy": "single-numa-node"},
        "zones": [
            {"id": 0, "cpus": "0-3", "memory": "4Gi", "allocated": {"cpu": 2}},
            {"id": 1, "cpus": "4-7", "memory": "4Gi"},
        ],
    }
    (profile,) = parse_profiles({"nodes": [node]}, source="p.yaml")
    state = NodeState.from_profile(profile)
    everything_else = pod("a", container("c", guaranteed=False, cpu="6", memory="8Gi"))
    assert state.admit(everything_else).reason == "OutOfmemory"
    assert state.admit(pod("b", container("c", guaranteed=False, cpu="6"))).admit
    result = state.admit(pod("c", container("c", guaranteed=False, cpu="100m")))
    assert result.reason == "OutOfpods"


def test_reservations_shrink_node_allocatable_memory() -> None:
    """systemReserved + kubeReserved + evictionHard come off the machine's memory, which
    reservedMemory made larger than the zones: allocatable is the zones' 8Gi again, and a
    9Gi burstable pod does not fit."""
    kubelet = {
        "systemReserved": {"memory": "512Mi"},
        "evictionHard": {"memory.available": "512Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}],
    }
    state = NodeState.from_profile(_profile(kubelet))
    big = pod("big", container("c", guaranteed=False, cpu="1", memory="9Gi"))
    assert state.admit(big).reason == "OutOfmemory"
    guaranteed = pod("g", container("c", cpu=1, memory="4Gi"))
    result = state.admit(guaranteed)
    assert result.admit and result.allocation is not None
    assert state.zone_free()[0]["memory"] + state.zone_free()[1]["memory"] == 4 * GI


def test_without_reservations_nothing_changes() -> None:
    state = NodeState.from_profile(_profile())
    assert state.admit(pod("g", container("c", guaranteed=False, cpu="8", memory="8Gi"))).admit
