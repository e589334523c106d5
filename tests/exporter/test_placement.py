"""The pure derivation: podresources report + CPU map -> the two annotation values."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    parse_memory_groups,
    parse_placement,
)
from exporter.placement import annotation_values, derive_placement
from exporter.resources import ContainerResources, DeviceAssignment, MemoryBlock, PodResources
from tests.exporter import scenarios as s

CPU_MAP = dict.fromkeys(range(8), 0) | dict.fromkeys(range(8, 16), 1)


@pytest.mark.parametrize(
    "report,placement,groups",
    [
        pytest.param(s.CPU_ONLY, '[{"zone":"node-0","amount":{"cpu":"4"}}]', "[]", id="cpu-only"),
        pytest.param(
            s.GPU_AND_CPU,
            '[{"zone":"node-1","amount":{"cpu":"2","nvidia.com/gpu":"2"}}]',
            "[]",
            id="gpu-and-cpu",
        ),
        pytest.param(
            s.MULTI_ZONE,
            '[{"zone":"node-0","amount":{"cpu":"2","nvidia.com/gpu":"1"}},'
            '{"zone":"node-1","amount":{"cpu":"2","nvidia.com/gpu":"1"}}]',
            "[]",
            id="multi-zone-restricted",
        ),
        pytest.param(
            s.MEMORY_AND_HUGEPAGES,
            '[{"zone":"node-0","amount":{"cpu":"2","hugepages-1Gi":"2147483648",'
            '"memory":"4294967296"}}]',
            '[{"memoryNodes":["node-0"],"amount":{"hugepages-1Gi":"2147483648",'
            '"memory":"4294967296"}}]',
            id="memory-and-hugepages-single-numa",
        ),
        pytest.param(
            s.MULTI_NUMA_GROUP,
            # per-zone memory only from the single-NUMA block (1Gi on node-1)
            '[{"zone":"node-0","amount":{"cpu":"1"}},'
            '{"zone":"node-1","amount":{"memory":"1073741824"}}]',
            '[{"memoryNodes":["node-0","node-1"],"amount":{"memory":"10737418240"}},'
            '{"memoryNodes":["node-1"],"amount":{"memory":"1073741824"}}]',
            id="multi-numa-memory-group-summed-across-containers",
        ),
        pytest.param(s.NO_TOPOLOGY_DEVICE, None, "[]", id="device-without-topology"),
        pytest.param(
            s.UNKNOWN_CPUS,
            '[{"zone":"node-0","amount":{"cpu":"1"}}]',
            "[]",
            id="cpus-unknown-to-sysfs-left-out",
        ),
        pytest.param(s.SHARED_POOL, None, "[]", id="no-exclusive-resources"),
        pytest.param(
            s.pod(
                "listed-per-node",
                ContainerResources("main", devices=(s.gpu("GPU-5", 0), s.gpu("GPU-5", 1))),
            ),
            None,
            "[]",
            id="device-listed-once-per-numa-node-is-in-no-zone",
        ),
        pytest.param(
            s.pod("multi-node-device", ContainerResources("main", devices=(s.gpu("G", 0, 1),))),
            None,
            "[]",
            id="device-topology-with-two-nodes-is-in-no-zone",
        ),
        pytest.param(
            s.pod(
                "grouped-device-ids",
                ContainerResources("main", devices=(DeviceAssignment(s.GPU, ("A", "B"), (1,)),)),
            ),
            '[{"zone":"node-1","amount":{"nvidia.com/gpu":"2"}}]',
            "[]",
            id="one-entry-with-two-device-ids",
        ),
    ],
)
def test_annotation_values(report: PodResources, placement: str | None, groups: str) -> None:
    values = annotation_values(derive_placement(report, CPU_MAP))
    assert values == {OBSERVED_PLACEMENT: placement, OBSERVED_MEMORY_GROUPS: groups}


def test_unknown_cpus_are_reported_not_guessed() -> None:
    result = derive_placement(s.UNKNOWN_CPUS, CPU_MAP)
    assert result.unknown_cpus == frozenset({40, 41})


@pytest.mark.parametrize(
    "expected,groups",
    [
        pytest.param(None, '[{"memoryNodes":["node-0","node-1"]', id="no-expectation-complete"),
        pytest.param(frozenset({"a", "b"}), '[{"memoryNodes"', id="all-expected-reported"),
        pytest.param(frozenset({"a", "b", "c"}), "null", id="container-c-not-reported"),
        pytest.param(frozenset(), '[{"memoryNodes"', id="nothing-expected"),
    ],
)
def test_memory_groups_completeness(expected: frozenset[str] | None, groups: str) -> None:
    values = annotation_values(
        derive_placement(s.MULTI_NUMA_GROUP, CPU_MAP, expected_memory_containers=expected)
    )
    memory_groups = values[OBSERVED_MEMORY_GROUPS]
    assert memory_groups is not None and memory_groups.startswith(groups)


def test_expected_container_without_blocks_makes_null_even_with_no_blocks_at_all() -> None:
    values = annotation_values(
        derive_placement(s.CPU_ONLY, CPU_MAP, expected_memory_containers=frozenset({"main"}))
    )
    assert values[OBSERVED_MEMORY_GROUPS] == "null"
    assert values[OBSERVED_PLACEMENT] == '[{"zone":"node-0","amount":{"cpu":"4"}}]'


def test_block_without_numa_node_is_an_invalid_observation() -> None:
    report = s.pod("bad", ContainerResources("main", memory=(MemoryBlock("memory", 10, ()),)))
    assert annotation_values(derive_placement(report, CPU_MAP))[OBSERVED_MEMORY_GROUPS] == "null"


# -- properties ---------------------------------------------------------------------------

cpu_ids = st.lists(st.integers(0, 23), max_size=12, unique=True)
numa_sets = st.lists(st.integers(0, 3), min_size=0, max_size=3, unique=True).map(tuple)
devices = st.builds(
    DeviceAssignment,
    st.sampled_from([s.GPU, "example.com/nic"]),
    st.lists(st.sampled_from(["d0", "d1", "d2", "d3"]), min_size=1, max_size=2, unique=True).map(
        tuple
    ),
    numa_sets,
)
blocks = st.builds(
    MemoryBlock,
    st.sampled_from(["memory", "hugepages-2Mi", "hugepages-1Gi"]),
    st.integers(1, 2**36),
    numa_sets.filter(bool),
)
containers = st.builds(
    ContainerResources,
    st.sampled_from(["a", "b", "c"]),
    cpu_ids.map(tuple),
    st.lists(devices, max_size=4).map(tuple),
    st.lists(blocks, max_size=3).map(tuple),
)
reports = st.builds(
    PodResources, st.just("ns"), st.just("p"), st.lists(containers, max_size=3).map(tuple)
)


@given(reports)
def test_every_cpu_is_counted_once_or_reported_unknown(report: PodResources) -> None:
    result = derive_placement(report, CPU_MAP)
    counted = sum(z.amounts.get("cpu", 0) for z in result.zones)
    all_cpus = [c for ctr in report.containers for c in ctr.cpu_ids]
    assert counted == sum(1 for c in all_cpus if c in CPU_MAP)
    assert result.unknown_cpus == {c for c in all_cpus if c not in CPU_MAP}


@given(reports)
def test_a_device_counts_in_a_zone_only_if_its_topology_is_exactly_that_zone(
    report: PodResources,
) -> None:
    result = derive_placement(report, CPU_MAP)
    expected: Counter[tuple[int, str]] = Counter()
    for ctr in report.containers:
        nodes: dict[tuple[str, str], set[int]] = {}
        for d in ctr.devices:
            for dev in d.device_ids:
                nodes.setdefault((d.resource_name, dev), set()).update(d.numa_ids)
        for (resource, _), ids in nodes.items():
            if len(ids) == 1:
                expected[(next(iter(ids)), resource)] += 1
    got = Counter(
        {
            (z.numa_id, name): v
            for z in result.zones
            for name, v in z.amounts.items()
            if name in (s.GPU, "example.com/nic")
        }
    )
    assert got == expected


@given(reports)
def test_memory_groups_account_for_every_byte_and_zones_only_single_numa(
    report: PodResources,
) -> None:
    result = derive_placement(report, CPU_MAP)
    assert result.memory_groups is not None
    blocks_ = [b for ctr in report.containers for b in ctr.memory]
    for mtype in ("memory", "hugepages-2Mi", "hugepages-1Gi"):
        total = sum(b.size for b in blocks_ if b.memory_type == mtype)
        single = sum(b.size for b in blocks_ if b.memory_type == mtype and len(b.numa_ids) == 1)
        assert sum(g.amounts.get(mtype, 0) for g in result.memory_groups) == total
        assert sum(z.amounts.get(mtype, 0) for z in result.zones) == single
    assert len({g.numa_ids for g in result.memory_groups}) == len(result.memory_groups)


@given(reports)
def test_values_round_trip_through_the_format(report: PodResources) -> None:
    result = derive_placement(report, CPU_MAP)
    values = annotation_values(result)
    placement = values[OBSERVED_PLACEMENT]
    if placement is None:
        assert not result.holds_aligned_resources
    else:
        parsed = parse_placement(placement)
        assert {z.numa_id: dict(z.amounts) for z in parsed} == {
            z.numa_id: {k: v for k, v in z.amounts.items() if v} for z in result.zones
        }
    groups = parse_memory_groups(values[OBSERVED_MEMORY_GROUPS] or "")
    assert groups is not None
    assert {g.numa_ids: dict(g.amounts) for g in groups} == {
        g.numa_ids: dict(g.amounts) for g in result.memory_groups or ()
    }
