"""The committed device plugin v1beta1 stubs match the .proto, and the wire names match the
kubelet's (``k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto``)."""

from __future__ import annotations

from pathlib import Path

from protos.deviceplugin.v1beta1 import api_pb2
from protos.generate import DEVICEPLUGIN_PROTO, GENERATED, PROTOS, REPO_ROOT, generate


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    assert DEVICEPLUGIN_PROTO in PROTOS
    for produced in generate(tmp_path, DEVICEPLUGIN_PROTO):
        committed = REPO_ROOT / DEVICEPLUGIN_PROTO.parent / produced.name
        assert committed.read_bytes() == produced.read_bytes(), (
            f"{committed} drifted from {DEVICEPLUGIN_PROTO}: run `make protos` and commit"
        )
    generated = {p.name for p in (REPO_ROOT / DEVICEPLUGIN_PROTO.parent).glob("api_pb2*")}
    assert generated == set(GENERATED)


def _fields(message: type) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}  # type: ignore[attr-defined]


def test_wire_names_and_numbers() -> None:
    assert api_pb2.DESCRIPTOR.package == "v1beta1"
    registration = api_pb2.DESCRIPTOR.services_by_name["Registration"]
    assert [m.name for m in registration.methods] == ["Register"]
    plugin = api_pb2.DESCRIPTOR.services_by_name["DevicePlugin"]
    assert [m.name for m in plugin.methods] == [
        "GetDevicePluginOptions",
        "ListAndWatch",
        "GetPreferredAllocation",
        "Allocate",
        "PreStartContainer",
    ]
    assert plugin.methods_by_name["ListAndWatch"].server_streaming
    assert _fields(api_pb2.RegisterRequest) == {
        "version": 1,
        "endpoint": 2,
        "resource_name": 3,
        "options": 4,
    }
    assert _fields(api_pb2.DevicePluginOptions) == {
        "pre_start_required": 1,
        "get_preferred_allocation_available": 2,
    }
    assert _fields(api_pb2.Device) == {"ID": 1, "health": 2, "topology": 3}
    assert _fields(api_pb2.NUMANode) == {"ID": 1}
    assert _fields(api_pb2.ContainerPreferredAllocationRequest) == {
        "available_deviceIDs": 1,
        "must_include_deviceIDs": 2,
        "allocation_size": 3,
    }
    assert _fields(api_pb2.ContainerPreferredAllocationResponse) == {"deviceIDs": 1}
    assert _fields(api_pb2.ContainerAllocateRequest) == {"devices_ids": 1}
    assert _fields(api_pb2.ContainerAllocateResponse) == {
        "envs": 1,
        "mounts": 2,
        "devices": 3,
        "annotations": 4,
        "cdi_devices": 5,
    }
