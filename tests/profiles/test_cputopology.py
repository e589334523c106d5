"""CPU topology of a profile: cores, threads and sockets, by the documented rule."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.profiles import CpuInfo, parse_profiles
from fakenrt.profiles.cputopology import shape_zone_cpus, split_cores, zones_topology


def test_explicit_zones_pair_threads_the_linux_way() -> None:
    data = {
        "nodes": [
            {
                "name": "ht",
                "cpuTopology": {"threadsPerCore": 2},
                "zones": [
                    {"id": 0, "cpus": "0-31,64-95", "memory": "1Gi"},
                    {"id": 1, "cpus": "32-63,96-127", "memory": "1Gi"},
                ],
            }
        ]
    }
    (profile,) = parse_profiles(data, source="p.yaml")
    topo = profile.cpu_topology
    assert topo[0] == CpuInfo(cpu=0, core=0, socket=0, numa=0)
    assert topo[64] == CpuInfo(cpu=64, core=0, socket=0, numa=0)
    assert topo[31] == CpuInfo(cpu=31, core=31, socket=0, numa=0)
    assert topo[95] == CpuInfo(cpu=95, core=31, socket=0, numa=0)
    assert topo[32] == CpuInfo(cpu=32, core=32, socket=1, numa=1)
    assert topo[96] == CpuInfo(cpu=96, core=32, socket=1, numa=1)


def test_explicit_zones_default_to_one_thread_per_core_and_socket_per_zone() -> None:
    data = {
        "nodes": [
            {
                "name": "n",
                "zones": [
                    {"id": 0, "cpus": "0-1", "memory": 0},
                    {"id": 3, "cpus": "2-3", "memory": 0},
                ],
            }
        ]
    }
    (profile,) = parse_profiles(data, source="p.yaml")
    assert list(profile.cpu_topology.values()) == [
        CpuInfo(cpu=0, core=0, socket=0, numa=0),
        CpuInfo(cpu=1, core=1, socket=0, numa=0),
        CpuInfo(cpu=2, core=2, socket=1, numa=3),
        CpuInfo(cpu=3, core=3, socket=1, numa=3),
    ]


def test_shape_numbers_first_threads_of_all_cores_first() -> None:
    shape = {
        "numaNodes": 2,
        "coresPerNumaNode": 56,
        "threadsPerCore": 2,
        "memoryPerNumaNode": "1Gi",
    }
    (profile,) = parse_profiles({"nodes": [{"name": "dgx", "shape": shape}]}, source="p.yaml")
    assert len(profile.cpu_topology) == 224
    assert profile.zones[0].cpus == frozenset(range(56)) | frozenset(range(112, 168))
    assert profile.zones[1].cpus == frozenset(range(56, 112)) | frozenset(range(168, 224))
    assert profile.cpu_topology[112] == CpuInfo(cpu=112, core=0, socket=0, numa=0)
    assert profile.cpu_topology[223] == CpuInfo(cpu=223, core=111, socket=1, numa=1)


def test_numa_nodes_per_socket_groups_consecutive_zones() -> None:
    shape = {"numaNodes": 4, "coresPerNumaNode": 1, "numaNodesPerSocket": 2, "memoryPerNumaNode": 0}
    (profile,) = parse_profiles({"nodes": [{"name": "n", "shape": shape}]}, source="p.yaml")
    assert [profile.cpu_topology[c].socket for c in range(4)] == [0, 0, 1, 1]


@pytest.mark.parametrize(
    ("cpus", "threads", "cores"),
    [
        pytest.param("0-7", 1, [(c,) for c in range(8)], id="no-smt"),
        pytest.param("0-3,8-11", 2, [(0, 8), (1, 9), (2, 10), (3, 11)], id="smt2"),
        pytest.param("0-7", 4, [(0, 2, 4, 6), (1, 3, 5, 7)], id="smt4"),
        pytest.param("5,9", 2, [(5, 9)], id="sparse"),
    ],
)
def test_split_cores(cpus: str, threads: int, cores: list[tuple[int, ...]]) -> None:
    from exporter.cpulist import parse_cpulist

    assert split_cores(parse_cpulist(cpus), threads) == cores


@given(
    numa_nodes=st.integers(1, 8),
    cores=st.integers(1, 12),
    threads=st.integers(1, 4),
    per_socket=st.sampled_from([1, 2, 4]),
)
def test_shape_topology_properties(
    numa_nodes: int, cores: int, threads: int, per_socket: int
) -> None:
    if numa_nodes % per_socket:
        per_socket = 1
    zone_cpus = shape_zone_cpus(
        numa_nodes=numa_nodes, cores_per_numa_node=cores, threads_per_core=threads
    )
    topo = zones_topology(
        list(enumerate(zone_cpus)), threads_per_core=threads, numa_nodes_per_socket=per_socket
    )
    total = numa_nodes * cores * threads
    # every CPU id 0..total-1 exists exactly once, in exactly one zone
    assert sorted(topo) == list(range(total))
    assert sum(len(c) for c in zone_cpus) == total
    threads_of: dict[int, list[int]] = defaultdict(list)
    for info in topo.values():
        assert info.cpu in zone_cpus[info.numa]
        assert info.socket == info.numa // per_socket
        threads_of[info.core].append(info.cpu)
    # each core has T threads in one zone, the core id is its lowest thread, and the
    # sibling of core k is k + totalCores (Linux numbering)
    assert len(threads_of) == numa_nodes * cores
    for core, cpus in threads_of.items():
        assert sorted(cpus) == [core + t * numa_nodes * cores for t in range(threads)]
        assert len({topo[c].numa for c in cpus}) == 1
