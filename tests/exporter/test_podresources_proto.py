"""``exporter.podresources_proto``: podresources messages, parsed by the generated code,
converted to the exporter's values - every field round-trips, topologies become sorted
distinct NUMA ids, malformed bytes are one error class, and unchanged pods are reused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.podresources_proto import (
    PodListDecoder,
    WireError,
    allocatable_resources,
    decode_list,
    decode_pod,
    pod_messages,
)
from exporter.resources import (
    AllocatableResources,
    ClaimDevice,
    ClaimResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from protos.podresources.v1 import api_pb2
from tests.exporter import scenarios as s
from tests.exporter.fake_podresources import to_message

TEXT = st.text(max_size=8)
NUMA = st.lists(st.integers(0, 2**40), max_size=3, unique=True).map(lambda ids: tuple(sorted(ids)))
DEVICES = st.builds(DeviceAssignment, TEXT, st.lists(TEXT, max_size=3).map(tuple), NUMA)
MEMORY = st.builds(MemoryBlock, TEXT, st.integers(0, 2**64 - 1), NUMA)
CLAIM_DEVICES = st.builds(
    ClaimDevice,
    TEXT,
    TEXT,
    TEXT,
    st.lists(TEXT, max_size=2).map(tuple),
    st.none() | TEXT,  # an empty share id is set all the same (optional field)
)
CLAIMS = st.builds(ClaimResources, TEXT, TEXT, st.lists(CLAIM_DEVICES, max_size=3).map(tuple))
CONTAINERS = st.builds(
    ContainerResources,
    TEXT,
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6).map(tuple),
    st.lists(DEVICES, max_size=3).map(tuple),
    st.lists(MEMORY, max_size=3).map(tuple),
    st.lists(CLAIMS, max_size=2).map(tuple),
)
PODS = st.builds(PodResources, TEXT, TEXT, st.lists(CONTAINERS, max_size=3).map(tuple))


def _list_bytes(pods: list[PodResources]) -> bytes:
    message = api_pb2.ListPodResourcesResponse(pod_resources=[to_message(p) for p in pods])
    return message.SerializeToString()


@given(st.lists(PODS, max_size=5))
def test_every_field_round_trips(pods: list[PodResources]) -> None:
    data = _list_bytes(pods)
    assert decode_list(data) == tuple(pods)
    assert PodListDecoder().decode(data) == tuple(pods)
    assert [decode_pod(m) for m in pod_messages(data)] == pods


def test_a_topology_becomes_sorted_distinct_numa_ids() -> None:
    """The kubelet lists a device once per NUMA node of its topology; a node met twice is
    one node, and the order is not meaningful."""
    message = api_pb2.ContainerDevices(
        resource_name=s.GPU,
        device_ids=["GPU-0"],
        topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in (1, 0, 1)]),
    )
    pod = api_pb2.PodResources(
        name="p",
        namespace="ns",
        containers=[api_pb2.ContainerResources(name="c", devices=[message])],
    )
    (container,) = decode_pod(pod.SerializeToString()).containers
    assert container.devices == (DeviceAssignment(s.GPU, ("GPU-0",), (0, 1)),)


def test_allocatable_resources() -> None:
    message = api_pb2.AllocatableResourcesResponse(
        cpu_ids=[3, 1],
        devices=[api_pb2.ContainerDevices(resource_name=s.GPU, device_ids=["GPU-0"])],
        memory=[
            api_pb2.ContainerMemory(
                memory_type="memory",
                size=s.GI,
                topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=0)]),
            )
        ],
    )
    assert allocatable_resources(message) == AllocatableResources(
        cpu_ids=(3, 1),
        devices=(DeviceAssignment(s.GPU, ("GPU-0",), ()),),
        memory=(MemoryBlock("memory", s.GI, (0,)),),
    )


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x0a\x05ab", id="truncated-length"),
        pytest.param(b"\x0a\x80", id="truncated-varint"),
        pytest.param(b"\x0a\x03\x0a\x01\xff", id="name-not-utf8"),
        pytest.param(b"\x0f", id="invalid-wire-type"),
    ],
)
def test_malformed_answers_are_one_error(data: bytes) -> None:
    with pytest.raises(WireError, match="ListPodResourcesResponse"):
        decode_list(data)
    with pytest.raises(WireError):
        PodListDecoder().decode(data)


@given(st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_wire_error(data: bytes) -> None:
    try:
        pods = decode_list(data)
    except WireError:
        return
    assert all(isinstance(p, PodResources) for p in pods)


def test_unchanged_pods_are_reused_and_gone_pods_forgotten() -> None:
    decoder = PodListDecoder()
    first = decoder.decode(_list_bytes([s.CPU_ONLY, s.GPU_AND_CPU]))
    # the same pods in another order, one new: the old values are the same objects
    second = decoder.decode(_list_bytes([s.GPU_AND_CPU, s.MULTI_ZONE, s.CPU_ONLY]))
    assert second == (s.GPU_AND_CPU, s.MULTI_ZONE, s.CPU_ONLY)
    assert second[0] is first[1] and second[2] is first[0]
    decoder.decode(_list_bytes([s.MULTI_ZONE]))
    assert decoder.decode(_list_bytes([s.CPU_ONLY]))[0] is not first[0]


def test_pod_encodings_do_not_depend_on_the_answers_order() -> None:
    one = pod_messages(_list_bytes([s.CPU_ONLY, s.GPU_AND_CPU, s.MULTI_ZONE]))
    other = pod_messages(_list_bytes([s.MULTI_ZONE, s.CPU_ONLY, s.GPU_AND_CPU]))
    assert one != other
    assert sorted(one) == sorted(other)
