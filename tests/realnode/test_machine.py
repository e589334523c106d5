"""Machine files of a profile node: what cAdvisor reads parses back to the profile's
topology and amounts (a cAdvisor-like reader and the exporter's sysfs reader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.sysfs import read_cpu_numa_map
from fakenrt.profiles import NodeProfile, parse_profiles
from fakenrt.profiles.resources import node_capacity, zone_capacity
from fakenrt.realnode.machine import RenderError, cpu_mask, machine_files, numa_mem_total
from fakenrt.realnode.writing import write_files
from tests.realnode.machine_reader import read_machine

GI = 1024**3
MI = 1024**2


def _node(raw: dict[str, Any]) -> NodeProfile:
    (profile,) = parse_profiles({"nodes": [{"name": "n", **raw}]}, source="t.yaml")
    return profile


SMT_HUGEPAGES = {
    "kubelet": {
        "memoryManagerPolicy": "Static",
        "reservedSystemCPUs": "0,8",
        "systemReserved": {"memory": "1Gi", "hugepages-2Mi": "4Mi"},
        "reservedMemory": [
            {"numaNode": 0, "limits": {"memory": "512Mi", "hugepages-2Mi": "4Mi"}},
            {"numaNode": 1, "limits": {"memory": "512Mi"}},
        ],
    },
    "shape": {
        "numaNodes": 2,
        "coresPerNumaNode": 4,
        "threadsPerCore": 2,
        "memoryPerNumaNode": "8Gi",
        "hugepagesPerNumaNode": {"hugepages-2Mi": "64Mi", "hugepages-1Gi": "2Gi"},
        "distances": [[10, 21], [21, 10]],
    },
}
FOUR_NUMA_TWO_SOCKETS = {
    "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
    "shape": {
        "numaNodes": 4,
        "coresPerNumaNode": 2,
        "numaNodesPerSocket": 2,
        "memoryPerNumaNode": "4Gi",
    },
}
SPARSE_ZONES = {
    "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
    "zones": [
        {"id": 0, "cpus": "0-3", "memory": "2Gi"},
        {"id": 2, "cpus": "4-7", "memory": "3Gi", "hugepages-2Mi": "8Mi"},
    ],
}


@pytest.mark.parametrize(
    ("raw", "numa_totals", "sockets", "machine_pages"),
    [
        pytest.param(
            SMT_HUGEPAGES,
            # zone memory + reservedMemory + hugepages (64Mi + 4Mi reserved, 2Gi)
            {0: 8 * GI + 512 * MI + 68 * MI + 2 * GI, 1: 8 * GI + 512 * MI + 64 * MI + 2 * GI},
            {0, 1},
            {2 * MI: 66, GI: 4},
            id="smt-hugepages-reservations",
        ),
        pytest.param(
            FOUR_NUMA_TWO_SOCKETS, dict.fromkeys(range(4), 4 * GI), {0, 1}, {}, id="4numa-2sockets"
        ),
        pytest.param(
            SPARSE_ZONES, {0: 2 * GI, 2: 3 * GI + 8 * MI}, {0, 1}, {2 * MI: 4}, id="sparse"
        ),
    ],
)
def test_machine_reads_back_as_the_profile(
    tmp_path: Path,
    raw: dict[str, Any],
    numa_totals: dict[int, int],
    sockets: set[int],
    machine_pages: dict[int, int],
) -> None:
    profile = _node(raw)
    write_files(tmp_path, machine_files(profile))
    machine = read_machine(tmp_path)
    assert numa_mem_total(profile) == numa_totals
    assert {n: node.mem_total for n, node in machine.nodes.items()} == numa_totals
    assert machine.mem_total == node_capacity(profile)["memory"] == sum(numa_totals.values())
    assert machine.sockets == sockets
    assert machine.hugepages == machine_pages
    assert machine.mhz == {"2000.000"}
    _assert_topology(profile, tmp_path)


def _assert_topology(profile: NodeProfile, root: Path) -> None:
    machine = read_machine(root)
    assert set(machine.nodes) == set(profile.zone_ids)
    assert machine.online == frozenset(profile.cpu_topology)
    capacity = zone_capacity(profile)
    for zone in profile.zones:
        node = machine.nodes[zone.id]
        assert set(node.cpus) == zone.cpus
        for cpu, (core, socket) in node.cpus.items():
            info = profile.cpu_topology[cpu]
            assert (core, socket, info.numa) == (info.core, info.socket, zone.id)
        assert node.distances == tuple(profile.distance(zone.id, o) for o in profile.zone_ids)
        hugepages = {
            int(name.removeprefix("hugepages-").removesuffix("Mi")) * MI
            if name.endswith("Mi")
            else int(name.removeprefix("hugepages-").removesuffix("Gi")) * GI: amount
            for name, amount in capacity[zone.id].items()
            if name.startswith("hugepages-")
        }
        assert {size: n * size for size, n in node.hugepages.items()} == hugepages
    # The exporter's sysfs reader sees the same CPU -> NUMA map.
    assert read_cpu_numa_map(root / "sys") == {i.cpu: i.numa for i in profile.cpu_topology.values()}


@settings(max_examples=25, deadline=None)
@given(
    numa=st.integers(1, 4),
    cores=st.integers(1, 4),
    threads=st.integers(1, 2),
    per_socket=st.sampled_from([1, 2]),
)
def test_any_shape_reads_back(
    tmp_path_factory: pytest.TempPathFactory, numa: int, cores: int, threads: int, per_socket: int
) -> None:
    if numa % per_socket:
        per_socket = 1
    profile = _node(
        {
            "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
            "shape": {
                "numaNodes": numa,
                "coresPerNumaNode": cores,
                "threadsPerCore": threads,
                "numaNodesPerSocket": per_socket,
                "memoryPerNumaNode": "1Gi",
            },
        }
    )
    root = tmp_path_factory.mktemp("machine")
    write_files(root, machine_files(profile))
    _assert_topology(profile, root)
    assert len(read_machine(root).sockets) == numa // per_socket


def test_uncore_caches_are_written_per_cpu() -> None:
    profile = _node(
        {
            "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
            "shape": {
                "numaNodes": 1,
                "coresPerNumaNode": 4,
                "memoryPerNumaNode": "1Gi",
                "coresPerUncoreCache": 2,
            },
        }
    )
    files = machine_files(profile)
    # cAdvisor reads caches under /sys/devices/system/cpu/cpu<M>/cache
    base = "sys/devices/system/cpu"
    ids = {cpu: files[f"{base}/cpu{cpu}/cache/index3/id"] for cpu in range(4)}
    assert ids[0] == ids[1] != ids[2] == ids[3]
    assert files[f"{base}/cpu2/cache/index3/shared_cpu_list"] == "2-3\n"
    assert files[f"{base}/cpu2/cache/index3/shared_cpu_map"] == "0000000c\n"
    assert files[f"{base}/cpu0/cache/index3/level"] == "3\n"


@pytest.mark.parametrize(
    ("cpus", "mask"),
    [
        pytest.param([0], "00000001", id="cpu0"),
        pytest.param([0, 1, 2, 3], "0000000f", id="four"),
        pytest.param([31, 32], "00000001,80000000", id="two-words"),
        pytest.param([64], "00000001,00000000,00000000", id="three-words"),
    ],
)
def test_cpu_mask(cpus: list[int], mask: str) -> None:
    assert cpu_mask(cpus) == mask


def test_memory_not_in_whole_kib_cannot_be_carried() -> None:
    profile = _node(
        {
            "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
            "zones": [{"id": 0, "cpus": "0-1", "memory": 1000}],
        }
    )
    with pytest.raises(RenderError, match=r"node n: zone 0: memory: 1000 bytes is not a whole"):
        machine_files(profile)


def test_foreign_allocations_cannot_be_carried() -> None:
    profile = _node(
        {
            "kubelet": {"memoryManagerPolicy": "None", "reservedSystemCPUs": "0"},
            "zones": [{"id": 0, "cpus": "0-3", "memory": "1Gi", "allocated": {"cpu": 1}}],
        }
    )
    with pytest.raises(RenderError, match=r"node n: zone 0: allocated: a real kubelet cannot"):
        machine_files(profile)
