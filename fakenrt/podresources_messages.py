"""The podresources v1 messages a kubelet would send for a node profile and its pods. Pure:
builds protobuf values (the generated ``protos.podresources.v1.api_pb2`` messages) and
imports no gRPC. The fake server (:mod:`fakenrt.podresources_server`) sends them; the same
facts as the exporter's typed values are :mod:`fakenrt.podresources_report` (a test
requires the exporter's decoding of these messages to equal them).
"""

from __future__ import annotations

from collections.abc import Iterable

from fakenrt.kubelet.allocation import INIT, ContainerAllocation, DynamicResource, PodAllocation
from fakenrt.podresources_report import DeviceNuma
from fakenrt.profiles.model import NodeProfile
from protos.podresources.v1 import api_pb2


def _topology(numa: Iterable[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in sorted(numa)])


def _device_entry(resource: str, device_id: str, numa: int | None) -> api_pb2.ContainerDevices:
    if numa is None:
        return api_pb2.ContainerDevices(resource_name=resource, device_ids=[device_id])
    return api_pb2.ContainerDevices(
        resource_name=resource, device_ids=[device_id], topology=_topology([numa])
    )


def _dynamic(resource: DynamicResource) -> api_pb2.DynamicResource:
    return api_pb2.DynamicResource(
        claim_name=resource.claim_name,
        claim_namespace=resource.claim_namespace,
        claim_resources=[
            api_pb2.ClaimResource(
                cdi_devices=[api_pb2.CDIDevice(name=cdi) for cdi in r.cdi_ids],
                driver_name=r.driver,
                pool_name=r.pool,
                device_name=r.device,
                share_id=r.share_id,
            )
            for r in resource.resources
        ],
    )


def _container(c: ContainerAllocation, numa_of: DeviceNuma) -> api_pb2.ContainerResources:
    return api_pb2.ContainerResources(
        name=c.name,
        cpu_ids=sorted(c.cpus),
        devices=[
            _device_entry(resource, device_id, numa_of.get((resource, device_id)))
            for resource in sorted(c.devices)
            for device_id in c.devices[resource]
        ],
        memory=[
            api_pb2.ContainerMemory(memory_type=b.type, size=b.size, topology=_topology(b.numa))
            for b in c.memory
        ],
        dynamic_resources=[_dynamic(d) for d in c.dynamic],
    )


def pod_message(pod: PodAllocation, numa_of: DeviceNuma) -> api_pb2.PodResources:
    """A pod as the kubelet lists it: sidecars and regular containers, init ones left out."""
    return api_pb2.PodResources(
        name=pod.name,
        namespace=pod.namespace,
        containers=[_container(c, numa_of) for c in pod.containers if c.kind != INIT],
    )


def allocatable_message(profile: NodeProfile) -> api_pb2.AllocatableResourcesResponse:
    """What the node's resource managers can hand out exclusively."""
    kubelet = profile.kubelet
    cpus: list[int] = []
    if kubelet.cpu_manager_policy == "static":
        every = frozenset().union(*(z.cpus for z in profile.zones))
        cpus = sorted(every - kubelet.reserved_cpus)
    devices = [
        _device_entry(resource, device_id, zone.id)
        for zone in profile.zones
        for resource in sorted(zone.devices)
        for device_id in zone.devices[resource].healthy
    ]
    devices += [
        _device_entry(resource, device_id, None)
        for resource in sorted(profile.devices)
        for device_id in profile.devices[resource].healthy
    ]
    memory: list[api_pb2.ContainerMemory] = []
    if kubelet.memory_manager_policy == "Static":
        for zone in profile.zones:
            sizes = {"memory": zone.memory, **zone.hugepages}
            memory += [
                api_pb2.ContainerMemory(memory_type=name, size=size, topology=_topology([zone.id]))
                for name, size in sorted(sizes.items())
            ]
    return api_pb2.AllocatableResourcesResponse(devices=devices, cpu_ids=cpus, memory=memory)
