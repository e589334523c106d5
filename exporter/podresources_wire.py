"""The podresources v1 messages (``protos/podresources/v1/api.proto``) read from and
written to protobuf wire format, straight into the frozen values of
``exporter.resources``.

Pure, standard library only: the exporter needs five small messages, not the protobuf
runtime (its import costs more start-up time than the whole pass). Decoding follows the
protobuf rules a generated parser follows: fields in any order, unknown fields skipped
(all wire types, groups included), repeated scalars packed or not, ``int64`` as two's
complement, the last value of a singular field wins and a singular message met twice is
merged. Malformed input raises :class:`WireError`: whatever this module reads, the
generated parser reads the same way; the reverse holds except for some malformed
groups (a deprecated wire type no proto3 kubelet sends) that it tolerates.
``tests/exporter/test_podresources_wire.py`` checks it against the generated code.

:class:`PodListDecoder` decodes a ``List`` answer pod by pod and reuses the value of any
pod whose bytes are the same as in the previous answer, so an unchanged pod costs a
dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from exporter.resources import (
    AllocatableResources,
    ContainerResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_DEPTH = 32
MAX_FIELD = 1 << 29


class WireError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def _skip(data: bytes, pos: int, wire: int, field: int, depth: int = 0) -> int:
    if wire == VARINT:
        return _varint(data, pos)[1]
    if wire == FIXED64:
        pos += 8
    elif wire == FIXED32:
        pos += 4
    elif wire == LENGTH:
        length, pos = _varint(data, pos)
        pos += length
    elif wire == START_GROUP:
        if depth >= _MAX_DEPTH:
            raise WireError("groups nested too deeply")
        while True:
            tag, pos = _varint(data, pos)
            if not 0 < tag >> 3 < MAX_FIELD:
                raise WireError(f"field number {tag >> 3} out of range")
            if tag & 7 == END_GROUP:
                if tag >> 3 != field:
                    raise WireError("mismatched end of group")
                return pos
            pos = _skip(data, pos, tag & 7, tag >> 3, depth + 1)
    else:
        raise WireError(f"invalid wire type {wire}")
    if pos > len(data):
        raise WireError("truncated field")
    return pos


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value): an int for a varint, bytes for a length-delimited field.
    Fields of the other wire types are skipped (no field of these messages uses them);
    a known field met with another wire type than its own is unknown to a generated
    parser too, and skipped by the callers (``isinstance`` on the value)."""
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = _varint(data, pos)
        field, wire = tag >> 3, tag & 7
        if not 0 < field < MAX_FIELD:  # a tag is a uint32: field numbers end at 2**29 - 1
            raise WireError(f"field number {field} out of range")
        if wire == VARINT:
            value, pos = _varint(data, pos)
            yield field, value
        elif wire == LENGTH:
            length, pos = _varint(data, pos)
            stop = pos + length
            if stop > end:
                raise WireError("truncated length-delimited field")
            yield field, data[pos:stop]
            pos = stop
        else:
            pos = _skip(data, pos, wire, field)


def _int64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: bytes) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise WireError("a string field is not UTF-8") from exc


def _int64s(value: int | bytes, out: list[int]) -> None:
    """A repeated int64: one varint, or a packed run of them."""
    if isinstance(value, int):
        out.append(_int64(value))
        return
    pos = 0
    while pos < len(value):
        item, pos = _varint(value, pos)
        out.append(_int64(item))


def _topology(parts: list[bytes]) -> tuple[int, ...]:
    """TopologyInfo (occurrences merged): the sorted, distinct NUMA ids."""
    ids: set[int] = set()
    for field, node in _fields(b"".join(parts)):
        if field == 1 and isinstance(node, bytes):
            numa_id = 0
            for inner, raw in _fields(node):
                if inner == 1 and isinstance(raw, int):
                    numa_id = _int64(raw)
            ids.add(numa_id)
    return tuple(sorted(ids))


def _device(data: bytes) -> DeviceAssignment:
    resource = ""
    ids: list[str] = []
    topology: list[bytes] = []
    for field, value in _fields(data):
        if isinstance(value, bytes):
            if field == 1:
                resource = _text(value)
            elif field == 2:
                ids.append(_text(value))
            elif field == 3:
                topology.append(value)
    return DeviceAssignment(resource, tuple(ids), _topology(topology))


def _memory(data: bytes) -> MemoryBlock:
    memory_type = ""
    size = 0
    topology: list[bytes] = []
    for field, value in _fields(data):
        if field == 2 and isinstance(value, int):
            size = value & ((1 << 64) - 1)
        elif isinstance(value, bytes):
            if field == 1:
                memory_type = _text(value)
            elif field == 3:
                topology.append(value)
    return MemoryBlock(memory_type, size, _topology(topology))


def _container(data: bytes) -> ContainerResources:
    name = ""
    devices: list[DeviceAssignment] = []
    cpus: list[int] = []
    memory: list[MemoryBlock] = []
    for field, value in _fields(data):
        if field == 3:
            _int64s(value, cpus)
        elif isinstance(value, bytes):
            if field == 1:
                name = _text(value)
            elif field == 2:
                devices.append(_device(value))
            elif field == 4:
                memory.append(_memory(value))
    return ContainerResources(name, tuple(cpus), tuple(devices), tuple(memory))


def decode_pod(data: bytes) -> PodResources:
    """One ``PodResources`` message."""
    name = namespace = ""
    containers: list[ContainerResources] = []
    for field, value in _fields(data):
        if isinstance(value, bytes):
            if field == 1:
                name = _text(value)
            elif field == 2:
                namespace = _text(value)
            elif field == 3:
                containers.append(_container(value))
    return PodResources(namespace=namespace, name=name, containers=tuple(containers))


def _messages(data: bytes, number: int) -> list[bytes]:
    return [v for f, v in _fields(data) if f == number and isinstance(v, bytes)]


def pod_messages(data: bytes) -> list[bytes]:
    """The ``pod_resources`` entries of a ``ListPodResourcesResponse``, still encoded."""
    return _messages(data, 1)


def decode_list(data: bytes) -> tuple[PodResources, ...]:
    """A ``ListPodResourcesResponse``."""
    return tuple(decode_pod(p) for p in pod_messages(data))


def decode_get(data: bytes) -> PodResources:
    """A ``GetPodResourcesResponse`` (its one pod; occurrences merged)."""
    return decode_pod(b"".join(_messages(data, 1)))


def decode_allocatable(data: bytes) -> AllocatableResources:
    """An ``AllocatableResourcesResponse``."""
    devices: list[DeviceAssignment] = []
    cpus: list[int] = []
    memory: list[MemoryBlock] = []
    for field, value in _fields(data):
        if field == 2:
            _int64s(value, cpus)
        elif isinstance(value, bytes):
            if field == 1:
                devices.append(_device(value))
            elif field == 3:
                memory.append(_memory(value))
    return AllocatableResources(tuple(cpus), tuple(devices), tuple(memory))


def _length_delimited(field: int, payload: bytes) -> bytes:
    out = bytearray([field << 3 | LENGTH])
    length = len(payload)
    while length >= 0x80:
        out.append((length & 0x7F) | 0x80)
        length >>= 7
    out.append(length)
    return bytes(out) + payload


def encode_get_request(namespace: str, name: str) -> bytes:
    """A ``GetPodResourcesRequest`` (empty strings are left out, as proto3 does)."""
    out = b""
    if name:
        out += _length_delimited(1, name.encode())
    if namespace:
        out += _length_delimited(2, namespace.encode())
    return out


class PodListDecoder:
    """Decodes successive ``List`` answers, reusing the value of every pod whose encoded
    bytes did not change since the previous answer (only those are kept: no growth)."""

    def __init__(self, decode: Callable[[bytes], PodResources] = decode_pod) -> None:
        self._decode = decode
        self._previous: dict[bytes, PodResources] = {}

    def decode(self, data: bytes) -> tuple[PodResources, ...]:
        previous = self._previous
        current: dict[bytes, PodResources] = {}
        pods: list[PodResources] = []
        for message in pod_messages(data):
            pod = current.get(message) or previous.get(message)
            if pod is None:
                pod = self._decode(message)
            current[message] = pod
            pods.append(pod)
        self._previous = current
        return tuple(pods)
