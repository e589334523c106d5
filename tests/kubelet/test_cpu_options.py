"""CPU Manager static policy options (``cpumanager/policy_options.go``,
``policy_static.go``, ``cpu_assignment.go``): tables transcribed from the kubelet's unit
tests where they exist (named per case), hand-checked cases otherwise, and properties."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.cpu_assignment import take_by_topology, take_cpus, take_distributed
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.provider import AdmissionErrorCode
from fakenrt.kubelet.provider_cpu import CpuProvider, generate_hints
from fakenrt.kubelet.topology import CpuTopology
from fakenrt.profiles.cputopology import zones_topology
from fakenrt.profiles.model import CpuInfo, CpuPolicyOptions
from tests.kubelet.builders import container, node, pod

FULL = CpuPolicyOptions(full_pcpus_only=True)


def dual_socket_ht() -> CpuTopology:
    """``topoDualSocketHT`` of the kubelet's tests: 12 CPUs, CPU i on core i%6 and socket
    (= NUMA node) i%2; siblings (0,6), (1,7), ..."""
    return CpuTopology({i: CpuInfo(cpu=i, core=i % 6, socket=i % 2, numa=i % 2) for i in range(12)})


def single_socket_ht() -> CpuTopology:
    """``topoSingleSocketHT``: 8 CPUs, siblings (0,4), (1,5), (2,6), (3,7)."""
    return CpuTopology({i: CpuInfo(cpu=i, core=i % 4, socket=0, numa=0) for i in range(8)})


def dual_socket_multi_numa_ht() -> CpuTopology:
    """``topoDualSocketMultiNumaPerSocketHT`` (dual Xeon Gold 6230): NUMA n has CPUs
    10n..10n+9 and 40+10n..; two NUMA nodes per socket."""
    zones = [
        (n, frozenset(range(10 * n, 10 * n + 10)) | frozenset(range(40 + 10 * n, 50 + 10 * n)))
        for n in range(4)
    ]
    return CpuTopology(zones_topology(zones, threads_per_core=2, numa_nodes_per_socket=2))


def _hint(*numa: int) -> TopologyHint:
    return TopologyHint(BitMask.of(*numa), True)


def _guaranteed(cpus: int):  # type: ignore[no-untyped-def]
    p = pod("p", container("c", cpu=cpus))
    return p, p.containers[0]


# TestStaticPolicyAdd, smtalignOptionTestCases (policy_static_test.go)
@pytest.mark.parametrize(
    ("topo", "reserved", "default", "cpus", "error", "expected"),
    [
        pytest.param(
            single_socket_ht(), {0}, set(range(8)), 1,
            "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2", None,
            id="GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU",
        ),
        pytest.param(
            dual_socket_ht(), {1, 6}, {0, 2, 3, 4, 5, 7, 8, 9, 10, 11}, 10,
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 8, "
            "requested CPUs = 10, CPUs per core = 2", None,
            id="GuPodManyCores, topoDualSocketHT, ExpectDoNotAllocPartialCPU",
        ),
        pytest.param(
            dual_socket_ht(), {0, 6}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}, 10, None,
            {1, 2, 3, 4, 5, 7, 8, 9, 10, 11},
            id="GuPodManyCores, topoDualSocketHT, ExpectAllocAllCPUs",
        ),
    ],
)  # fmt: skip
def test_full_pcpus_only(
    *,
    topo: CpuTopology,
    reserved: set[int],
    default: set[int],
    cpus: int,
    error: str | None,
    expected: set[int] | None,
) -> None:
    provider = CpuProvider(topo, frozenset(reserved), frozenset(default | reserved), FULL)
    p, c = _guaranteed(cpus)
    if error is not None:
        with pytest.raises(AdmissionErrorCode) as exc:
            provider.allocate(p, c, TopologyHint(None, True))
        assert exc.value.reason == "SMTAlignmentError"
        assert str(exc.value) == error
        assert c.name not in provider.assigned
    else:
        provider.allocate(p, c, TopologyHint(None, True))
        assert provider.assigned[c.name] == frozenset(expected or ())


# TestStaticPolicyAdd, alignBySocketOptionTestCases
@pytest.mark.parametrize(
    ("align", "expected"),
    [
        pytest.param(True, {2, 11}, id="Align by socket: true"),
        pytest.param(False, {2, 21}, id="Align by socket: false"),
    ],
)
def test_align_by_socket_allocation(align: bool, expected: set[int]) -> None:
    options = CpuPolicyOptions(align_by_socket=align)
    provider = CpuProvider(
        dual_socket_multi_numa_ht(), frozenset({0}), frozenset({0, 2, 11, 21, 22}), options
    )
    p, c = _guaranteed(2)
    provider.allocate(p, c, _hint(0, 2))
    assert provider.assigned[c.name] == expected


def test_align_by_socket_prefers_socket_aligned_hints() -> None:
    """24 CPUs need 2 NUMA nodes of 20: without the option only width-2 masks are
    preferred; with it, {0,1} (one socket) stays preferred and {0,2} (two sockets) not;
    a 3-NUMA mask inside 2 sockets is not preferred either way (needs 1 socket)."""
    topo = dual_socket_multi_numa_ht()
    free = frozenset(topo.cpus)
    plain = {
        h.affinity.bits(): h.preferred
        for h in generate_hints(topo, free, frozenset(), 24)
        if h.affinity
    }
    aligned = {
        h.affinity.bits(): h.preferred
        for h in generate_hints(topo, free, frozenset(), 24, align_by_socket=True)
        if h.affinity
    }
    assert plain[(0, 1)] and plain[(0, 2)]
    assert aligned[(0, 1)] and aligned[(2, 3)]
    # isHintSocketAligned only adds preference; width-2 masks stay preferred
    assert aligned[(0, 2)]
    assert not aligned[(0, 1, 2)] and not plain[(0, 1, 2)]


def test_align_by_socket_widens_preference_to_the_socket() -> None:
    """A 4-CPU request fits one NUMA node (min width 1, one socket): every mask inside one
    socket - {0,1} included - becomes preferred, masks across sockets do not."""
    topo = dual_socket_multi_numa_ht()
    free = frozenset(topo.cpus)
    hints = {
        h.affinity.bits(): h.preferred
        for h in generate_hints(topo, free, frozenset(), 4, align_by_socket=True)
        if h.affinity
    }
    assert hints[(0,)] and hints[(0, 1)] and hints[(2, 3)]
    assert not hints[(1, 2)] and not hints[(0, 1, 2, 3)]


def test_spread_takes_threads_of_distinct_cores() -> None:
    """distribute-cpus-across-cores: the "spread" sorting skips whole cores and takes
    CPUs by id per socket, so 2 CPUs land on two cores (packed: one core)."""
    topo = dual_socket_ht()
    free = frozenset(topo.cpus)
    assert take_by_topology(topo, free, 2) == {0, 6}
    assert take_by_topology(topo, free, 2, spread=True) == {0, 2}
    assert take_by_topology(topo, free, 4, spread=True) == {0, 2, 4, 6}


def _uncore_topology() -> CpuTopology:
    """One socket, one NUMA node, 8 cores without SMT, 4 cores per uncore cache."""
    return CpuTopology(
        {i: CpuInfo(cpu=i, core=i, socket=0, numa=0, uncore=i // 4) for i in range(8)}
    )


@pytest.mark.parametrize(
    ("free", "count", "packed", "aligned"),
    [
        # cache 0 has 2 free, cache 1 has 4: packed fills the fuller part (0,1 then 4);
        # uncore alignment keeps 3 CPUs inside cache 1
        pytest.param({0, 1, 4, 5, 6, 7}, 3, {0, 1, 4}, {4, 5, 6}, id="partial uncore cache fits"),
        # a whole free cache is taken first when the request covers it
        pytest.param(
            {0, 1, 4, 5, 6, 7}, 5, {0, 1, 4, 5, 6}, {4, 5, 6, 7, 0}, id="full uncore cache first"
        ),
        # nothing fits in one cache: fall through to cores
        pytest.param({0, 1, 4, 5}, 3, {0, 1, 4}, {0, 1, 4}, id="no cache big enough"),
    ],
)
def test_prefer_align_cpus_by_uncorecache(
    free: set[int], count: int, packed: set[int], aligned: set[int]
) -> None:
    topo = _uncore_topology()
    assert take_by_topology(topo, frozenset(free), count) == packed
    assert take_by_topology(topo, frozenset(free), count, uncore=True) == aligned


def test_without_cache_ids_the_uncore_cache_is_the_socket() -> None:
    topo = dual_socket_ht()
    assert topo.uncore_cpus == topo.socket_cpus


def _two_numa() -> CpuTopology:
    return CpuTopology({i: CpuInfo(cpu=i, core=i, socket=i // 4, numa=i // 4) for i in range(8)})


@pytest.mark.parametrize(
    ("free", "count", "group", "expected"),
    [
        pytest.param(
            set(range(8)), 6, 1, {0, 1, 2, 4, 5, 6}, id="spread evenly over two NUMA nodes"
        ),
        pytest.param(set(range(8)), 4, 1, {0, 1, 2, 3}, id="fits one NUMA node: not spread"),
        pytest.param(
            set(range(8)), 7, 1, {0, 1, 2, 3, 4, 5, 6}, id="remainder to the first NUMA node"
        ),
        pytest.param({0, 1, 2, 4, 5, 6, 7}, 6, 1, {0, 1, 2, 4, 5, 6}, id="balance the remainder"),
        pytest.param(
            set(range(8)), 5, 2, {0, 1, 2, 3, 4}, id="not a multiple of the group: packed"
        ),
    ],
)
def test_distribute_cpus_across_numa(
    free: set[int], count: int, group: int, expected: set[int]
) -> None:
    assert take_distributed(_two_numa(), frozenset(free), count, group) == expected


def test_take_cpus_dispatches_on_options() -> None:
    topo = _two_numa()
    free = frozenset(topo.cpus)
    assert take_cpus(topo, free, 6, CpuPolicyOptions()) == {0, 1, 2, 3, 4, 5}
    distributed = CpuPolicyOptions(distribute_cpus_across_numa=True)
    assert take_cpus(topo, free, 6, distributed) == {0, 1, 2, 4, 5, 6}


def test_smt_alignment_error_on_a_node() -> None:
    """The real kubelet's verdict (notes/real-kubelet.md): full-pcpus-only rejects 3
    CPUs on an SMT-2 node with SMTAlignmentError; the CPUs are not held."""
    profile = node(zones=2, cpus_per_zone=8, threads=2, cpu_options=FULL, policy="single-numa-node")
    state = NodeState.from_profile(profile)
    result = state.admit(pod("odd", container("c", cpu=3)))
    assert not result.admit
    assert result.reason == "SMTAlignmentError"
    assert result.message == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    ok = state.admit(pod("even", container("c", cpu=4)))
    assert ok.admit and ok.allocation is not None
    cpus = ok.allocation.containers[0].cpus
    assert CpuTopology(profile.cpu_topology).physical_cpus_of(cpus) == cpus


OPTION_SETS = [
    CpuPolicyOptions(),
    FULL,
    CpuPolicyOptions(distribute_cpus_across_numa=True),
    CpuPolicyOptions(distribute_cpus_across_numa=True, full_pcpus_only=True),
    CpuPolicyOptions(distribute_cpus_across_cores=True),
    CpuPolicyOptions(prefer_align_cpus_by_uncorecache=True, full_pcpus_only=True),
    CpuPolicyOptions(align_by_socket=True),
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(OPTION_SETS),
    st.integers(1, 4),
    st.integers(1, 4),
    st.lists(st.integers(1, 8), min_size=1, max_size=6),
)
def test_options_give_distinct_whole_requests(
    options: CpuPolicyOptions, zones: int, cores: int, requests: list[int]
) -> None:
    """Whatever the options, an admitted container gets exactly its CPUs, none reserved
    or held by another pod; with full-pcpus-only (reserved CPUs whole cores) every
    allocation is a union of whole cores."""
    profile = node(
        zones=zones,
        cpus_per_zone=2 * cores,
        threads=2,
        cpu_options=options,
        policy="none",
        reserved=frozenset({0, zones * cores}),
    )
    state = NodeState.from_profile(profile)
    topo = CpuTopology(profile.cpu_topology)
    held: set[int] = set()
    for i, n in enumerate(requests):
        result = state.admit(pod(f"p{i}", container("c", cpu=n, memory="1Mi")))
        if not result.admit:
            continue
        assert result.allocation is not None
        cpus = result.allocation.containers[0].cpus
        assert len(cpus) == n
        assert not cpus & held and not cpus & {0, zones * cores}
        held |= cpus
        if options.full_pcpus_only:
            assert topo.physical_cpus_of(cpus) == cpus


def _cpus(text: str) -> frozenset[int]:
    from exporter.cpulist import parse_cpulist

    return frozenset(parse_cpulist(text))


def dual_socket_no_ht() -> CpuTopology:
    """``topoDualSocketNoHT``: 8 CPUs, 0-3 on socket (= NUMA node) 0, 4-7 on socket 1."""
    return CpuTopology({i: CpuInfo(cpu=i, core=i, socket=i // 4, numa=i // 4) for i in range(8)})


# TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption (cpu_assignment_test.go)
@pytest.mark.parametrize(
    ("topo", "available", "count", "expected"),
    [
        pytest.param(single_socket_ht(), "0-7", 3, "0-2", id="single socket with HT, 3 cpus"),
        pytest.param(dual_socket_ht(), "0-11", 2, "0,2", id="dual socket with HT, 2 cpus"),
        pytest.param(dual_socket_ht(), "0-11", 3, "0,2,4", id="dual socket with HT, 3 cpus"),
        pytest.param(dual_socket_ht(), "0-11", 6, "0,2,4,6,8,10", id="dual socket HT, 6 cpus"),
        pytest.param(dual_socket_ht(), "0-11", 8, "0-4,6,8,10", id="dual socket with HT, 8 cpus"),
        pytest.param(dual_socket_no_ht(), "0-7", 2, "0-1", id="dual socket without HT, 2 cpus"),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 8, "0-7", id="multi numa per socket and HT"
        ),
    ],
)
def test_spread_upstream_table(
    *, topo: CpuTopology, available: str, count: int, expected: str
) -> None:
    assert take_by_topology(topo, _cpus(available), count, spread=True) == _cpus(expected)


# TestTakeByTopologyNUMADistributed and commonTakeByTopologyExtendedTestCases
# (cpu_assignment_test.go), with the packed sorting strategy
@pytest.mark.parametrize(
    ("topo", "available", "count", "group", "expected"),
    [
        pytest.param(
            dual_socket_ht(), "0-11", 8, 1, "0-3,6-9",
            id="allocate 4 full cores with 2 distributed across each NUMA node",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 64, 1,
            "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77",
            id="allocate 32 full cores with 8 distributed across each NUMA node",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 48, 1, "0-7,10-17,20-27,40-47,50-57,60-67",
            id="allocate 24 full cores with 8 distributed across the first 3 NUMA nodes",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "1-29,32-39,41-69,72-79", 48, 1,
            "1-8,10-17,20-27,41-48,50-57,60-67",
            id="24 full cores across the first 3 NUMA nodes (all but 2 from the first)",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "2-29,31-39,42-69,71-79", 48, 1,
            "10-17,20-27,31-38,50-57,60-67,71-78",
            id="24 full cores across the last 3 NUMA nodes",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, 1,
            "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71",
            id="allocate 8 full cores with 2 distributed across each NUMA node",
        ),
        pytest.param(
            dual_socket_ht(), "1-5,7-11", 1, 1, "1",
            id="take one cpu from dual socket with HT - core from Socket 0",
        ),
        pytest.param(
            dual_socket_ht(), "1-5,7-11", 1, 2, "2",
            id="take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 26, 1, "0-6,10-16,40-45,50-55",
            id="allocate 13 full cores distributed across the first 2 NUMA nodes",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 26, 2, "0-6,10-15,40-46,50-55",
            id="13 full cores across the first 2 NUMA nodes (cpuGroupSize 2)",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 62, 1,
            "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76",
            id="31 full cores, 1 CPU spilling over to each of NUMA 0, 1",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-79", 62, 2,
            "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76",
            id="31 full cores, 2 CPUs spilling over to NUMA 0, 1, 2 (cpuGroupSize 2)",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1,
            "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77",
            id="31 full cores, 1 CPU spilling over to NUMA 2, 3 (to keep balance)",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2,
            "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77",
            id="31 full cores, 2 CPUs spilling over to NUMA 0, 2, 3 (cpuGroupSize 2)",
        ),
        pytest.param(
            dual_socket_multi_numa_ht(), "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1,
            "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74",
            id="ensure bestRemainder chosen with NUMA nodes that have enough CPUs",
        ),
    ],
)  # fmt: skip
def test_distributed_upstream_table(
    *, topo: CpuTopology, available: str, count: int, group: int, expected: str
) -> None:
    assert take_distributed(topo, _cpus(available), count, group) == _cpus(expected)


def _uncore_topo(*, smt: bool, sockets: int, numa_per_socket: int) -> CpuTopology:
    """The uncore test topologies of the kubelet's policy_test.go: 16 CPUs, 4 cores per
    uncore cache (ids 0..), cores and caches numbered in CPU order; with SMT, CPUs 8-15 are
    the siblings of 0-7 (``topoUncoreSingleSocketSMT``)."""
    out: dict[int, CpuInfo] = {}
    cores = 8 if smt else 16
    numa_count = sockets * numa_per_socket
    for cpu in range(16):
        core = cpu % cores
        numa = core * numa_count // cores
        out[cpu] = CpuInfo(
            cpu=cpu, core=core, socket=numa // numa_per_socket, numa=numa, uncore=core // 4
        )
    return CpuTopology(out)


def _one_uncore(topo: CpuTopology) -> CpuTopology:
    """A topology literal without uncore ids: Go's zero value puts every CPU in cache 0."""
    return CpuTopology(
        {c: CpuInfo(i.cpu, i.core, i.socket, i.numa, 0) for c, i in topo.cpus.items()}
    )


# TestTakeByTopologyNUMAPacked, "Test cases for PreferAlignByUncoreCache" (cpu_assignment_test.go)
@pytest.mark.parametrize(
    ("topo", "available", "count", "expected"),
    [
        pytest.param(
            _uncore_topo(smt=False, sockets=1, numa_per_socket=1), "1-15", 10, "1-2,4-11",
            id="take cpus from two full UncoreCaches and partial from a single UncoreCache",
        ),
        pytest.param(
            _one_uncore(dual_socket_ht()), "1-5,7-11", 1, "1",
            id="take one cpu from dual socket with HT - core from Socket 0",
        ),
        pytest.param(
            _uncore_topo(smt=False, sockets=2, numa_per_socket=1), "0-15", 4, "0-3",
            id="take first available UncoreCache from first socket",
        ),
        pytest.param(
            _uncore_topo(smt=False, sockets=2, numa_per_socket=1), "2-15", 6, "2-7",
            id="take all available UncoreCache from first socket",
        ),
        pytest.param(
            _uncore_topo(smt=False, sockets=2, numa_per_socket=1), "8-15", 4, "8-11",
            id="take first available UncoreCache from second socket",
        ),
        pytest.param(
            _uncore_topo(smt=False, sockets=1, numa_per_socket=2), "3-8,12", 2, "4-5",
            id="take first available UncoreCache from available NUMA",
        ),
        pytest.param(
            _uncore_topo(smt=True, sockets=1, numa_per_socket=1), "2-7,10-15", 6, "4-6,12-14",
            id="best available UncoreCache group of a single socket - SMT enabled",
        ),
        pytest.param(
            _uncore_topo(smt=True, sockets=1, numa_per_socket=1), "1-7,9-15", 10, "1,4-7,9,12-15",
            id="take cpus from multiple UncoreCache of single socket - SMT enabled",
        ),
    ],
)  # fmt: skip
def test_uncore_upstream_table(
    *, topo: CpuTopology, available: str, count: int, expected: str
) -> None:
    assert take_by_topology(topo, _cpus(available), count, uncore=True) == _cpus(expected)
