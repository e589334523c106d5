"""The fake device plugin against a test-side fake kubelet, over real unix sockets: the
kubelet's Registration service receives Register, then - as the kubelet's device manager
does - dials the plugin's endpoint and watches ListAndWatch."""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from fakenrt.deviceplugin.inventory import PluginDevice
from fakenrt.deviceplugin.server import (
    DevicePluginError,
    FakeDevicePlugin,
    endpoint_name,
    env_name,
)
from protos.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc

WAIT = 10.0
RESOURCE = "nvidia.com/gpu"
DEVICES = (
    PluginDevice("GPU-0", 0),
    PluginDevice("GPU-1", 0, healthy=False),
    PluginDevice("GPU-2", 1),
    PluginDevice("GPU-3", 1),
)


class FakeKubelet(api_pb2_grpc.RegistrationServicer):
    """The kubelet's side: Registration on ``kubelet.sock``; after each Register it
    watches the plugin's ListAndWatch stream into ``lists``."""

    def __init__(self, plugin_dir: Path) -> None:
        self.plugin_dir = plugin_dir
        self.registered: queue.Queue[api_pb2.RegisterRequest] = queue.Queue()
        self.lists: queue.Queue[list[tuple[str, str, list[int]]]] = queue.Queue()
        self._channels: list[grpc.Channel] = []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_RegistrationServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{plugin_dir / 'kubelet.sock'}")
        self._server.start()

    def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        self.registered.put(request)
        channel = grpc.insecure_channel(f"unix://{self.plugin_dir / request.endpoint}")
        self._channels.append(channel)
        stream = api_pb2_grpc.DevicePluginStub(channel).ListAndWatch(api_pb2.Empty())
        threading.Thread(target=self._watch, args=(stream,), daemon=True).start()
        return api_pb2.Empty()

    def _watch(self, stream: Iterator[api_pb2.ListAndWatchResponse]) -> None:
        try:
            for response in stream:
                self.lists.put(
                    [(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in response.devices]
                )
        except grpc.RpcError:
            return

    def stop(self) -> None:
        self._server.stop(grace=None)
        for channel in self._channels:
            channel.close()
        sock = self.plugin_dir / "kubelet.sock"
        if sock.exists():
            sock.unlink()


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    # a short path: unix socket paths hold at most 107 bytes
    path = Path(tempfile.mkdtemp(prefix="dp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kubelet(plugin_dir: Path) -> Iterator[FakeKubelet]:
    k = FakeKubelet(plugin_dir)
    yield k
    k.stop()


@pytest.fixture
def plugin(plugin_dir: Path, kubelet: FakeKubelet) -> Iterator[FakeDevicePlugin]:
    p = FakeDevicePlugin(RESOURCE, DEVICES, plugin_dir=plugin_dir, watch_interval=0.05)
    p.start()
    yield p
    p.stop()


def _stub(plugin: FakeDevicePlugin) -> tuple[grpc.Channel, api_pb2_grpc.DevicePluginStub]:
    channel = grpc.insecure_channel(f"unix://{plugin.socket_path}")
    return channel, api_pb2_grpc.DevicePluginStub(channel)


def test_registers_and_advertises_devices_with_numa_and_health(
    plugin: FakeDevicePlugin, kubelet: FakeKubelet
) -> None:
    request = kubelet.registered.get(timeout=WAIT)
    assert request.version == "v1beta1"
    assert request.resource_name == RESOURCE
    assert request.endpoint == endpoint_name(RESOURCE) == "fakenrt-nvidia.com_gpu.sock"
    assert request.options.get_preferred_allocation_available
    assert not request.options.pre_start_required
    assert kubelet.lists.get(timeout=WAIT) == [
        ("GPU-0", "Healthy", [0]),
        ("GPU-1", "Unhealthy", [0]),
        ("GPU-2", "Healthy", [1]),
        ("GPU-3", "Healthy", [1]),
    ]


def test_health_changes_are_streamed(plugin: FakeDevicePlugin, kubelet: FakeKubelet) -> None:
    kubelet.lists.get(timeout=WAIT)
    plugin.set_health("GPU-2", healthy=False)
    update = kubelet.lists.get(timeout=WAIT)
    assert ("GPU-2", "Unhealthy", [1]) in update
    plugin.set_health("GPU-1", healthy=True)
    assert ("GPU-1", "Healthy", [0]) in kubelet.lists.get(timeout=WAIT)
    with pytest.raises(KeyError):
        plugin.set_health("GPU-9", healthy=True)


def test_preferred_allocation_and_allocate(plugin: FakeDevicePlugin) -> None:
    channel, stub = _stub(plugin)
    with channel:
        options = stub.GetDevicePluginOptions(api_pb2.Empty(), timeout=WAIT)
        assert options.get_preferred_allocation_available
        preferred = stub.GetPreferredAllocation(
            api_pb2.PreferredAllocationRequest(
                container_requests=[
                    api_pb2.ContainerPreferredAllocationRequest(
                        available_deviceIDs=["GPU-3", "GPU-0", "GPU-2"], allocation_size=1
                    ),
                    api_pb2.ContainerPreferredAllocationRequest(
                        available_deviceIDs=["GPU-3", "GPU-0", "GPU-2"],
                        must_include_deviceIDs=["GPU-3"],
                        allocation_size=2,
                    ),
                ]
            ),
            timeout=WAIT,
        )
        assert [list(r.deviceIDs) for r in preferred.container_responses] == [
            ["GPU-0"],  # NUMA node 0 has fewer available devices: packed there
            ["GPU-3", "GPU-0"],
        ]
        allocated = stub.Allocate(
            api_pb2.AllocateRequest(
                container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=["GPU-0"])]
            ),
            timeout=WAIT,
        )
        assert dict(allocated.container_responses[0].envs) == {env_name(RESOURCE): "GPU-0"}
        with pytest.raises(grpc.RpcError) as exc:
            stub.Allocate(
                api_pb2.AllocateRequest(
                    container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=["GPU-1"])]
                ),
                timeout=WAIT,
            )
        assert exc.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "GPU-1" in (exc.value.details() or "")
        stub.PreStartContainer(api_pb2.PreStartContainerRequest(), timeout=WAIT)


def test_registers_again_after_a_kubelet_restart(
    plugin: FakeDevicePlugin, kubelet: FakeKubelet, plugin_dir: Path
) -> None:
    kubelet.registered.get(timeout=WAIT)
    kubelet.stop()
    plugin.socket_path.unlink()  # a restarting kubelet clears the directory
    restarted = FakeKubelet(plugin_dir)
    try:
        again = restarted.registered.get(timeout=WAIT)
        assert again.resource_name == RESOURCE
        assert restarted.lists.get(timeout=WAIT)[0] == ("GPU-0", "Healthy", [0])
        # The kubelet has the request before the plugin has counted the answer.
        deadline = time.monotonic() + WAIT
        while plugin.registrations < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert plugin.registrations == 2
    finally:
        restarted.stop()


def test_stop_removes_the_socket(plugin_dir: Path, kubelet: FakeKubelet) -> None:
    p = FakeDevicePlugin(RESOURCE, DEVICES, plugin_dir=plugin_dir)
    p.start()
    assert p.socket_path.exists()
    p.stop()
    assert not p.socket_path.exists()


def test_no_kubelet_is_a_clear_error(plugin_dir: Path) -> None:
    p = FakeDevicePlugin(RESOURCE, DEVICES, plugin_dir=plugin_dir, register_timeout=0.5)
    with pytest.raises(DevicePluginError, match=r"registration with .*kubelet\.sock failed"):
        p.start()
    assert not p.socket_path.exists()


def test_socket_path_too_long(tmp_path: Path) -> None:
    with pytest.raises(DevicePluginError, match="longer than 107 bytes"):
        FakeDevicePlugin(RESOURCE, DEVICES, plugin_dir=tmp_path / ("d" * 120))
