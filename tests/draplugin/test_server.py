"""The fake DRA kubelet plugin against a test-side kubelet, over real unix sockets:
registration as the kubelet's plugin watcher does it, then NodePrepareResources /
NodeUnprepareResources as the kubelet's DRA manager calls them; and the CDI spec."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from fakenrt.dra.claims import ResourceClaim, claim_from_manifest
from fakenrt.draplugin.cdi import cdi_spec, env_name, spec_file_name
from fakenrt.draplugin.server import ClaimReadError, FakeDraPlugin
from fakenrt.profiles import parse_profiles
from fakenrt.profiles.model import DraDriver
from protos.drahealth.v1alpha1 import api_pb2 as health_pb2
from protos.drahealth.v1alpha1 import api_pb2_grpc as health_grpc
from tests.draplugin.kubelet import FakePluginWatcher

WAIT = 10.0


def _driver(name: str = "gpu.nvidia.com") -> DraDriver:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "n1",
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 2,
                        "memoryPerNumaNode": "1Gi",
                        "draDevicesPerNumaNode": {name: 2},
                    },
                }
            ]
        },
        source="t",
    )
    (driver,) = profile.dra
    return driver


def _claim(name: str, *results: tuple[str, str, str]) -> ResourceClaim:
    return claim_from_manifest(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": r, "driver": d, "pool": "n1", "device": dev}
                            for r, d, dev in results
                        ]
                    }
                }
            },
        }
    )


@pytest.fixture
def dirs() -> Iterator[tuple[Path, Path]]:
    root = Path(tempfile.mkdtemp(prefix="dra-", dir="/tmp"))  # short: sun_path is 108 bytes
    yield root / "plugins", root / "registry"
    shutil.rmtree(root, ignore_errors=True)


def test_registration_then_prepare_as_the_kubelet_does(dirs: tuple[Path, Path]) -> None:
    plugins, registry = dirs
    claims = {
        "c1": _claim("c1", ("gpu", "gpu.nvidia.com", "gpu-3"), ("nic", "nic.example.com", "nic-0")),
        "c2": _claim("c2", ("gpu", "gpu.nvidia.com", "gpu-9")),
        "c3": _claim("c3", ("a", "gpu.nvidia.com", "gpu-0"), ("b", "gpu.nvidia.com", "gpu-0")),
    }

    def read(namespace: str, name: str) -> ResourceClaim:
        if name not in claims:
            raise ClaimReadError(f'resourceclaims.resource.k8s.io "{name}" not found')
        return claims[name]

    plugin = FakeDraPlugin(
        _driver(), node="n1", read_claim=read, plugins_dir=plugins, registry_dir=registry
    )
    watcher = FakePluginWatcher(registry)
    plugin.start()
    try:
        assert plugin.wait_registered(WAIT)
        (info,) = watcher.infos
        assert (info.type, info.name, list(info.supported_versions)) == (
            "DRAPlugin",
            "gpu.nvidia.com",
            ["v1.DRAPlugin"],
        )
        assert info.endpoint == str(plugins / "gpu.nvidia.com" / "dra.sock")

        response = watcher.prepare(
            "gpu.nvidia.com", ("ns", "uid-c1", "c1"), ("ns", "uid-c2", "c2"), ("ns", "uid-c3", "c3")
        )
        ok = response.claims["uid-c1"]
        assert ok.error == ""
        (device,) = ok.devices  # only this driver's result
        assert (device.pool_name, device.device_name, list(device.request_names)) == (
            "n1",
            "gpu-3",
            ["gpu"],
        )
        assert list(device.cdi_device_ids) == ["k8s.gpu.nvidia.com/device=gpu-3"]
        assert response.claims["uid-c2"].error == (
            "device n1/gpu-9 is not a device of driver gpu.nvidia.com on node n1 (pool n1)"
        )
        (shared,) = response.claims["uid-c3"].devices  # one device for two requests
        assert list(shared.request_names) == ["a", "b"]
        assert plugin.prepared == {"uid-c1", "uid-c3"}

        with pytest.raises(grpc.RpcError) as failed:
            watcher.prepare("gpu.nvidia.com", ("ns", "other-uid", "c1"))
        assert "UID mismatch" in str(failed.value.details())
        with pytest.raises(grpc.RpcError, match="get resource claims: "):
            watcher.prepare("gpu.nvidia.com", ("ns", "u", "missing"))

        unprepared = watcher.unprepare("gpu.nvidia.com", ("ns", "uid-c1", "c1"))
        assert unprepared.claims["uid-c1"].error == ""
        assert plugin.prepared == {"uid-c3"}
    finally:
        plugin.stop()
        watcher.stop()
    assert not list(plugins.rglob("*.sock")) and not list(registry.glob("*.sock"))


def test_the_health_stream_repeats_every_device_healthy_until_the_plugin_stops(
    dirs: tuple[Path, Path],
) -> None:
    plugins, registry = dirs
    plugin = FakeDraPlugin(
        _driver(),
        node="n1",
        read_claim=lambda n, c: _claim(c),
        plugins_dir=plugins,
        registry_dir=registry,
        health_interval_s=0.1,
    )
    watcher = FakePluginWatcher(registry)
    plugin.start()
    try:
        assert plugin.wait_registered(WAIT)
        before = int(time.time())
        answers = watcher.watch_health("gpu.nvidia.com", 3)
        assert len(answers) == 3
        for answer in answers:
            assert [(d.device.pool_name, d.device.device_name) for d in answer.devices] == [
                ("n1", f"gpu-{i}") for i in range(4)
            ]
            assert {d.health for d in answer.devices} == {health_pb2.HEALTHY}
            assert {d.health_check_timeout_seconds for d in answer.devices} == {1}  # 3 x 0.1 s
            assert all(d.last_updated_time >= before for d in answer.devices)

        # a stream left open ends when the plugin stops: the kubelet sees it end
        with grpc.insecure_channel(f"unix://{watcher.plugins['gpu.nvidia.com']}") as channel:
            stream = iter(
                health_grpc.DRAResourceHealthStub(channel).NodeWatchResources(
                    health_pb2.NodeWatchResourcesRequest(), timeout=WAIT
                )
            )
            next(stream)
            plugin.stop()
            with pytest.raises((grpc.RpcError, StopIteration)):
                while True:
                    next(stream)
    finally:
        plugin.stop()
        watcher.stop()


def test_an_unsupported_service_is_refused_by_the_kubelet(dirs: tuple[Path, Path]) -> None:
    """What a plugin learns when the kubelet refuses it (here: a test watcher speaking
    no DRA service the plugin offers)."""
    plugins, registry = dirs
    plugin = FakeDraPlugin(
        _driver(),
        node="n1",
        read_claim=lambda n, c: _claim(c),
        plugins_dir=plugins,
        registry_dir=registry,
    )
    watcher = FakePluginWatcher(registry, services=("v2.DRAPlugin",))
    plugin.start()
    try:
        deadline = time.monotonic() + WAIT
        while plugin.registration_error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not plugin.wait_registered(0)
        assert plugin.registration_error == "none of ['v1.DRAPlugin'] is supported"
    finally:
        plugin.stop()
        watcher.stop()


def test_cdi_spec_defines_every_device() -> None:
    spec = cdi_spec(_driver())
    assert spec["cdiVersion"] == "0.6.0"
    assert spec["kind"] == "k8s.gpu.nvidia.com/device"
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert spec["devices"][0]["containerEdits"] == {
        "env": ["FAKENRT_DRA_GPU_NVIDIA_COM_GPU_0=gpu-0"]
    }
    assert spec_file_name("gpu.nvidia.com") == "k8s.gpu.nvidia.com-device.json"
    assert re.fullmatch(r"[A-Z0-9_]+", env_name("nic.example.com", "nic-0"))
