"""The real-kubelet backend's pure parts: scenario nodes translated for a real kubelet (what
the kubelet needs added, what the scenarios count on kept), and a real kubelet's
podresources ``List`` read as the scenarios' allocations."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.resources import ContainerResources, DeviceAssignment, MemoryBlock, PodResources
from fakenrt.kubelet.allocation import MemoryBlock as SimulatedBlock
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.profiles.resources import node_allocatable, zone_allocatable
from fakenrt.realnode.kubeletconfig import kubelet_configuration
from fakenrt.realnode.machine import RenderError
from tests.e2e.allocations import listed_allocations
from tests.e2e.realnode_profiles import TranslationError, for_real_kubelet
from tests.e2e.topologies import lopsided_gpu_node, two_zone_node

GIB = 1 << 30


def _parse(raw: dict[str, Any]) -> NodeProfile:
    (profile,) = parse_profiles({"nodes": [raw]}, source="test")
    return profile


SCENARIO_NODES = [
    pytest.param(two_zone_node(policy="single-numa-node", gpus=2), id="a-split"),
    pytest.param(lopsided_gpu_node(policy="single-numa-node"), id="a-lopsided"),
    pytest.param(two_zone_node(policy="single-numa-node"), id="b"),
    pytest.param(two_zone_node(policy="restricted", cores=8, gpus=4), id="c"),
    pytest.param(
        two_zone_node(policy="single-numa-node", nrt={"delay": "2s", "jitter": "6s"}), id="d"
    ),
    pytest.param(two_zone_node(policy="restricted", gpus=2), id="e-restricted"),
]


@pytest.mark.parametrize("raw", SCENARIO_NODES)
def test_every_scenario_node_becomes_a_kubelet_configuration_with_the_same_allocatable(
    raw: dict[str, Any],
) -> None:
    original = _parse(raw)
    with pytest.raises(RenderError):  # the simulator's defaults: a real kubelet refuses them
        kubelet_configuration(original)
    translated = _parse(for_real_kubelet(raw, name="kind-worker2"))
    config = kubelet_configuration(translated)  # renders: the kubelet starts with it
    assert translated.name == "kind-worker2"
    # What the scenarios count on.
    assert zone_allocatable(translated) == zone_allocatable(original)
    assert node_allocatable(translated) == node_allocatable(original)
    assert [z.devices for z in translated.zones] == [z.devices for z in original.zones]
    assert (translated.nrt_delay, translated.nrt_jitter) == (
        original.nrt_delay,
        original.nrt_jitter,
    )
    assert translated.kubelet.topology_manager_policy == original.kubelet.topology_manager_policy
    # What the kubelet needs: one more CPU, reserved, and reserved memory.
    (extra,) = translated.kubelet.reserved_cpus
    assert extra not in set().union(*(z.cpus for z in original.zones))
    assert config["reservedSystemCPUs"] == str(extra)
    assert config["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": str(256 << 20)}}]


def test_reservations_a_node_already_has_are_kept() -> None:
    raw = two_zone_node(policy="single-numa-node")
    raw["kubelet"] |= {
        "reservedSystemCPUs": "0",
        "systemReserved": {"memory": "1Gi"},
        "reservedMemory": [{"numaNode": 1, "limits": {"memory": "1Gi"}}],
    }
    translated = for_real_kubelet(raw, name="w")
    assert translated["kubelet"] == raw["kubelet"]
    assert _parse(translated).kubelet.reserved_cpus == frozenset({0})


def test_labels_stay_and_foreign_requests_go() -> None:
    raw = two_zone_node(policy="single-numa-node") | {
        "labels": {"example.com/pool": "gpu"},
        "foreignRequests": {"cpu": "850m"},
    }
    translated = for_real_kubelet(raw, name="w")
    assert translated["labels"] == {"example.com/pool": "gpu"}
    assert "foreignRequests" not in translated


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        pytest.param(
            lambda raw: raw["shape"].update(threadsPerCore=2), "SMT", id="smt-without-reserved"
        ),
        pytest.param(
            lambda raw: raw.update(
                zones=[{"id": 0, "cpus": "0-3", "memory": "8Gi", "allocated": {"cpu": 1}}],
                shape=None,
            ),
            "allocated",
            id="allocated",
        ),
    ],
)
def test_what_cannot_be_carried_is_refused(change: Any, complaint: str) -> None:
    raw = two_zone_node(policy="single-numa-node")
    change(raw)
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(TranslationError, match=complaint):
        for_real_kubelet(raw, name="w")


def test_list_answer_as_allocations_of_the_namespace_only() -> None:
    listed = (
        PodResources(
            namespace="t",
            name="gpu",
            containers=(
                ContainerResources(
                    name="main",
                    cpu_ids=(2, 3),
                    devices=(
                        DeviceAssignment("nvidia.com/gpu", ("GPU-0",), (0,)),
                        DeviceAssignment("nvidia.com/gpu", ("GPU-1",), (0,)),
                    ),
                    memory=(MemoryBlock("memory", GIB, (0,)),),
                ),
            ),
        ),
        PodResources(namespace="t", name="burstable", containers=(ContainerResources("main"),)),
        PodResources(namespace="kube-system", name="kube-proxy-x"),
    )
    got = listed_allocations(listed, namespace="t")
    assert sorted(got) == ["burstable", "gpu"]
    (main,) = got["gpu"].containers
    assert main.cpus == frozenset({2, 3})
    assert main.devices == {"nvidia.com/gpu": ("GPU-0", "GPU-1")}
    assert main.memory == (SimulatedBlock("memory", GIB, frozenset({0})),)
    (empty,) = got["burstable"].containers
    assert (empty.cpus, dict(empty.devices), empty.memory) == (frozenset(), {}, ())
