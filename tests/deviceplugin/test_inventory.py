"""The fake device plugin's device list and its deterministic preferred allocation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.deviceplugin.inventory import (
    PluginDevice,
    plugin_devices,
    preferred_allocation,
    resources,
)
from fakenrt.profiles import parse_profiles

PROFILE = {
    "nodes": [
        {
            "name": "gpu",
            "devices": {"example.com/license": 1},
            "zones": [
                {"id": 0, "cpus": "0-3", "memory": "8Gi",
                 "devices": {"nvidia.com/gpu": {"count": 2, "unhealthy": 1}}},
                {"id": 1, "cpus": "4-7", "memory": "8Gi", "devices": {"nvidia.com/gpu": 2}},
            ],
        }
    ]
}  # fmt: skip


def test_devices_in_profile_order_with_numa_and_health() -> None:
    (profile,) = parse_profiles(PROFILE, source="p.yaml")
    assert resources(profile) == ("example.com/license", "nvidia.com/gpu")
    assert plugin_devices(profile, "nvidia.com/gpu") == (
        PluginDevice("GPU-0", 0, True),
        PluginDevice("GPU-1", 0, False),
        PluginDevice("GPU-2", 1, True),
        PluginDevice("GPU-3", 1, True),
    )
    assert plugin_devices(profile, "example.com/license") == (PluginDevice("LICENSE-0", None),)
    with pytest.raises(ValueError, match="has no devices of 'rdma/hca'"):
        plugin_devices(profile, "rdma/hca")


DEVICES = (
    PluginDevice("a0", 0),
    PluginDevice("a1", 0),
    PluginDevice("a2", 0),
    PluginDevice("b0", 1),
    PluginDevice("b1", 1),
    PluginDevice("x", None),
)


@pytest.mark.parametrize(
    ("available", "must", "size", "expected"),
    [
        pytest.param(["a0", "a1", "a2", "b0", "b1"], [], 1, ["b0"], id="fullest NUMA node first"),
        pytest.param(["b1", "b0", "a2", "a1", "a0"], [], 3, ["b0", "b1", "a0"], id="order-free"),
        pytest.param(["a0", "a1", "b0", "b1"], [], 2, ["a0", "a1"], id="tie: lower NUMA id"),
        pytest.param(["a0", "a2", "b1", "x"], ["a2"], 2, ["a2", "a0"], id="must-include first"),
        pytest.param(["x", "b0"], [], 2, ["b0", "x"], id="no affinity last"),
        pytest.param(["a0", "zz"], [], 3, ["a0"], id="unknown ids ignored, fewer returned"),
    ],
)
def test_preferred_allocation(
    *, available: list[str], must: list[str], size: int, expected: list[str]
) -> None:
    assert preferred_allocation(DEVICES, available=available, must_include=must, size=size) == (
        expected
    )


@given(
    st.sets(st.sampled_from([d.id for d in DEVICES])),
    st.integers(0, 6),
    st.randoms(use_true_random=False),
)
def test_preferred_is_a_deterministic_subset(available: set[str], size: int, rnd) -> None:  # type: ignore[no-untyped-def]
    ids = sorted(available)
    must = ids[:1] if size else []
    first = preferred_allocation(DEVICES, available=ids, must_include=must, size=size)
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    again = preferred_allocation(DEVICES, available=shuffled, must_include=must, size=size)
    assert first == again
    assert len(first) == min(size, len(available)) == len(set(first))
    assert set(first) <= available
    assert set(must) <= set(first)
