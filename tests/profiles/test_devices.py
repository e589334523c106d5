"""Device entries: the three forms, generated ids, unhealthy devices."""

from __future__ import annotations

from typing import Any

import pytest

from fakenrt.profiles import DeviceSet, parse_profiles


def _parse(zones: list[dict[str, Any]], devices: dict[str, Any] | None = None) -> Any:
    node: dict[str, Any] = {"name": "n", "zones": zones}
    if devices is not None:
        node["devices"] = devices
    (profile,) = parse_profiles({"nodes": [node]}, source="p.yaml")
    return profile


def _zone(zone_id: int, cpu: int, devices: dict[str, Any]) -> dict[str, Any]:
    return {"id": zone_id, "cpus": str(cpu), "memory": 0, "devices": devices}


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(3, DeviceSet(ids=("GPU-0", "GPU-1", "GPU-2")), id="count"),
        pytest.param(0, DeviceSet(ids=()), id="zero"),
        pytest.param(["u-1", "u-0"], DeviceSet(ids=("u-1", "u-0")), id="ids-keep-order"),
        pytest.param(
            {"count": 3, "unhealthy": 2},
            DeviceSet(ids=("GPU-0", "GPU-1", "GPU-2"), unhealthy=frozenset({"GPU-1", "GPU-2"})),
            id="count-unhealthy-last",
        ),
        pytest.param(
            {"ids": ["a", "b"], "unhealthy": ["a"]},
            DeviceSet(ids=("a", "b"), unhealthy=frozenset({"a"})),
            id="ids-unhealthy-ids",
        ),
        pytest.param(
            {"ids": ["a", "b"], "unhealthy": 1},
            DeviceSet(ids=("a", "b"), unhealthy=frozenset({"b"})),
            id="ids-unhealthy-count",
        ),
    ],
)
def test_device_forms(entry: object, expected: DeviceSet) -> None:
    profile = _parse([_zone(0, 0, {"nvidia.com/gpu": entry})])
    assert profile.zones[0].devices["nvidia.com/gpu"] == expected


def test_generated_ids_are_node_wide_in_zone_id_order_then_node_devices() -> None:
    profile = _parse(
        [
            _zone(1, 1, {"nvidia.com/gpu": 2, "example.com/nic": ["eth9"]}),
            _zone(0, 0, {"nvidia.com/gpu": {"count": 2, "unhealthy": 1}, "example.com/nic": 1}),
        ],
        devices={"nvidia.com/gpu": 1, "example.com/license": 2},
    )
    zone0, zone1 = profile.zones
    assert zone0.devices["nvidia.com/gpu"].ids == ("GPU-0", "GPU-1")
    assert zone0.devices["nvidia.com/gpu"].healthy == ("GPU-0",)
    assert zone1.devices["nvidia.com/gpu"].ids == ("GPU-2", "GPU-3")
    assert zone0.devices["example.com/nic"].ids == ("NIC-0",)
    assert zone1.devices["example.com/nic"].ids == ("eth9",)
    assert profile.devices == {
        "example.com/license": DeviceSet(ids=("LICENSE-0", "LICENSE-1")),
        "nvidia.com/gpu": DeviceSet(ids=("GPU-4",)),
    }


def test_shape_devices_repeat_per_zone_with_fresh_ids() -> None:
    shape = {
        "numaNodes": 3,
        "coresPerNumaNode": 1,
        "memoryPerNumaNode": 0,
        "devicesPerNumaNode": {"nvidia.com/gpu": {"count": 2, "unhealthy": 1}},
    }
    (profile,) = parse_profiles({"nodes": [{"name": "s", "shape": shape}]}, source="p.yaml")
    sets = [z.devices["nvidia.com/gpu"] for z in profile.zones]
    assert [s.ids for s in sets] == [("GPU-0", "GPU-1"), ("GPU-2", "GPU-3"), ("GPU-4", "GPU-5")]
    assert [s.healthy for s in sets] == [("GPU-0",), ("GPU-2",), ("GPU-4",)]


def test_device_ids_prefix_is_the_upper_cased_name_part() -> None:
    profile = _parse([_zone(0, 0, {"nvidia.com/mig-1g.10gb": 1, "rdma/hca_shared": 1})])
    assert profile.zones[0].devices["nvidia.com/mig-1g.10gb"].ids == ("MIG-1G.10GB-0",)
    assert profile.zones[0].devices["rdma/hca_shared"].ids == ("HCA_SHARED-0",)
