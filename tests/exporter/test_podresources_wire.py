"""``exporter.podresources_wire`` against the generated protobuf code (a test-only
dependency of the exporter): the same values from the same bytes, for generated
messages, hand-made encodings (unpacked repeats, unknown fields, merged messages) and
arbitrary bytes (also the tag 2**32 hypothesis once found)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.podresources_wire import (
    PodListDecoder,
    WireError,
    decode_allocatable,
    decode_get,
    decode_list,
    decode_pod,
    encode_get_request,
)
from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from protos.podresources.v1 import api_pb2


# -- the reference: the generated parser, converted as the grpcio-based client did ------
def _numa_ids(topology: Any) -> tuple[int, ...]:
    return tuple(sorted({int(node.ID) for node in topology.nodes}))


def _devices(items: Iterable[Any]) -> tuple[DeviceAssignment, ...]:
    return tuple(
        DeviceAssignment(d.resource_name, tuple(d.device_ids), _numa_ids(d.topology)) for d in items
    )


def _memory(items: Iterable[Any]) -> tuple[MemoryBlock, ...]:
    return tuple(MemoryBlock(m.memory_type, int(m.size), _numa_ids(m.topology)) for m in items)


def _pod(pod: Any) -> PodResources:
    return PodResources(
        namespace=pod.namespace,
        name=pod.name,
        containers=tuple(
            ContainerResources(
                name=c.name,
                cpu_ids=tuple(c.cpu_ids),
                devices=_devices(c.devices),
                memory=_memory(c.memory),
            )
            for c in pod.containers
        ),
    )


def reference_list(data: bytes) -> tuple[PodResources, ...]:
    message = api_pb2.ListPodResourcesResponse()
    message.ParseFromString(data)
    return tuple(_pod(p) for p in message.pod_resources)


# -- generated messages -------------------------------------------------------------------
INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=8)
TOPOLOGY = st.lists(st.integers(-3, 2**40), max_size=3)


def _topology(ids: list[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in ids])


DEVICES = st.builds(
    lambda name, ids, topo: api_pb2.ContainerDevices(
        resource_name=name, device_ids=ids, topology=_topology(topo)
    ),
    TEXT,
    st.lists(TEXT, max_size=3),
    TOPOLOGY,
)
MEMORY = st.builds(
    lambda kind, size, topo: api_pb2.ContainerMemory(
        memory_type=kind, size=size, topology=_topology(topo)
    ),
    TEXT,
    st.integers(0, 2**64 - 1),
    TOPOLOGY,
)
CONTAINERS = st.builds(
    lambda name, cpus, devices, memory: api_pb2.ContainerResources(
        name=name, cpu_ids=cpus, devices=devices, memory=memory
    ),
    TEXT,
    st.lists(INT64, max_size=6),
    st.lists(DEVICES, max_size=3),
    st.lists(MEMORY, max_size=3),
)
PODS = st.builds(
    lambda name, ns, containers: api_pb2.PodResources(
        name=name, namespace=ns, containers=containers
    ),
    TEXT,
    TEXT,
    st.lists(CONTAINERS, max_size=3),
)


@given(st.lists(PODS, max_size=5))
def test_list_equals_the_generated_parser(pods: list[api_pb2.PodResources]) -> None:
    data = api_pb2.ListPodResourcesResponse(pod_resources=pods).SerializeToString()
    assert decode_list(data) == reference_list(data)


@given(PODS)
def test_get_equals_the_generated_parser(pod: api_pb2.PodResources) -> None:
    data = api_pb2.GetPodResourcesResponse(pod_resources=pod).SerializeToString()
    assert decode_get(data) == _pod(pod)


@given(st.lists(DEVICES, max_size=3), st.lists(INT64, max_size=5), st.lists(MEMORY, max_size=3))
def test_allocatable_equals_the_generated_parser(
    devices: list[api_pb2.ContainerDevices],
    cpus: list[int],
    memory: list[api_pb2.ContainerMemory],
) -> None:
    message = api_pb2.AllocatableResourcesResponse(devices=devices, cpu_ids=cpus, memory=memory)
    assert decode_allocatable(message.SerializeToString()) == AllocatableResources(
        tuple(message.cpu_ids), _devices(message.devices), _memory(message.memory)
    )


def _decoded(data: bytes) -> tuple[PodResources, ...] | None:
    try:
        return decode_list(data)
    except WireError:
        return None


def _reference(data: bytes) -> tuple[PodResources, ...] | None:
    try:
        return reference_list(data)
    except DecodeError:
        return None


@settings(max_examples=300)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_are_never_read_where_the_generated_parser_refuses(data: bytes) -> None:
    """What we accept, the generated parser accepts with the same value. (It tolerates
    some malformed groups - a deprecated wire type no proto3 kubelet sends - that we
    refuse.)"""
    ours = _decoded(data)
    if ours is not None:
        assert ours == _reference(data)


# no byte ending in the group wire types (3, 4): no tag can open or close a group
GROUP_FREE = st.lists(st.integers(0, 255).filter(lambda b: b & 7 not in (3, 4)), max_size=40).map(
    bytes
)


@settings(max_examples=300)
@given(GROUP_FREE)
def test_arbitrary_bytes_without_groups_decode_exactly_as_the_generated_parser(
    data: bytes,
) -> None:
    assert _decoded(data) == _reference(data)


@given(TEXT, TEXT)
def test_get_request_encoding(namespace: str, name: str) -> None:
    message = api_pb2.GetPodResourcesRequest()
    message.ParseFromString(encode_get_request(namespace, name))
    assert (message.pod_namespace, message.pod_name) == (namespace, name)


# -- hand-made encodings --------------------------------------------------------------------
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, wire: int, payload: bytes) -> bytes:
    body = varint(len(payload)) + payload if wire == 2 else payload
    return varint(number << 3 | wire) + body


CONTAINER = field(1, 2, b"main") + field(3, 0, varint(5)) + field(3, 0, varint(-1))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(field(1, 2, field(3, 2, CONTAINER)), id="unpacked-cpu-ids"),
        pytest.param(
            field(1, 2, field(3, 2, field(3, 2, varint(1) + varint(2)) + field(3, 0, varint(3)))),
            id="packed-and-unpacked-mixed",
        ),
        pytest.param(
            field(1, 2, field(1, 2, b"a") + field(1, 2, b"b") + field(2, 2, b"ns")),
            id="last-name-wins",
        ),
        pytest.param(
            field(
                1,
                2,
                field(9, 0, varint(7))
                + field(10, 1, b"12345678")
                + field(11, 5, b"1234")
                + field(12, 2, b"junk")
                + varint(13 << 3 | 3)
                + field(1, 0, varint(1))
                + varint(13 << 3 | 4)
                + field(1, 2, b"pod"),
            ),
            id="unknown-fields-of-every-wire-type",
        ),
        pytest.param(field(1, 2, field(1, 0, varint(3)) + field(1, 2, b"x")), id="wrong-wire-type"),
        pytest.param(
            field(
                1,
                2,
                field(
                    3,
                    2,
                    field(
                        2,
                        2,
                        field(1, 2, b"gpu")
                        + field(3, 2, field(1, 2, field(1, 0, varint(1))))
                        + field(3, 2, field(1, 2, field(1, 0, varint(0)))),
                    ),
                ),
            ),
            id="topology-met-twice-is-merged",
        ),
        pytest.param(field(1, 2, field(1, 2, b"\xff")), id="invalid-utf8"),
        pytest.param(field(1, 2, b"\x0a\x05ab"), id="truncated"),
        pytest.param(varint(0 << 3 | 2) + b"\x00", id="field-zero"),
        pytest.param(b"\x80\x80\x80\x80\x10\x00", id="field-number-beyond-2**29"),
        pytest.param(b"\x80" * 11, id="overlong-varint"),
        pytest.param(varint(1 << 3 | 3) + field(1, 0, varint(1)), id="unterminated-group"),
    ],
)
def test_hand_made_encodings_decode_as_the_generated_parser_does(data: bytes) -> None:
    try:
        expected = reference_list(data)
    except DecodeError:
        with pytest.raises(WireError):
            decode_list(data)
        return
    assert decode_list(data) == expected


def test_get_merges_a_pod_met_twice() -> None:
    data = field(1, 2, field(1, 2, b"a") + field(3, 2, CONTAINER)) + field(
        1, 2, field(2, 2, b"ns") + field(3, 2, CONTAINER)
    )
    message = api_pb2.GetPodResourcesResponse()
    message.ParseFromString(data)
    assert decode_get(data) == _pod(message.pod_resources)
    assert len(decode_get(data).containers) == 2


def test_list_decoder_reuses_unchanged_pods_and_forgets_the_rest() -> None:
    decoded: list[bytes] = []

    def counting(message: bytes) -> PodResources:
        decoded.append(message)
        return decode_pod(message)

    a = api_pb2.PodResources(name="a", namespace="ns")
    b = api_pb2.PodResources(name="b", namespace="ns")
    decoder = PodListDecoder(counting)
    first = decoder.decode(
        api_pb2.ListPodResourcesResponse(pod_resources=[a, b]).SerializeToString()
    )
    assert [p.name for p in first] == ["a", "b"] and len(decoded) == 2
    # another order, same pods: nothing decoded again
    again = decoder.decode(
        api_pb2.ListPodResourcesResponse(pod_resources=[b, a]).SerializeToString()
    )
    assert [p.name for p in again] == ["b", "a"] and len(decoded) == 2
    decoder.decode(api_pb2.ListPodResourcesResponse(pod_resources=[b]).SerializeToString())
    # a was forgotten: decoded again when it comes back
    decoder.decode(api_pb2.ListPodResourcesResponse(pod_resources=[a]).SerializeToString())
    assert len(decoded) == 3
