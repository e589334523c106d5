"""Properties of render_nrt over generated shapes and uses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.nrt import render_nrt
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.profiles.resources import zone_allocatable, zone_capacity


@st.composite
def profiles(draw: st.DrawFn) -> NodeProfile:
    numa = draw(st.integers(1, 8))
    threads = draw(st.sampled_from([1, 2]))
    cores = draw(st.integers(1, 8))
    shape: dict[str, Any] = {
        "numaNodes": numa,
        "coresPerNumaNode": cores,
        "threadsPerCore": threads,
        "memoryPerNumaNode": f"{draw(st.integers(0, 64))}Gi",
        "hugepagesPerNumaNode": {"hugepages-2Mi": f"{2 * draw(st.integers(0, 8))}Mi"},
        "devicesPerNumaNode": {
            "nvidia.com/gpu": {
                "count": (gpus := draw(st.integers(0, 4))),
                "unhealthy": draw(st.integers(0, gpus)),
            }
        },
    }
    total = numa * cores * threads
    reserved = draw(st.sets(st.integers(0, total - 1), max_size=2))
    kubelet = {"reservedSystemCPUs": ",".join(map(str, sorted(reserved)))} if reserved else {}
    (profile,) = parse_profiles(
        {"nodes": [{"name": "n", "kubelet": kubelet, "shape": shape}]}, source="h"
    )
    return profile


@settings(max_examples=60, deadline=None)
@given(data=st.data(), profile=profiles())
def test_columns_are_consistent(data: st.DataObject, profile: NodeProfile) -> None:
    allocatable = zone_allocatable(profile)
    usage = {
        zone: {name: data.draw(st.integers(0, amount)) for name, amount in amounts.items()}
        for zone, amounts in allocatable.items()
    }
    nrt = render_nrt(profile, usage=usage)
    capacity = zone_capacity(profile)
    assert [z["name"] for z in nrt["zones"]] == [f"node-{i}" for i in profile.zone_ids]
    for zone in nrt["zones"]:
        zone_id = int(zone["name"].removeprefix("node-"))
        assert len(zone["costs"]) == len(profile.zones)
        rows = {r["name"]: r for r in zone["resources"]}
        assert set(rows) == set(capacity[zone_id])
        for name, row in rows.items():
            cap, alloc, avail = (int(row[k]) for k in ("capacity", "allocatable", "available"))
            assert cap == capacity[zone_id][name]
            assert 0 <= avail <= alloc <= cap
            assert avail == alloc - usage[zone_id][name]
    # reserved CPUs and unhealthy devices are the whole capacity/allocatable gap
    gap = sum(capacity[z]["cpu"] - allocatable[z]["cpu"] for z in capacity)
    assert gap == len(profile.kubelet.reserved_cpus)
