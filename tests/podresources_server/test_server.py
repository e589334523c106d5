"""The fake podresources server over a real unix socket, read with the generated stub and
with the exporter's own client (which must work unchanged against it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc
import pytest

from exporter.podresources_client import (
    PodResourcesClient,
    PodResourcesUnavailable,
    PodResourcesUnimplemented,
)
from exporter.resources import DeviceAssignment, MemoryBlock
from fakenrt.kubelet.allocation import INIT, SIDECAR, ContainerAllocation, PodAllocation
from fakenrt.kubelet.allocation import MemoryBlock as SimBlock
from fakenrt.podresources_server import (
    GET_DISABLED,
    GET_UNIMPLEMENTED,
    PodResourcesServer,
    PodResourcesServerError,
)
from fakenrt.profiles import NodeProfile, example_profile, load_profiles
from protos.podresources.v1 import api_pb2, api_pb2_grpc

GI = 2**30


class Source:
    """A PodResourcesSource whose pods tests change between calls."""

    def __init__(self, profile: NodeProfile, pods: Sequence[PodAllocation] = ()) -> None:
        self.profile = profile
        self.pods = list(pods)
        self.lock = threading.Lock()

    def snapshot(self) -> tuple[NodeProfile, Sequence[PodAllocation]]:
        with self.lock:
            return self.profile, tuple(self.pods)


def _dgx() -> NodeProfile:
    return load_profiles(example_profile("dgx"))[0]


TRAIN = PodAllocation(
    namespace="team-a",
    name="train",
    uid="u1",
    containers=(
        ContainerAllocation(name="setup", cpus=frozenset({1, 2}), kind=INIT),
        ContainerAllocation(
            name="proxy",
            cpus=frozenset({3}),
            devices={"example.com/license": ("LICENSE-1",)},
            kind=SIDECAR,
        ),
        ContainerAllocation(
            name="main",
            cpus=frozenset({33, 32, 34, 35}),
            devices={"nvidia.com/gpu": ("GPU-4", "GPU-0"), "rdma/hca": ("mlx5_1",)},
            memory=(
                SimBlock("memory", 16 * GI, frozenset({1, 0})),
                SimBlock("hugepages-1Gi", 2 * GI, frozenset({0})),
            ),
        ),
    ),
)
IDLE = PodAllocation(
    namespace="team-b", name="idle", uid="u2", containers=(ContainerAllocation("c"),)
)


@pytest.fixture
def socket_path(tmp_path: Path) -> Path:
    path = tmp_path / "kubelet.sock"
    assert len(str(path)) < 100, "pytest's tmp_path is too long for a unix socket"
    return path


@pytest.fixture
def source() -> Source:
    return Source(_dgx(), [TRAIN, IDLE])


@pytest.fixture
def server(socket_path: Path, source: Source) -> Iterator[PodResourcesServer]:
    with PodResourcesServer(socket_path, source) as srv:
        yield srv


@pytest.fixture
def stub(server: PodResourcesServer) -> Iterator[api_pb2_grpc.PodResourcesListerStub]:
    with grpc.insecure_channel(f"unix://{server.socket_path}") as channel:
        yield api_pb2_grpc.PodResourcesListerStub(channel)


def _topo(*ids: int) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in ids])


def test_list_reports_every_pod_as_the_kubelet_does(
    stub: api_pb2_grpc.PodResourcesListerStub,
) -> None:
    response = stub.List(api_pb2.ListPodResourcesRequest(), timeout=5)
    train, idle = response.pod_resources
    assert (train.namespace, train.name) == ("team-a", "train")
    # the plain init container is not listed; the sidecar comes before the app container
    assert [c.name for c in train.containers] == ["proxy", "main"]
    proxy, main = train.containers
    assert list(proxy.cpu_ids) == [3]
    assert list(proxy.devices) == [
        api_pb2.ContainerDevices(resource_name="example.com/license", device_ids=["LICENSE-1"])
    ]
    assert not proxy.devices[0].HasField("topology")
    assert list(main.cpu_ids) == [32, 33, 34, 35]
    # one entry per device, each with its NUMA node from the profile
    assert list(main.devices) == [
        api_pb2.ContainerDevices(
            resource_name="nvidia.com/gpu", device_ids=["GPU-4"], topology=_topo(1)
        ),
        api_pb2.ContainerDevices(
            resource_name="nvidia.com/gpu", device_ids=["GPU-0"], topology=_topo(0)
        ),
        api_pb2.ContainerDevices(
            resource_name="rdma/hca", device_ids=["mlx5_1"], topology=_topo(0)
        ),
    ]
    assert list(main.memory) == [
        api_pb2.ContainerMemory(memory_type="memory", size=16 * GI, topology=_topo(0, 1)),
        api_pb2.ContainerMemory(memory_type="hugepages-1Gi", size=2 * GI, topology=_topo(0)),
    ]
    assert (idle.namespace, idle.name) == ("team-b", "idle")
    assert [(c.name, list(c.cpu_ids), len(c.devices), len(c.memory)) for c in idle.containers] == [
        ("c", [], 0, 0)
    ]


def test_allocatable_resources(stub: api_pb2_grpc.PodResourcesListerStub) -> None:
    response = stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(), timeout=5)
    # every CPU but the reserved 0 and 64
    assert list(response.cpu_ids) == sorted(set(range(128)) - {0, 64})
    entries = [
        (d.resource_name, tuple(d.device_ids), tuple(n.ID for n in d.topology.nodes))
        for d in response.devices
    ]
    # healthy devices only (FPGA-1 is unhealthy), one entry each; no-affinity ones last
    assert entries == [
        ("example.com/fpga", ("FPGA-0",), (0,)),
        *[("nvidia.com/gpu", (f"GPU-{i}",), (0,)) for i in range(4)],
        ("rdma/hca", ("mlx5_0",), (0,)),
        ("rdma/hca", ("mlx5_1",), (0,)),
        *[("nvidia.com/gpu", (f"GPU-{i}",), (1,)) for i in range(4, 8)],
        ("example.com/license", ("LICENSE-0",), ()),
        ("example.com/license", ("LICENSE-1",), ()),
    ]
    assert [(m.memory_type, m.size, [n.ID for n in m.topology.nodes]) for m in response.memory] == [
        ("hugepages-1Gi", 16 * GI, [0]),
        ("memory", 512 * GI, [0]),
        ("memory", 512 * GI, [1]),
    ]


def test_allocatable_is_empty_for_none_policies(socket_path: Path) -> None:
    import dataclasses

    base = _dgx()
    kubelet = dataclasses.replace(
        base.kubelet, cpu_manager_policy="none", memory_manager_policy="None"
    )
    profile = dataclasses.replace(base, kubelet=kubelet)
    with PodResourcesServer(socket_path, Source(profile)) as srv:
        client = PodResourcesClient(srv.socket_path, timeout_s=5)
        allocatable = client.allocatable()
        client.close()
    assert allocatable.cpu_ids == ()
    assert allocatable.memory == ()
    assert len(allocatable.devices) == 13  # devices do not depend on those policies


def test_get(stub: api_pb2_grpc.PodResourcesListerStub) -> None:
    response = stub.Get(
        api_pb2.GetPodResourcesRequest(pod_name="train", pod_namespace="team-a"), timeout=5
    )
    assert [c.name for c in response.pod_resources.containers] == ["proxy", "main"]
    with pytest.raises(grpc.RpcError) as caught:
        stub.Get(
            api_pb2.GetPodResourcesRequest(pod_name="train", pod_namespace="team-b"), timeout=5
        )
    # a plain Go error in the kubelet: status UNKNOWN
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert caught.value.details() == "pod train in namespace team-b not found"


@pytest.mark.parametrize(
    ("mode", "code", "details"),
    [
        pytest.param(
            GET_UNIMPLEMENTED,
            grpc.StatusCode.UNIMPLEMENTED,
            "unknown method Get for service v1.PodResourcesLister",
            id="older-kubelet",
        ),
        pytest.param(
            GET_DISABLED,
            grpc.StatusCode.UNKNOWN,
            "PodResources API Get method disabled",
            id="gate-off",
        ),
    ],
)
def test_get_modes(
    socket_path: Path, source: Source, mode: str, code: grpc.StatusCode, details: str
) -> None:
    with (
        PodResourcesServer(socket_path, source, get_mode=mode) as srv,
        grpc.insecure_channel(f"unix://{srv.socket_path}") as channel,
    ):
        stub = api_pb2_grpc.PodResourcesListerStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Get(
                api_pb2.GetPodResourcesRequest(pod_name="train", pod_namespace="team-a"), timeout=5
            )
        assert (caught.value.code(), caught.value.details()) == (code, details)
        # List keeps working
        assert len(stub.List(api_pb2.ListPodResourcesRequest(), timeout=5).pod_resources) == 2


def test_exporter_client_reads_the_fake_server_unchanged(socket_path: Path, source: Source) -> None:
    with PodResourcesServer(socket_path, source, get_mode=GET_UNIMPLEMENTED) as srv:
        client = PodResourcesClient(srv.socket_path, timeout_s=5)
        try:
            pods = client.list()
            allocatable = client.allocatable()
            with pytest.raises(PodResourcesUnimplemented):
                client.get("team-a", "train")
        finally:
            client.close()
    train = pods[0]
    assert train.key == "team-a/train"
    main = train.containers[1]
    assert main.cpu_ids == (32, 33, 34, 35)
    assert main.devices == (
        DeviceAssignment("nvidia.com/gpu", ("GPU-4",), (1,)),
        DeviceAssignment("nvidia.com/gpu", ("GPU-0",), (0,)),
        DeviceAssignment("rdma/hca", ("mlx5_1",), (0,)),
    )
    assert main.memory == (
        MemoryBlock("memory", 16 * GI, (0, 1)),
        MemoryBlock("hugepages-1Gi", 2 * GI, (0,)),
    )
    assert len(allocatable.cpu_ids) == 126
    assert allocatable.memory_manager_static


def test_answers_follow_the_source(
    source: Source, stub: api_pb2_grpc.PodResourcesListerStub
) -> None:
    with source.lock:
        source.pods = [IDLE]
    names = [p.name for p in stub.List(api_pb2.ListPodResourcesRequest(), timeout=5).pod_resources]
    assert names == ["idle"]


def test_rate_limit_as_the_kubelets(socket_path: Path, source: Source) -> None:
    now = [100.0]
    with (
        PodResourcesServer(socket_path, source, rate_limit=(1.0, 2), clock=lambda: now[0]) as srv,
        grpc.insecure_channel(f"unix://{srv.socket_path}") as channel,
    ):
        stub = api_pb2_grpc.PodResourcesListerStub(channel)
        request = api_pb2.ListPodResourcesRequest()
        stub.List(request, timeout=5)
        stub.List(request, timeout=5)
        with pytest.raises(grpc.RpcError) as caught:
            stub.List(request, timeout=5)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert caught.value.details() == "rejected by rate limit"
        now[0] += 1.0  # one token refilled
        stub.List(request, timeout=5)
        with pytest.raises(grpc.RpcError):
            stub.List(request, timeout=5)


def test_stop_removes_the_socket_and_restart_recreates_it(
    socket_path: Path, source: Source
) -> None:
    srv = PodResourcesServer(socket_path, source)
    srv.start()
    try:
        client = PodResourcesClient(socket_path, timeout_s=5)
        assert len(client.list()) == 2
        srv.stop()
        assert not socket_path.exists()
        with pytest.raises(PodResourcesUnavailable):
            client.list()
        srv.start()
        assert socket_path.exists()
        # a client of the old socket recovers, as against a restarted kubelet
        assert len(client.list()) == 2
        srv.restart()
        assert len(client.list()) == 2
        client.close()
    finally:
        srv.stop()
    assert not socket_path.exists()
    assert not srv.serving
    srv.stop()  # stopping twice is harmless


def test_start_replaces_a_stale_socket(socket_path: Path, source: Source) -> None:
    import socket

    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(socket_path))
    stale.close()
    assert socket_path.exists()
    with PodResourcesServer(socket_path, source) as srv:
        client = PodResourcesClient(srv.socket_path, timeout_s=5)
        assert len(client.list()) == 2
        client.close()


def test_start_refuses_to_replace_a_regular_file(socket_path: Path, source: Source) -> None:
    socket_path.write_text("not a socket")
    with pytest.raises(PodResourcesServerError, match="exists and is not a socket"):
        PodResourcesServer(socket_path, source).start()
    assert socket_path.read_text() == "not a socket"


def test_start_twice_is_an_error(server: PodResourcesServer) -> None:
    with pytest.raises(PodResourcesServerError, match="already serving"):
        server.start()


def test_too_long_socket_path_is_refused(tmp_path: Path, source: Source) -> None:
    with pytest.raises(PodResourcesServerError, match="longer than 107 bytes"):
        PodResourcesServer(tmp_path / ("x" * 120), source)


def test_unknown_get_mode_is_refused(socket_path: Path, source: Source) -> None:
    with pytest.raises(ValueError, match="get_mode must be one of"):
        PodResourcesServer(socket_path, source, get_mode="maybe")
