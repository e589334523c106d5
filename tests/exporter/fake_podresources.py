"""A small podresources gRPC server for the exporter's tests, on a real unix socket.

Serves canned pods (built from ``exporter.resources`` values) with fault injection:
a delay before answering (to exceed the client's deadline), pods listed in a new random
order on every List (as the kubelet, which lists them in map order), ``Get`` or
``GetAllocatableResources`` answered with UNIMPLEMENTED, and stop / restart (the socket
file is removed and created again, as the kubelet does when it restarts). Counts calls
per method.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from exporter.resources import (
    AllocatableResources,
    ClaimResources,
    DeviceAssignment,
    MemoryBlock,
    PodResources,
)
from protos.podresources.v1 import api_pb2, api_pb2_grpc


def _topology(ids: Iterable[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in ids])


def _devices(items: Iterable[DeviceAssignment]) -> list[api_pb2.ContainerDevices]:
    out = []
    for d in items:
        msg = api_pb2.ContainerDevices(resource_name=d.resource_name, device_ids=d.device_ids)
        if d.numa_ids:
            msg.topology.CopyFrom(_topology(d.numa_ids))
        out.append(msg)
    return out


def _memory(items: Iterable[MemoryBlock]) -> list[api_pb2.ContainerMemory]:
    out = []
    for m in items:
        msg = api_pb2.ContainerMemory(memory_type=m.memory_type, size=m.size)
        if m.numa_ids:
            msg.topology.CopyFrom(_topology(m.numa_ids))
        out.append(msg)
    return out


def _dynamic(claims: tuple[ClaimResources, ...]) -> list[api_pb2.DynamicResource]:
    return [
        api_pb2.DynamicResource(
            claim_name=c.claim_name,
            claim_namespace=c.claim_namespace,
            claim_resources=[
                api_pb2.ClaimResource(
                    cdi_devices=[api_pb2.CDIDevice(name=i) for i in d.cdi_ids],
                    driver_name=d.driver,
                    pool_name=d.pool,
                    device_name=d.device,
                    share_id=d.share_id,
                )
                for d in c.devices
            ],
        )
        for c in claims
    ]


def to_message(pod: PodResources) -> api_pb2.PodResources:
    return api_pb2.PodResources(
        name=pod.name,
        namespace=pod.namespace,
        containers=[
            api_pb2.ContainerResources(
                name=c.name,
                cpu_ids=c.cpu_ids,
                devices=_devices(c.devices),
                memory=_memory(c.memory),
                dynamic_resources=_dynamic(c.dynamic),
            )
            for c in pod.containers
        ],
    )


class _Servicer(api_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, fake: FakePodResources) -> None:
        self.fake = fake

    def _enter(self, method: str) -> None:
        self.fake.calls[method] += 1
        delay = self.fake.delay_s
        if delay:
            self.fake.release.wait(delay)

    def List(self, request: Any, context: Any) -> api_pb2.ListPodResourcesResponse:
        self._enter("List")
        with self.fake.lock:
            pods = list(self.fake.pods)
        if self.fake.shuffle:  # the kubelet lists pods in Go map order
            random.shuffle(pods)
        return api_pb2.ListPodResourcesResponse(pod_resources=[to_message(p) for p in pods])

    def GetAllocatableResources(
        self, request: Any, context: Any
    ) -> api_pb2.AllocatableResourcesResponse:
        self._enter("GetAllocatableResources")
        if not self.fake.allocatable_implemented:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "GetAllocatableResources is not enabled")
        a = self.fake.allocatable
        return api_pb2.AllocatableResourcesResponse(
            cpu_ids=a.cpu_ids, devices=_devices(a.devices), memory=_memory(a.memory)
        )

    def Get(self, request: Any, context: Any) -> api_pb2.GetPodResourcesResponse:
        self._enter("Get")
        if not self.fake.get_implemented:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Get is not enabled")
        with self.fake.lock:
            for p in self.fake.pods:
                if p.namespace == request.pod_namespace and p.name == request.pod_name:
                    return api_pb2.GetPodResourcesResponse(pod_resources=to_message(p))
        context.abort(grpc.StatusCode.NOT_FOUND, "pod not found")
        raise AssertionError("unreachable")


class FakePodResources:
    """The fake kubelet's podresources endpoint. ``start()``/``stop()``/``restart()``."""

    def __init__(
        self,
        socket_path: Path,
        pods: Iterable[PodResources] = (),
        *,
        allocatable: AllocatableResources | None = None,
        get_implemented: bool = True,
        server_options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        self.socket_path = socket_path
        self.lock = threading.Lock()
        self.pods: list[PodResources] = list(pods)
        self.allocatable = allocatable or AllocatableResources()
        self.get_implemented = get_implemented
        self.server_options = list(server_options)  # grpc server channel arguments
        self.allocatable_implemented = True
        #: answer List with the pods in a new random order every time, as the kubelet does
        self.shuffle = False
        self.delay_s = 0.0
        self.release = threading.Event()  # set to end a delay early (test teardown)
        self.calls: Counter[str] = Counter()
        self._server: grpc.Server | None = None

    def set_pods(self, pods: Iterable[PodResources]) -> None:
        with self.lock:
            self.pods = list(pods)

    def start(self) -> FakePodResources:
        self.release.clear()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=self.server_options)
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(_Servicer(self), server)
        server.add_insecure_port(f"unix://{self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None
        self.socket_path.unlink(missing_ok=True)

    def restart(self) -> None:
        """Like a kubelet restart: the socket disappears and a new one is created."""
        self.stop()
        self.start()

    def __enter__(self) -> FakePodResources:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
