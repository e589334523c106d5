"""The podresources v1 messages (the generated ``protos.podresources.v1.api_pb2``) turned
into the frozen values of ``exporter.resources``, at the edge: nothing past this module
and ``exporter.podresources_client`` sees generated code.

Parsing is protobuf's own (``FromString``: fields in any order, unknown fields skipped,
packed or unpacked repeats, strings checked to be UTF-8). Malformed input raises
:class:`WireError`. A topology becomes its sorted, distinct NUMA ids (the kubelet lists
a device once per NUMA node of its topology; ``exporter.placement`` decides what a
device on several nodes means).

:class:`PodListDecoder` converts a ``List`` answer pod by pod and reuses the value of any
pod whose encoding is the same as in the previous answer, so an unchanged pod costs a
dictionary lookup instead of a conversion.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from google.protobuf.message import DecodeError

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


class WireError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


def _numa_ids(topology: api_pb2.TopologyInfo) -> tuple[int, ...]:
    return tuple(sorted({node.ID for node in topology.nodes}))


def _device(message: api_pb2.ContainerDevices) -> DeviceAssignment:
    return DeviceAssignment(
        message.resource_name, tuple(message.device_ids), _numa_ids(message.topology)
    )


def _memory(message: api_pb2.ContainerMemory) -> MemoryBlock:
    return MemoryBlock(message.memory_type, message.size, _numa_ids(message.topology))


def _devices(messages: Iterable[api_pb2.ContainerDevices]) -> tuple[DeviceAssignment, ...]:
    return tuple(_device(m) for m in messages)


def _memories(messages: Iterable[api_pb2.ContainerMemory]) -> tuple[MemoryBlock, ...]:
    return tuple(_memory(m) for m in messages)


def _claim_device(message: api_pb2.ClaimResource) -> ClaimDevice:
    return ClaimDevice(
        message.driver_name,
        message.pool_name,
        message.device_name,
        tuple(c.name for c in message.cdi_devices),
        message.share_id if message.HasField("share_id") else None,
    )


def _dynamic(messages: Iterable[api_pb2.DynamicResource]) -> tuple[ClaimResources, ...]:
    return tuple(
        ClaimResources(
            m.claim_name, m.claim_namespace, tuple(_claim_device(r) for r in m.claim_resources)
        )
        for m in messages
    )


def pod_resources(message: api_pb2.PodResources) -> PodResources:
    """One ``PodResources`` message as a value."""
    return PodResources(
        namespace=message.namespace,
        name=message.name,
        containers=tuple(
            ContainerResources(
                c.name,
                tuple(c.cpu_ids),
                _devices(c.devices),
                _memories(c.memory),
                _dynamic(c.dynamic_resources),
            )
            for c in message.containers
        ),
    )


def allocatable_resources(message: api_pb2.AllocatableResourcesResponse) -> AllocatableResources:
    """An ``AllocatableResourcesResponse`` as a value."""
    return AllocatableResources(
        tuple(message.cpu_ids), _devices(message.devices), _memories(message.memory)
    )


_Message = TypeVar("_Message", api_pb2.PodResources, api_pb2.ListPodResourcesResponse)


def _parse(kind: type[_Message], data: bytes) -> _Message:
    try:
        return kind.FromString(data)
    except DecodeError as exc:
        raise WireError(f"not a {kind.__name__}: {exc}") from exc


def decode_pod(data: bytes) -> PodResources:
    """One encoded ``PodResources`` message."""
    return pod_resources(_parse(api_pb2.PodResources, data))


def pod_messages(data: bytes) -> list[bytes]:
    """The pods of an encoded ``ListPodResourcesResponse``, each encoded again on its own:
    equal pods, equal bytes (the key of :class:`PodListDecoder` and of the reconciler's
    order-insensitive comparison)."""
    answer = _parse(api_pb2.ListPodResourcesResponse, data)
    return [p.SerializeToString() for p in answer.pod_resources]


def decode_list(data: bytes) -> tuple[PodResources, ...]:
    """An encoded ``ListPodResourcesResponse``."""
    answer = _parse(api_pb2.ListPodResourcesResponse, data)
    return tuple(pod_resources(p) for p in answer.pod_resources)


class PodListDecoder:
    """Converts successive ``List`` answers, reusing the value of every pod whose encoding
    did not change since the previous answer (only those are kept: no growth)."""

    def __init__(self) -> None:
        self._previous: dict[bytes, PodResources] = {}

    def decode(self, data: bytes) -> tuple[PodResources, ...]:
        answer = _parse(api_pb2.ListPodResourcesResponse, data)
        previous = self._previous
        current: dict[bytes, PodResources] = {}
        pods: list[PodResources] = []
        for message in answer.pod_resources:
            key = message.SerializeToString()
            pod = current.get(key) or previous.get(key)
            if pod is None:
                pod = pod_resources(message)
            current[key] = pod
            pods.append(pod)
        self._previous = current
        return tuple(pods)
