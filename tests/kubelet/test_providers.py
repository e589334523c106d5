"""Hint providers and CPU picking, transcribed as facts from the kubelet's unit tests.

* ``cpumanager/cpu_assignment_test.go``: ``TestTakeByTopologyNUMAPacked`` (and the
  ``commonTakeByTopologyTestCases`` it runs) on the ``topoSingleSocketHT``,
  ``topoDualSocketHT`` and ``topoDualSocketMultiNumaPerSocketHT`` machines of
  ``cpumanager/policy_test.go``;
* ``cpumanager/topology_hints_test.go``: ``returnTestCases`` (``TestGetTopologyHints``);
* ``devicemanager/topology_hints_test.go``: ``getCommonTestCases``
  (``TestGetTopologyHints``) and ``TestTopologyAlignedAllocation``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from exporter.cpulist import parse_cpulist
from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.cpu_assignment import CpuAllocationError, take_by_topology
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.provider import AllocationError
from fakenrt.kubelet.provider_cpu import generate_hints as cpu_hints
from fakenrt.kubelet.provider_devices import Device, DeviceInventory, DeviceProvider
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.profiles.model import CpuInfo
from tests.kubelet.builders import container, pod


def topo(rows: Iterable[tuple[int, int, int, int]]) -> CpuTopology:
    """(cpu, core, socket, numa) rows."""
    return CpuTopology({c: CpuInfo(cpu=c, core=k, socket=s, numa=n) for c, k, s, n in rows})


# topoSingleSocketHT: 8 CPUs, 4 cores of 2 threads (cpu i and i+4 share core i).
SINGLE_SOCKET_HT = topo((c, c % 4, 0, 0) for c in range(8))
# topoDualSocketHT: 12 CPUs, 6 cores; even CPUs on socket/NUMA 0; core = cpu % 6.
DUAL_SOCKET_HT = topo((c, c % 6, c % 2, c % 2) for c in range(12))
# topoDualSocketMultiNumaPerSocketHT: 80 CPUs, 40 cores (cpu % 40), NUMA n holds
# n*10..n*10+9 and their siblings +40; NUMA 0-1 on socket 0, 2-3 on socket 1.
MULTI_NUMA_HT = topo((c, c % 40, (c % 40) // 20, (c % 40) // 10) for c in range(80))
# The machine of cpumanager/topology_hints_test.go: NUMA 0 = {0,6,1,7,2,8}.
HINTS_MACHINE = topo((c, c % 6, 0 if c % 6 < 3 else 1, 0 if c % 6 < 3 else 1) for c in range(12))


def cpus(text: str) -> frozenset[int]:
    return parse_cpulist(text)


@pytest.mark.parametrize(
    ("machine", "available", "count", "expected"),
    [
        pytest.param(
            SINGLE_SOCKET_HT, "0-7", 0, "", id="take zero cpus from single socket with HT"
        ),
        pytest.param(SINGLE_SOCKET_HT, "0-7", 1, "0", id="take one cpu from single socket with HT"),
        pytest.param(
            SINGLE_SOCKET_HT,
            "1,3,5,6,7",
            1,
            "6",
            id="take one cpu from single socket with HT, some cpus are taken",
        ),
        pytest.param(
            SINGLE_SOCKET_HT, "0-7", 2, "0,4", id="take two cpus from single socket with HT"
        ),
        pytest.param(
            SINGLE_SOCKET_HT, "0-7", 8, "0-7", id="take all cpus from single socket with HT"
        ),
        pytest.param(
            SINGLE_SOCKET_HT,
            "0-3,6",
            2,
            "2,6",
            id="take two cpus from single socket with HT, only one core totally free",
        ),
        pytest.param(
            DUAL_SOCKET_HT,
            "0-11",
            6,
            "0,2,4,6,8,10",
            id="take a socket of cpus from dual socket with HT",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            40,
            "0-19,40-59",
            id="take a socket of cpus from dual socket with multi-numa-per-socket with HT",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            20,
            "0-9,40-49",
            id="take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "10-39,50-79",
            20,
            "10-19,50-59",
            id="take a NUMA node ... with 1 NUMA node already taken",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            60,
            "0-29,40-69",
            id="take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "1-39,41-79",
            60,
            "10-39,50-79",
            id="take a socket and a NUMA node ... a core taken",
        ),
        pytest.param(
            DUAL_SOCKET_HT,
            "1-5,7-11",
            1,
            "2",
            id="take one cpu from dual socket with HT - core from Socket 0",
        ),
        pytest.param(
            DUAL_SOCKET_HT,
            "0-11",
            8,
            "0,6,2,8,4,10,1,7",
            id="allocate 4 full cores with 3 coming from the first NUMA node",
        ),
        pytest.param(
            MULTI_NUMA_HT,
            "0-79",
            64,
            "0-29,40-69,30,31,70,71",
            id="allocate 32 full cores with 30 coming from the first 3 NUMA nodes",
        ),
    ],
)
def test_take_by_topology_numa_packed(
    machine: CpuTopology, available: str, count: int, expected: str
) -> None:
    assert take_by_topology(machine, cpus(available), count) == cpus(expected)


def test_take_more_cpus_than_available() -> None:
    """take more cpus than are available from single socket with HT."""
    with pytest.raises(CpuAllocationError, match=r"requested=5, available=4"):
        take_by_topology(SINGLE_SOCKET_HT, cpus("0,2,4,6"), 5)


def mask_hints(*pairs: tuple[tuple[int, ...], bool]) -> tuple[TopologyHint, ...]:
    return tuple(TopologyHint(BitMask.of(*bits), pref) for bits, pref in pairs)


@pytest.mark.parametrize(
    ("request_", "default", "expected"),
    [
        pytest.param(
            2,
            "2-11",
            mask_hints(((0,), True), ((1,), True), ((0, 1), False)),
            id="Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
        ),
        pytest.param(
            5,
            "2-11",
            mask_hints(((1,), True), ((0, 1), False)),
            id="Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
        ),
        pytest.param(
            7,
            "2-11",
            mask_hints(((0, 1), True)),
            id="Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
        ),
        pytest.param(
            11, "2-11", (), id="Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1"
        ),
        pytest.param(
            2,
            "0,3",
            mask_hints(((0, 1), False)),
            id="Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1",
        ),
        pytest.param(5, "0-3", (), id="Request more CPUs than available"),
    ],
)
def test_cpu_topology_hints(
    request_: int, default: str, expected: tuple[TopologyHint, ...]
) -> None:
    assert cpu_hints(HINTS_MACHINE, cpus(default), frozenset(), request_) == expected


def test_cpu_hint_width_counts_reserved_and_allocated_cpus() -> None:
    """Preferred width comes from every CPU of a mask, feasibility from free ones only:
    with 5 CPUs requested and NUMA 1 fully free but NUMA 0 holding 6 CPUs, {1} is
    preferred even though only reserved-free CPUs count for feasibility."""
    hints = cpu_hints(HINTS_MACHINE, cpus("3-5,9-11"), frozenset(), 6)
    assert hints == mask_hints(((1,), True), ((0, 1), False))


def test_cpu_hints_with_reusable_cpus_must_contain_their_numa_node() -> None:
    """generateCPUTopologyHints: a mask that misses a reusable CPU's NUMA node is skipped
    ({1} has 6 free CPUs but the reused CPU 0 sits on NUMA 0); reusable CPUs count as
    free inside the mask ({0} has only the reused CPU, not enough for 2)."""
    hints = cpu_hints(HINTS_MACHINE, cpus("3-5,9-11"), frozenset({0}), 2)
    assert hints == mask_hints(((0, 1), False))
    hints = cpu_hints(HINTS_MACHINE, cpus("1,3-5,9-11"), frozenset({0}), 2)
    assert hints == mask_hints(((0,), True), ((0, 1), False))


# --- devices ------------------------------------------------------------------------


def inventory(**devices: list[tuple[str, int | None]]) -> DeviceInventory:
    return DeviceInventory(
        numa_nodes=(0, 1),
        devices={
            name: tuple(Device(i, n, True) for i, n in devs) for name, devs in devices.items()
        },
    )


def device_hints(
    inv: DeviceInventory, request: dict[str, int], allocated: dict[str, set[str]]
) -> object:
    provider = DeviceProvider(inv, {k: frozenset(v) for k, v in allocated.items()})
    c = container("c", guaranteed=False)
    c["resources"] = {"limits": dict(request)}
    p = pod("p", c)
    return provider.container_hints(p, p.containers[0])


@pytest.mark.parametrize(
    ("devices", "request_", "allocated", "expected"),
    [
        pytest.param(
            {"testdevice": [("Dev1", None), ("Dev2", None)]},
            {"testdevice": 1},
            {},
            {"testdevice": None},
            id="Single Request, no alignment",
        ),
        pytest.param(
            {"testdevice": [("Dev1", None), ("Dev2", 1)]},
            {"testdevice": 1},
            {},
            {"testdevice": mask_hints(((1,), True), ((0, 1), False))},
            id="Single Request, only one with alignment",
        ),
        pytest.param(
            {"testdevice": [("Dev1", 0), ("Dev2", 1)]},
            {"testdevice": 1},
            {},
            {"testdevice": mask_hints(((0,), True), ((1,), True), ((0, 1), False))},
            id="Single Request, one device per socket",
        ),
        pytest.param(
            {"testdevice": [("Dev1", 0), ("Dev2", 1)]},
            {"testdevice": 2},
            {},
            {"testdevice": mask_hints(((0, 1), True))},
            id="Request for 2, one device per socket",
        ),
        pytest.param(
            {"testdevice": [("Dev1", 0), ("Dev2", 1), ("Dev3", 0), ("Dev4", 1)]},
            {"testdevice": 2},
            {},
            {"testdevice": mask_hints(((0,), True), ((1,), True), ((0, 1), False))},
            id="Request for 2, 2 devices per socket",
        ),
        pytest.param(
            {"testdevice": [("Dev1", 0), ("Dev2", 1), ("Dev3", 0), ("Dev4", 1)]},
            {"testdevice": 2},
            {"testdevice": {"Dev1", "Dev2"}},
            {"testdevice": mask_hints(((0, 1), False))},
            id="Request for 2, optimal on 1 NUMA node, forced cross-NUMA",
        ),
        pytest.param(
            {
                "testdevice1": [("Dev1", 0), ("Dev2", 1), ("Dev3", 0), ("Dev4", 1)],
                "testdevice2": [("Dev1", 0)],
            },
            {"testdevice1": 2, "testdevice2": 1},
            {},
            {
                "testdevice1": mask_hints(((0,), True), ((1,), True), ((0, 1), False)),
                "testdevice2": mask_hints(((0,), True), ((0, 1), False)),
            },
            id="2 device types, mixed configuration",
        ),
        pytest.param(
            {"testdevice": [("Dev1", 0), ("Dev2", 0), ("Dev3", 1), ("Dev4", 1)]},
            {"testdevice": 6},
            {},
            {"testdevice": ()},
            id="Single device type, more requested than available",
        ),
    ],
)
def test_device_topology_hints(
    devices: dict[str, list[tuple[str, int | None]]],
    request_: dict[str, int],
    allocated: dict[str, set[str]],
    expected: dict[str, object],
) -> None:
    assert device_hints(inventory(**devices), request_, allocated) == expected


def _allocate(
    devs: list[tuple[str, int | None]], request: int, hint: tuple[int, ...]
) -> dict[int, int]:
    inv = inventory(resource=devs)
    provider = DeviceProvider(inv, {})
    c = container("c", guaranteed=False)
    c["resources"] = {"limits": {"resource": request}}
    p = pod("p", c)
    provider.allocate(p, p.containers[0], TopologyHint(BitMask.of(*hint), True))
    numa_of = inv.numa_of("resource")
    got = provider.assigned["c"]["resource"]
    assert len(got) == request
    alignment: dict[int, int] = {}
    for d in got:
        node = numa_of[d]
        if node is not None and inv.has_topology("resource"):
            alignment[node] = alignment.get(node, 0) + 1
    return alignment


ALTERNATING6 = [(f"Dev{i}", (i - 1) % 2) for i in range(1, 7)]


@pytest.mark.parametrize(
    ("devices", "request_", "hint", "alignment"),
    [
        pytest.param(
            [("Dev1", None), ("Dev2", None)], 1, (0, 1), {}, id="Single Request, no alignment"
        ),
        pytest.param(
            [("Dev1", None), ("Dev2", 1)], 1, (1,), {1: 1}, id="Request for 1, partial alignment"
        ),
        pytest.param([("Dev1", 0), ("Dev2", 1)], 1, (0,), {0: 1}, id="Single Request, socket 0"),
        pytest.param([("Dev1", 0), ("Dev2", 1)], 1, (1,), {1: 1}, id="Single Request, socket 1"),
        pytest.param(ALTERNATING6[:4], 2, (0,), {0: 2}, id="Request for 2, socket 0"),
        pytest.param(ALTERNATING6[:4], 2, (1,), {1: 2}, id="Request for 2, socket 1"),
        pytest.param(
            ALTERNATING6, 4, (0,), {0: 3, 1: 1}, id="Request for 4, unsatisfiable, prefer socket 0"
        ),
        pytest.param(
            ALTERNATING6, 4, (1,), {0: 1, 1: 3}, id="Request for 4, unsatisfiable, prefer socket 1"
        ),
    ],
)
def test_topology_aligned_allocation(
    devices: list[tuple[str, int | None]],
    request_: int,
    hint: tuple[int, ...],
    alignment: dict[int, int],
) -> None:
    assert _allocate(devices, request_, hint) == alignment


def test_device_allocation_errors_match_the_kubelet() -> None:
    inv = DeviceInventory(numa_nodes=(0, 1), devices={"r": (Device("a", 0, False),)})
    provider = DeviceProvider(inv, {})
    c = container("c", guaranteed=False)
    c["resources"] = {"limits": {"r": 1}}
    p = pod("p", c)
    with pytest.raises(
        AllocationError, match="no healthy devices present; cannot allocate unhealthy devices r"
    ):
        provider.allocate(p, p.containers[0], TopologyHint(None, True))
    inv = inventory(r=[("a", 0)])
    provider = DeviceProvider(inv, {"r": frozenset({"a"})})
    with pytest.raises(
        AllocationError,
        match=r"requested number of devices unavailable for r\. Requested: 1, Available: 0",
    ):
        provider.allocate(p, p.containers[0], TopologyHint(None, True))
