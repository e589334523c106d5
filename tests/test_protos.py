"""The committed podresources stubs match the .proto, and a call round-trips over a real
unix socket."""

from __future__ import annotations

from concurrent import futures
from pathlib import Path

import grpc

from protos.generate import GENERATED, PROTO, REPO_ROOT, generate
from protos.podresources.v1 import api_pb2, api_pb2_grpc


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    for produced in generate(tmp_path):
        committed = REPO_ROOT / PROTO.parent / produced.name
        assert committed.read_bytes() == produced.read_bytes(), (
            f"{committed} drifted from {PROTO}: run `make protos` and commit the result"
        )
    assert {p.name for p in (REPO_ROOT / PROTO.parent).glob("api_pb2*")} == set(GENERATED)


def test_wire_names_and_numbers() -> None:
    fields = {f.name: f.number for f in api_pb2.ContainerResources.DESCRIPTOR.fields}
    assert fields == {"name": 1, "devices": 2, "cpu_ids": 3, "memory": 4, "dynamic_resources": 5}
    assert api_pb2.NUMANode.DESCRIPTOR.fields_by_name["ID"].number == 1
    claim = {f.name: f.number for f in api_pb2.ClaimResource.DESCRIPTOR.fields}
    assert claim == {
        "cdi_devices": 1,
        "driver_name": 2,
        "pool_name": 3,
        "device_name": 4,
        "share_id": 5,
    }
    dynamic = {f.name: f.number for f in api_pb2.DynamicResource.DESCRIPTOR.fields}
    assert dynamic == {"claim_name": 2, "claim_namespace": 3, "claim_resources": 4}
    assert api_pb2.DESCRIPTOR.package == "v1"
    service = api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert [m.name for m in service.methods] == ["List", "GetAllocatableResources", "Get"]


class _Lister(api_pb2_grpc.PodResourcesListerServicer):
    def List(
        self, request: api_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.ListPodResourcesResponse:
        topo = api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=1)])
        container = api_pb2.ContainerResources(
            name="c1",
            cpu_ids=[2, 3],
            devices=[
                api_pb2.ContainerDevices(
                    resource_name="nvidia.com/gpu", device_ids=["GPU-0"], topology=topo
                )
            ],
            memory=[api_pb2.ContainerMemory(memory_type="memory", size=1 << 30, topology=topo)],
        )
        pod = api_pb2.PodResources(name="p1", namespace="default", containers=[container])
        return api_pb2.ListPodResourcesResponse(pod_resources=[pod])

    def GetAllocatableResources(
        self, request: api_pb2.AllocatableResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocatableResourcesResponse:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not served by this test")

    def Get(
        self, request: api_pb2.GetPodResourcesRequest, context: grpc.ServicerContext
    ) -> api_pb2.GetPodResourcesResponse:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not served by this test")


def test_list_round_trips_over_a_unix_socket(tmp_path: Path) -> None:
    socket_path = tmp_path / "kubelet.sock"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(_Lister(), server)
    server.add_insecure_port(f"unix://{socket_path}")
    server.start()
    try:
        with grpc.insecure_channel(f"unix://{socket_path}") as channel:
            stub = api_pb2_grpc.PodResourcesListerStub(channel)
            response = stub.List(api_pb2.ListPodResourcesRequest(), timeout=10)
    finally:
        server.stop(grace=None)
    (pod,) = response.pod_resources
    (container,) = pod.containers
    assert (pod.namespace, pod.name, container.name) == ("default", "p1", "c1")
    assert list(container.cpu_ids) == [2, 3]
    assert container.devices[0].topology.nodes[0].ID == 1
    assert container.memory[0].size == 1 << 30
