"""ResourceSlices and DeviceClasses of a profile: their shape, the API's limits, and the
real API server accepting them (resource.k8s.io/v1 is served by kube-apiserver v1.36)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from exporter.kubeclient import KubeClient, path
from fakenrt.dra.slices import (
    MAX_DEVICES_PER_SLICE,
    DeviceClassConflict,
    device_classes,
    resource_slices,
    slice_name,
)
from fakenrt.profiles import example_profile, load_profiles, parse_profiles
from fakenrt.profiles.model import NodeProfile
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane


def _profile(name: str, **dra: Any) -> NodeProfile:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": name,
                    "dra": dra,
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 2,
                        "memoryPerNumaNode": "1Gi",
                        "draDevicesPerNumaNode": {"gpu.nvidia.com": 1},
                    },
                }
            ]
        },
        source="t",
    )
    return profile


def test_a_pool_per_driver_with_the_nodes_devices() -> None:
    profile = next(p for p in load_profiles(example_profile("dra")) if p.name == "dra-gpu")
    cpu, gpu = resource_slices(profile, generation=3)
    assert [s["spec"]["driver"] for s in (cpu, gpu)] == ["dra.cpu", "gpu.nvidia.com"]
    assert gpu["spec"]["nodeName"] == "dra-gpu"
    assert gpu["spec"]["pool"] == {"name": "dra-gpu", "generation": 3, "resourceSliceCount": 1}
    first = gpu["spec"]["devices"][0]
    assert first["name"] == "gpu-0"
    assert first["attributes"]["type"] == {"string": "gpu"}  # the driver's own domain left out
    assert first["attributes"]["resource.kubernetes.io/numaNode"] == {"int": 0}
    assert first["capacity"]["memory"] == {"value": "80Gi"}
    grouped = cpu["spec"]["devices"][1]
    assert grouped["allowMultipleAllocations"] is True
    assert grouped["capacity"] == {"dra.cpu/cpu": {"value": "8"}}  # as dra-driver-cpu names it
    assert grouped["attributes"]["numaNodeID"] == {"int": 1}
    assert grouped["attributes"]["dra.net/numaNode"] == {"int": 1}


def test_large_pools_are_split_into_slices_of_at_most_128_devices() -> None:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "big",
                    "zones": [{"id": 0, "cpus": "0", "memory": 0, "dra": {"nic.example.com": 300}}],
                }
            ]
        },
        source="t",
    )
    slices = resource_slices(profile)
    assert [len(s["spec"]["devices"]) for s in slices] == [128, 128, 44]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {3}
    assert len({s["metadata"]["name"] for s in slices}) == 3
    assert MAX_DEVICES_PER_SLICE == 128


def test_long_names_are_shortened_with_a_hash() -> None:
    name = slice_name("n" * 250, "gpu.nvidia.com", 0)
    assert len(name) == 253 and name != slice_name("n" * 250, "gpu.nvidia.com", 1)


def test_device_classes_are_shared_across_nodes_and_conflicts_refused() -> None:
    classes = device_classes([_profile("a"), _profile("b")], labels={"x": "y"})
    (gpu,) = classes
    assert gpu["metadata"] == {"name": "gpu.nvidia.com", "labels": {"x": "y"}}
    renamed = _profile("c", drivers={"gpu.nvidia.com": {"deviceClass": "dra.cpu"}})
    cpu = _profile("d", cpu={})
    with pytest.raises(DeviceClassConflict, match=r"DeviceClass dra\.cpu: node d selects"):
        device_classes([renamed, cpu])


def test_the_api_server_accepts_them(control_plane: ControlPlane) -> None:
    kube: KubeClient = admin_kube(control_plane.server, control_plane)
    suffix = uuid.uuid4().hex[:6]
    profiles = [p for p in load_profiles(example_profile("dra")) if p.dra]
    slices_path = path("apis", "resource.k8s.io", "v1", "resourceslices")
    classes_path = path("apis", "resource.k8s.io", "v1", "deviceclasses")
    created: list[str] = []
    classes: list[str] = []
    try:
        for body in device_classes(profiles):
            body["metadata"]["name"] += f"-{suffix}"
            kube.create(classes_path, body)
            classes.append(body["metadata"]["name"])
        for profile in profiles:
            for body in resource_slices(profile):
                body["metadata"]["name"] += f"-{suffix}"
                body["spec"]["pool"]["name"] += f"-{suffix}"
                got = kube.create(slices_path, body)
                created.append(body["metadata"]["name"])
                # stored as sent: nothing dropped (allowMultipleAllocations is beta and on)
                assert got["spec"]["devices"] == body["spec"]["devices"]
    finally:
        for name in created:
            kube.delete(f"{slices_path}/{name}")
        for name in classes:
            kube.delete(f"{classes_path}/{name}")
    assert created and classes
