"""The committed DRA kubelet plugin v1 and plugin registration v1 stubs match their .proto
files, and the wire names match the kubelet's (``k8s.io/kubelet/pkg/apis/dra/v1`` and
``k8s.io/kubelet/pkg/apis/pluginregistration/v1``, kubelet v1.36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protos.dra.v1 import api_pb2 as dra
from protos.drahealth.v1alpha1 import api_pb2 as health
from protos.generate import (
    DRA_HEALTH_PROTO,
    DRA_PROTO,
    GENERATED,
    PROTOS,
    REGISTRATION_PROTO,
    REPO_ROOT,
    generate,
)
from protos.pluginregistration.v1 import api_pb2 as registration


@pytest.mark.parametrize("proto", [DRA_PROTO, REGISTRATION_PROTO, DRA_HEALTH_PROTO])
def test_committed_stubs_match_the_proto(tmp_path: Path, proto: Path) -> None:
    assert proto in PROTOS
    for produced in generate(tmp_path, proto):
        committed = REPO_ROOT / proto.parent / produced.name
        assert committed.read_bytes() == produced.read_bytes(), (
            f"{committed} drifted from {proto}: run `make protos` and commit"
        )
    assert {p.name for p in (REPO_ROOT / proto.parent).glob("api_pb2*")} == set(GENERATED)


def _fields(message: type) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}  # type: ignore[attr-defined]


def test_dra_wire_names_and_numbers() -> None:
    # the gRPC method paths the kubelet calls: /k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/...
    assert dra.DESCRIPTOR.package == "k8s.io.kubelet.pkg.apis.dra.v1"
    service = dra.DESCRIPTOR.services_by_name["DRAPlugin"]
    assert [m.name for m in service.methods] == ["NodePrepareResources", "NodeUnprepareResources"]
    assert _fields(dra.NodePrepareResourcesRequest) == {"claims": 1}
    assert _fields(dra.NodePrepareResourcesResponse) == {"claims": 1}
    assert _fields(dra.NodePrepareResourceResponse) == {"devices": 1, "error": 2}
    assert _fields(dra.Device) == {
        "request_names": 1,
        "pool_name": 2,
        "device_name": 3,
        "cdi_device_ids": 4,
        "share_id": 5,
    }
    assert dra.Device.DESCRIPTOR.fields_by_name["share_id"].has_presence
    assert _fields(dra.NodeUnprepareResourcesRequest) == {"claims": 1}
    assert _fields(dra.NodeUnprepareResourcesResponse) == {"claims": 1}
    assert _fields(dra.NodeUnprepareResourceResponse) == {"error": 1}
    assert _fields(dra.Claim) == {"namespace": 1, "uid": 2, "name": 3}
    # map<string, ...> is a repeated entry message with key = 1, value = 2
    entry = dra.NodePrepareResourcesResponse.DESCRIPTOR.fields_by_name["claims"].message_type
    assert entry is not None and entry.GetOptions().map_entry
    assert {f.name: f.number for f in entry.fields} == {"key": 1, "value": 2}


def test_registration_wire_names_and_numbers() -> None:
    assert registration.DESCRIPTOR.package == "pluginregistration"
    service = registration.DESCRIPTOR.services_by_name["Registration"]
    assert [m.name for m in service.methods] == ["GetInfo", "NotifyRegistrationStatus"]
    assert _fields(registration.PluginInfo) == {
        "type": 1,
        "name": 2,
        "endpoint": 3,
        "supported_versions": 4,
    }
    assert _fields(registration.RegistrationStatus) == {"plugin_registered": 1, "error": 2}
    assert _fields(registration.RegistrationStatusResponse) == {}
    assert _fields(registration.InfoRequest) == {}


def test_dra_health_wire_names_and_numbers() -> None:
    # the method path the kubelet calls: /v1alpha1.DRAResourceHealth/NodeWatchResources
    assert health.DESCRIPTOR.package == "v1alpha1"
    service = health.DESCRIPTOR.services_by_name["DRAResourceHealth"]
    (method,) = service.methods
    assert method.name == "NodeWatchResources"
    assert method.server_streaming and not method.client_streaming
    assert _fields(health.NodeWatchResourcesRequest) == {}
    assert _fields(health.NodeWatchResourcesResponse) == {"devices": 1}
    assert _fields(health.DeviceIdentifier) == {"pool_name": 1, "device_name": 2}
    assert _fields(health.DeviceHealth) == {
        "device": 1,
        "health": 2,
        "last_updated_time": 3,
        "health_check_timeout_seconds": 4,
        "message": 5,
    }
    assert dict(health.HealthStatus.items()) == {"UNKNOWN": 0, "HEALTHY": 1, "UNHEALTHY": 2}
