"""parse_profiles: the accepted format (issue 3, verbatim) and one clear error per mistake."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from fakenrt.profiles import (
    DeviceSet,
    KubeletConfig,
    ProfileError,
    example_profile,
    load_profiles,
    parse_profiles,
)
from fakenrt.profiles.loading import load_yaml

GI = 2**30

# The example of issue 3, section 1, verbatim (comments included).
ISSUE_EXAMPLE = """\
nodes:
- name: dgx-a
  kubelet:
    topologyManagerPolicy: restricted     # none | best-effort | restricted | single-numa-node
    topologyManagerScope: container       # container | pod   (default container)
    topologyManagerPolicyOptions:         # optional, string values as in kubelet config
      prefer-closest-numa-nodes: "true"
      max-allowable-numa-nodes: "8"
    cpuManagerPolicy: static              # none | static      (default static)
    memoryManagerPolicy: Static           # None | Static      (default Static)
    reservedSystemCPUs: "0,64"            # optional cpulist
  devices:                                # optional: devices with no NUMA affinity
    example.com/license: 2
  zones:
  - id: 0
    cpus: "0-31,64-95"                    # Linux cpulist syntax
    memory: 512Gi                         # allocatable memory of this NUMA node
    hugepages-1Gi: 16Gi                   # optional, any hugepages-<size>
    devices:                              # resource -> count (ids generated), list of ids,
      nvidia.com/gpu: 4                   # or {count: N, unhealthy: M}: unhealthy devices count
      rdma/hca: ["mlx5_0", "mlx5_1"]      # for the kubelet's preferred width, are never allocated
      example.com/fpga: {count: 2, unhealthy: 1}
    distances: [10, 20]                   # optional row of the NUMA distance matrix, in zone order
    allocated:                            # optional: exclusive resources already held by pods
      cpu: 8                              # outside the simulation (foreign pods)
      memory: 64Gi
      nvidia.com/gpu: 1
  - id: 1
    cpus: "32-63,96-127"
    memory: 512Gi
    devices: {nvidia.com/gpu: 4}
    distances: [20, 10]
- name: small
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape:                                  # shorthand that expands to zones
    numaNodes: 2
    coresPerNumaNode: 4
    threadsPerCore: 1
    memoryPerNumaNode: 64Gi
    devicesPerNumaNode: {nvidia.com/gpu: 2}
"""


def _parse_issue_example() -> Any:
    return parse_profiles(load_yaml(ISSUE_EXAMPLE, source="issue.yaml"), source="issue.yaml")


def test_issue_example_is_accepted_verbatim() -> None:
    dgx, small = _parse_issue_example()

    assert dgx.name == "dgx-a"
    assert dgx.kubelet == KubeletConfig(
        topology_manager_policy="restricted",
        topology_manager_scope="container",
        policy_options={"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "8"},
        prefer_closest_numa_nodes=True,
        max_allowable_numa_nodes=8,
        cpu_manager_policy="static",
        memory_manager_policy="Static",
        reserved_cpus=frozenset({0, 64}),
    )
    assert dgx.devices == {"example.com/license": DeviceSet(ids=("LICENSE-0", "LICENSE-1"))}
    zone0, zone1 = dgx.zones
    assert zone0.id == 0
    assert zone0.cpus == frozenset(range(32)) | frozenset(range(64, 96))
    assert zone0.memory == 512 * GI
    assert zone0.hugepages == {"hugepages-1Gi": 16 * GI}
    assert zone0.devices == {
        "example.com/fpga": DeviceSet(ids=("FPGA-0", "FPGA-1"), unhealthy=frozenset({"FPGA-1"})),
        "nvidia.com/gpu": DeviceSet(ids=("GPU-0", "GPU-1", "GPU-2", "GPU-3")),
        "rdma/hca": DeviceSet(ids=("mlx5_0", "mlx5_1")),
    }
    assert zone0.distances == (10, 20)
    assert zone0.allocated == {"cpu": 8, "memory": 64 * GI, "nvidia.com/gpu": 1}
    assert zone1.cpus == frozenset(range(32, 64)) | frozenset(range(96, 128))
    assert zone1.devices == {"nvidia.com/gpu": DeviceSet(ids=("GPU-4", "GPU-5", "GPU-6", "GPU-7"))}
    assert zone1.distances == (20, 10)
    assert zone1.allocated == {}
    assert len(dgx.cpu_topology) == 128
    assert dgx.distance(0, 1) == 20

    assert small.name == "small"
    assert small.kubelet.topology_manager_policy == "single-numa-node"
    assert small.kubelet.topology_manager_scope == "container"
    assert small.kubelet.cpu_manager_policy == "static"
    assert small.kubelet.memory_manager_policy == "Static"
    assert [z.id for z in small.zones] == [0, 1]
    assert [sorted(z.cpus) for z in small.zones] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [z.memory for z in small.zones] == [64 * GI, 64 * GI]
    assert [z.devices["nvidia.com/gpu"].ids for z in small.zones] == [
        ("GPU-0", "GPU-1"),
        ("GPU-2", "GPU-3"),
    ]
    assert small.distance(0, 1) == 20
    assert small.distance(1, 1) == 10


def test_bundled_dgx_example_is_the_issue_example() -> None:
    assert load_profiles(example_profile("dgx")) == _parse_issue_example()


def test_every_bundled_example_loads() -> None:
    names = [
        p.name
        for path in sorted(example_profile("dgx").parent.glob("*.yaml"))
        for p in load_profiles(path)
    ]
    assert len(names) == len(set(names)) >= 5


def _zone(zone_id: int, cpus: str, **extra: Any) -> dict[str, Any]:
    return {"id": zone_id, "cpus": cpus, "memory": "8Gi", **extra}


def _node(**fields: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"name": "n1", "zones": [_zone(0, "0-3"), _zone(1, "4-7")]}
    node.update(fields)
    return node


def _with(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """A valid two-zone node changed by ``change`` (which edits the dict in place)."""
    node = _node()
    change(node)
    return {"nodes": [node]}


def _set(path: tuple[Any, ...], value: object) -> Callable[[dict[str, Any]], None]:
    def change(node: dict[str, Any]) -> None:
        target: Any = node
        for key in path[:-1]:
            target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
        target[path[-1]] = value

    return change


def _delete(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def change(node: dict[str, Any]) -> None:
        target: Any = node
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def _shape(**fields: Any) -> dict[str, Any]:
    shape: dict[str, Any] = {"numaNodes": 2, "coresPerNumaNode": 2, "memoryPerNumaNode": "4Gi"}
    shape.update(fields)
    return {"nodes": [{"name": "s1", "shape": shape}]}


ERROR_CASES = [
    # --- file level
    pytest.param(None, None, None, "the file is empty", id="empty-file"),
    pytest.param([], None, "(top level)", "expected a mapping", id="top-level-list"),
    pytest.param({"nodez": []}, None, "nodez", "did you mean 'nodes'", id="top-level-typo"),
    pytest.param({"nodes": []}, None, "nodes", "at least one node", id="no-nodes"),
    pytest.param({"nodes": [{"zones": []}]}, None, "nodes[0].name", "is required", id="no-name"),
    pytest.param(
        {"nodes": [{"name": "GPU_Node"}]}, None, "nodes[0].name", "DNS-1123", id="bad-name"
    ),
    pytest.param(
        {"nodes": [_node(), _node()]},
        "n1",
        "name",
        "duplicate node name (also nodes[0])",
        id="dup-node",
    ),
    # --- node level
    pytest.param(
        _with(_set(("zoens",), [])), "n1", "zoens", "did you mean 'zones'", id="node-typo"
    ),
    pytest.param({"nodes": [{"name": "n1"}]}, "n1", "zones", "is required", id="no-zones"),
    pytest.param(
        _with(_set(("zones",), [])), "n1", "zones", "at least one NUMA zone", id="empty-zones"
    ),
    pytest.param(
        _with(_set(("shape",), {"numaNodes": 1})), "n1", "shape", "not both", id="zones-and-shape"
    ),
    pytest.param(_with(_set(("maxPods",), 0)), "n1", "maxPods", "at least 1", id="max-pods"),
    pytest.param(
        _with(_set(("nrt",), {"delay": "soon"})),
        "n1",
        "nrt.delay",
        "not a duration",
        id="nrt-delay",
    ),
    pytest.param(
        _with(_set(("nrt",), {"jitter": "-1s"})), "n1", "nrt.jitter", "not a duration", id="nrt-neg"
    ),
    pytest.param(
        _with(_set(("nrt",), {"jitter": True})), "n1", "nrt.jitter", "a duration", id="nrt-bool"
    ),
    pytest.param(
        _with(_set(("nrt",), {"dealy": "1s"})),
        "n1",
        "nrt.dealy",
        "did you mean 'delay'",
        id="nrt-typo",
    ),
    pytest.param(
        _with(_set(("labels",), {"team": True})),
        "n1",
        "labels.team",
        "expected a string",
        id="label-bool",
    ),
    pytest.param(
        _with(_set(("labels",), {"a/b/c": "x"})),
        "n1",
        'labels["a/b/c"]',
        "label key",
        id="label-key",
    ),
    pytest.param(
        _with(_set(("labels",), {"team": "-x"})),
        "n1",
        "labels.team",
        "label value",
        id="label-value",
    ),
    # --- kubelet block
    pytest.param(
        _with(_set(("kubelet", "topologyManagerPolicy"), "strict")),
        "n1",
        "kubelet.topologyManagerPolicy",
        "unknown value 'strict'; one of: none, best-effort, restricted, single-numa-node",
        id="unknown-policy",
    ),
    pytest.param(
        _with(_set(("kubelet", "topologyManagerScope"), "node")),
        "n1",
        "kubelet.topologyManagerScope",
        "unknown value 'node'",
        id="unknown-scope",
    ),
    pytest.param(
        _with(_set(("kubelet", "cpuManagerPolicy"), "Static")),
        "n1",
        "kubelet.cpuManagerPolicy",
        "case-sensitive: write 'static'",
        id="cpu-policy-case",
    ),
    pytest.param(
        _with(_set(("kubelet", "memoryManagerPolicy"), "static")),
        "n1",
        "kubelet.memoryManagerPolicy",
        "case-sensitive: write 'Static'",
        id="memory-policy-case",
    ),
    pytest.param(
        _with(_set(("kubelet", "topologyManagerPolcy"), "restricted")),
        "n1",
        "kubelet.topologyManagerPolcy",
        "did you mean 'topologyManagerPolicy'",
        id="kubelet-typo",
    ),
    pytest.param(
        _with(
            _set(("kubelet", "topologyManagerPolicyOptions", "prefer-closest-numa-node"), "true")
        ),
        "n1",
        'kubelet.topologyManagerPolicyOptions["prefer-closest-numa-node"]',
        "did you mean 'prefer-closest-numa-nodes'",
        id="unknown-option",
    ),
    pytest.param(
        _with(
            _set(("kubelet", "topologyManagerPolicyOptions", "prefer-closest-numa-nodes"), "yes")
        ),
        "n1",
        'kubelet.topologyManagerPolicyOptions["prefer-closest-numa-nodes"]',
        "bad value 'yes'",
        id="option-bool",
    ),
    pytest.param(
        _with(_set(("kubelet", "topologyManagerPolicyOptions", "max-allowable-numa-nodes"), "8.5")),
        "n1",
        'kubelet.topologyManagerPolicyOptions["max-allowable-numa-nodes"]',
        "expected an integer",
        id="option-int",
    ),
    pytest.param(
        _with(_set(("kubelet", "topologyManagerPolicyOptions", "max-allowable-numa-nodes"), "4")),
        "n1",
        'kubelet.topologyManagerPolicyOptions["max-allowable-numa-nodes"]',
        "must not be less than 8",
        id="option-below-8",
    ),
    pytest.param(
        _with(_set(("kubelet", "reservedSystemCPUs"), "0,8-9")),
        "n1",
        "kubelet.reservedSystemCPUs",
        "CPUs 8-9 are not on this node",
        id="reserved-off-node",
    ),
    pytest.param(
        _with(_set(("kubelet", "reservedSystemCPUs"), "0-")),
        "n1",
        "kubelet.reservedSystemCPUs",
        "is not a CPU id or range",
        id="reserved-malformed",
    ),
    pytest.param(
        {
            "nodes": [
                {
                    "name": "s1",
                    "kubelet": {"topologyManagerPolicy": "restricted"},
                    "shape": {"numaNodes": 9, "coresPerNumaNode": 1, "memoryPerNumaNode": "1Gi"},
                }
            ]
        },
        "s1",
        "shape.numaNodes",
        "9 NUMA nodes but max-allowable-numa-nodes is 8: the kubelet refuses to start",
        id="too-many-numa-nodes",
    ),
    # --- zones
    pytest.param(
        _with(_set(("zones", 1, "cpus"), "3-5")),
        "n1",
        "zones[1].cpus",
        "CPU 3 is also in zones[0] (zone 0)",
        id="cpu-overlap",
    ),
    pytest.param(
        _with(_set(("zones", 1, "cpus"), "2-5")),
        "n1",
        "zones[1].cpus",
        "CPUs 2-3 are also in zones[0] (zone 0)",
        id="cpu-overlap-many",
    ),
    pytest.param(
        _with(_set(("zones", 1, "id"), 0)),
        "n1",
        "zones[1].id",
        "duplicate zone id 0",
        id="dup-zone-id",
    ),
    pytest.param(
        _with(_set(("zones", 1, "id"), 64)),
        "n1",
        "zones[1].id",
        "64-bit NUMA mask",
        id="zone-id-64",
    ),
    pytest.param(
        _with(_set(("zones", 1, "id"), -1)), "n1", "zones[1].id", "at least 0", id="zone-id-neg"
    ),
    pytest.param(
        _with(_set(("zones", 0, "id"), "0")),
        "n1",
        "zones[0].id",
        "expected an integer",
        id="zone-id-str",
    ),
    pytest.param(
        _with(_set(("zones", 0, "cpus"), "0-3,x")),
        "n1",
        "zones[0].cpus",
        "'x'",
        id="cpulist-malformed",
    ),
    pytest.param(
        _with(_set(("zones", 0, "cpus"), "3-0")),
        "n1",
        "zones[0].cpus",
        "not ascending",
        id="cpulist-desc",
    ),
    pytest.param(
        _with(_delete(("zones", 0, "memory"))),
        "n1",
        "zones[0].memory",
        "is required",
        id="no-memory",
    ),
    pytest.param(
        _with(_set(("zones", 0, "memory"), "8Gb")),
        "n1",
        "zones[0].memory",
        "not a whole Kubernetes quantity",
        id="memory-malformed",
    ),
    pytest.param(
        _with(_set(("zones", 0, "memory"), "-1Gi")),
        "n1",
        "zones[0].memory",
        "must not be negative",
        id="memory-neg",
    ),
    pytest.param(
        _with(_set(("zones", 0, "memory"), "1.5")),
        "n1",
        "zones[0].memory",
        "not a whole",
        id="memory-fraction",
    ),
    pytest.param(
        _with(_set(("zones", 0, "memroy"), "1Gi")),
        "n1",
        "zones[0].memroy",
        "did you mean 'memory'",
        id="zone-typo",
    ),
    pytest.param(
        _with(_set(("zones", 0, "hugepages-2048Ki"), "4Mi")),
        "n1",
        'zones[0]["hugepages-2048Ki"]',
        "write 'hugepages-2Mi'",
        id="hugepages-noncanonical",
    ),
    pytest.param(
        _with(_set(("zones", 0, "hugepages-3Mi"), "6Mi")),
        "n1",
        'zones[0]["hugepages-3Mi"]',
        "power of two",
        id="hugepages-size",
    ),
    pytest.param(
        _with(_set(("zones", 0, "hugepages-1Gi"), "1536Mi")),
        "n1",
        'zones[0]["hugepages-1Gi"]',
        "not a whole number of 1Gi pages",
        id="hugepages-partial-page",
    ),
    pytest.param(
        _with(
            lambda n: (
                n["zones"][0].update(distances=[10, 20, 30]),
                n["zones"][1].update(distances=[20, 10]),
            )
        ),
        "n1",
        "zones[0].distances",
        "3 entries for 2 NUMA zones",
        id="distance-row-length",
    ),
    pytest.param(
        _with(
            lambda n: (
                n["zones"][0].update(distances=[10, 20]),
                n["zones"][1].update(distances=[21, 10]),
            )
        ),
        "n1",
        "zones[0].distances",
        "must be symmetric",
        id="distance-asymmetric",
    ),
    pytest.param(
        _with(
            lambda n: (
                n["zones"][0].update(distances=[20, 10]),
                n["zones"][1].update(distances=[10, 20]),
            )
        ),
        "n1",
        "zones[0].distances",
        "the diagonal must be the row's strict minimum",
        id="distance-diagonal",
    ),
    pytest.param(
        _with(_set(("zones", 0, "distances"), [10, 20])),
        "n1",
        "zones[1].distances",
        "is required when another zone gives distances",
        id="distance-partial",
    ),
    pytest.param(
        _with(_set(("zones", 0, "distances"), [10, "far"])),
        "n1",
        "zones[0].distances[1]",
        "expected an integer",
        id="distance-type",
    ),
    # --- devices
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"gpu": 1})),
        "n1",
        "zones[0].devices.gpu",
        "fully qualified",
        id="device-unqualified",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"kubernetes.io/gpu": 1})),
        "n1",
        'zones[0].devices["kubernetes.io/gpu"]',
        "reserved for native resources",
        id="device-native-domain",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": {"count": 1, "unhealthy": 2}})),
        "n1",
        'zones[0].devices["x.io/a"].unhealthy',
        "2 unhealthy of only 1 devices",
        id="device-unhealthy-count",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": {"count": 1, "ids": ["a"]}})),
        "n1",
        'zones[0].devices["x.io/a"]',
        "exactly one of count and ids",
        id="device-count-and-ids",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": {"cont": 1}})),
        "n1",
        'zones[0].devices["x.io/a"].cont',
        "did you mean 'count'",
        id="device-typo",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": {"ids": ["a", "b"], "unhealthy": ["c"]}})),
        "n1",
        'zones[0].devices["x.io/a"].unhealthy',
        "'c' is not one of the ids",
        id="device-unhealthy-unknown",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": {"count": 2, "unhealthy": ["A-1"]}})),
        "n1",
        'zones[0].devices["x.io/a"].unhealthy',
        "a list of ids needs ids",
        id="device-unhealthy-list-with-count",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": ["a", "a"]})),
        "n1",
        'zones[0].devices["x.io/a"][1]',
        "duplicate device id 'a'",
        id="device-dup-in-list",
    ),
    pytest.param(
        _with(
            lambda n: (
                n["zones"][0].update(devices={"x.io/a": 2}),
                n["zones"][1].update(devices={"x.io/a": ["A-1"]}),
            )
        ),
        "n1",
        'zones[1].devices["x.io/a"]',
        "device id 'A-1' is also in zones[0].devices[\"x.io/a\"]",
        id="device-dup-across-zones",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": -1})),
        "n1",
        'zones[0].devices["x.io/a"]',
        "at least 0",
        id="device-negative",
    ),
    pytest.param(
        _with(_set(("zones", 0, "devices"), {"x.io/a": "2"})),
        "n1",
        'zones[0].devices["x.io/a"]',
        "expected a count, a list of ids or {count, unhealthy}",
        id="device-string",
    ),
    # --- allocated
    pytest.param(
        _with(_set(("zones", 0, "allocated"), {"cpu": 5})),
        "n1",
        "zones[0].allocated.cpu",
        "5 is more than the zone's 4 allocatable CPUs",
        id="allocated-cpu",
    ),
    pytest.param(
        _with(
            lambda n: (
                n.update(kubelet={"reservedSystemCPUs": "0"}),
                n["zones"][0].update(allocated={"cpu": 4}),
            )
        ),
        "n1",
        "zones[0].allocated.cpu",
        "4 is more than the zone's 3 allocatable CPUs (reserved ones excluded)",
        id="allocated-cpu-reserved",
    ),
    pytest.param(
        _with(_set(("zones", 0, "allocated"), {"memory": "9Gi"})),
        "n1",
        "zones[0].allocated.memory",
        "is more than the zone's 8589934592 bytes of memory",
        id="allocated-memory",
    ),
    pytest.param(
        _with(
            lambda n: n["zones"][0].update(
                devices={"x.io/a": {"count": 2, "unhealthy": 1}}, allocated={"x.io/a": 2}
            )
        ),
        "n1",
        'zones[0].allocated["x.io/a"]',
        "2 is more than the zone's 1 healthy devices",
        id="allocated-devices",
    ),
    pytest.param(
        _with(_set(("zones", 0, "allocated"), {"nvidia.com/gpu": 1})),
        "n1",
        'zones[0].allocated["nvidia.com/gpu"]',
        "the zone has no such resource",
        id="allocated-unknown",
    ),
    pytest.param(
        _with(_set(("zones", 0, "allocated"), {"cpu": "500m"})),
        "n1",
        "zones[0].allocated.cpu",
        "not a whole Kubernetes quantity",
        id="allocated-fraction",
    ),
    # --- CPU topology
    pytest.param(
        _with(_set(("cpuTopology",), {"threadsPerCore": 3})),
        "n1",
        "zones[0].cpus",
        "4 CPUs cannot be split into cores of 3 threads (cpuTopology.threadsPerCore)",
        id="threads-not-dividing",
    ),
    pytest.param(
        _with(_set(("cpuTopology",), {"threadsPerCore": 0})),
        "n1",
        "cpuTopology.threadsPerCore",
        "at least 1",
        id="threads-zero",
    ),
    pytest.param(
        _with(_set(("cpuTopology",), {"numaNodesPerSocket": 3})),
        "n1",
        "cpuTopology.numaNodesPerSocket",
        "2 NUMA nodes cannot be grouped into sockets of 3",
        id="sockets-not-dividing",
    ),
    pytest.param(
        _with(_set(("cpuTopology",), {"threadPerCore": 2})),
        "n1",
        "cpuTopology.threadPerCore",
        "did you mean 'threadsPerCore'",
        id="cpu-topology-typo",
    ),
    # --- shape
    pytest.param(_shape(numaNodes=0), "s1", "shape.numaNodes", "at least 1", id="shape-zero"),
    pytest.param(
        _shape(coresPerNuma=2),
        "s1",
        "shape.coresPerNuma",
        "did you mean 'coresPerNumaNode'",
        id="shape-typo",
    ),
    pytest.param(
        {"nodes": [{"name": "s1", "shape": {"numaNodes": 2, "coresPerNumaNode": 2}}]},
        "s1",
        "shape.memoryPerNumaNode",
        "is required",
        id="shape-no-memory",
    ),
    pytest.param(
        _shape(devicesPerNumaNode={"x.io/a": ["a"]}),
        "s1",
        'shape.devicesPerNumaNode["x.io/a"]',
        "not a list of ids",
        id="shape-device-ids",
    ),
    pytest.param(
        _shape(distances=[[10, 20]]),
        "s1",
        "shape.distances",
        "1 rows for 2 NUMA nodes",
        id="shape-distance-rows",
    ),
    pytest.param(
        _shape(distances=[[10, 20], [20, 10, 30]]),
        "s1",
        "shape.distances[1]",
        "3 entries for 2 NUMA zones",
        id="shape-distance-row-length",
    ),
    pytest.param(
        _shape(hugepagesPerNumaNode={"memory": "1Gi"}),
        "s1",
        "shape.hugepagesPerNumaNode.memory",
        "expected a hugepages-<size> resource",
        id="shape-hugepages-key",
    ),
    pytest.param(
        {"nodes": [{"name": "s1", "cpuTopology": {}, "shape": _shape()["nodes"][0]["shape"]}]},
        "s1",
        "cpuTopology",
        "give threadsPerCore and numaNodesPerSocket in shape",
        id="shape-with-cpu-topology",
    ),
]


@pytest.mark.parametrize(("data", "node", "field", "detail"), ERROR_CASES)
def test_invalid_profile_gives_one_clear_error(
    data: object, node: str | None, field: str | None, detail: str
) -> None:
    with pytest.raises(ProfileError) as caught:
        parse_profiles(copy.deepcopy(data), source="p.yaml")
    error = caught.value
    assert (error.source, error.node, error.field) == ("p.yaml", node, field)
    assert detail in error.detail
    expected_prefix = (
        "p.yaml: " + (f'node "{node}": ' if node else "") + (f"{field}: " if field else "")
    )
    assert str(error) == expected_prefix + error.detail


def test_more_numa_nodes_are_fine_when_allowed_or_policy_none() -> None:
    shape = {"numaNodes": 9, "coresPerNumaNode": 1, "memoryPerNumaNode": "1Gi"}
    allowed = {
        "topologyManagerPolicy": "best-effort",
        "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "9"},
    }
    data = {
        "nodes": [
            {"name": "none", "shape": shape},
            {"name": "allowed", "kubelet": allowed, "shape": shape},
        ]
    }
    none, allowed_node = parse_profiles(data, source="p.yaml")
    assert len(none.zones) == 9
    assert allowed_node.kubelet.max_allowable_numa_nodes == 9


def test_option_values_accept_yaml_scalars_and_keep_the_string_form() -> None:
    kubelet = {
        "topologyManagerPolicy": "restricted",
        "topologyManagerPolicyOptions": {
            "prefer-closest-numa-nodes": True,
            "max-allowable-numa-nodes": 10,
        },
    }
    (profile,) = parse_profiles({"nodes": [_node(kubelet=kubelet)]}, source="p.yaml")
    assert profile.kubelet.policy_options == {
        "prefer-closest-numa-nodes": "true",
        "max-allowable-numa-nodes": "10",
    }
    assert profile.kubelet.prefer_closest_numa_nodes
    assert profile.kubelet.max_allowable_numa_nodes == 10


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("1", True, id="go-1"),
        pytest.param("T", True, id="go-T"),
        pytest.param("False", False, id="go-False"),
        pytest.param("0", False, id="go-0"),
    ],
)
def test_prefer_closest_uses_go_parse_bool(value: str, expected: bool) -> None:
    kubelet = {"topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": value}}
    (profile,) = parse_profiles({"nodes": [_node(kubelet=kubelet)]}, source="p.yaml")
    assert profile.kubelet.prefer_closest_numa_nodes is expected


def test_defaults() -> None:
    (profile,) = parse_profiles({"nodes": [_node()]}, source="p.yaml")
    assert profile.kubelet == KubeletConfig()
    assert profile.kubelet.topology_manager_policy == "none"
    assert profile.kubelet.cpu_manager_policy == "static"
    assert profile.kubelet.memory_manager_policy == "Static"
    assert profile.max_pods == 110
    assert profile.labels == {}
    assert profile.devices == {}
    assert all(z.distances == () and z.hugepages == {} and z.allocated == {} for z in profile.zones)


def test_zones_are_sorted_by_id_and_may_skip_ids() -> None:
    zones = [_zone(2, "4-7", distances=[21, 10]), _zone(0, "0-3", distances=[10, 21])]
    (profile,) = parse_profiles({"nodes": [_node(zones=zones)]}, source="p.yaml")
    assert profile.zone_ids == (0, 2)
    # distance rows are in ascending zone id order, whatever the listing order
    assert profile.distance(0, 2) == 21
    assert profile.zones[1].distances == (21, 10)


def test_labels_and_max_pods() -> None:
    (profile,) = parse_profiles(
        {"nodes": [_node(labels={"example.com/pool": "gpu-a", "tier": ""}, maxPods=250)]},
        source="p.yaml",
    )
    assert profile.labels == {"example.com/pool": "gpu-a", "tier": ""}
    assert profile.max_pods == 250


@pytest.mark.parametrize(
    ("nrt", "expected"),
    [
        pytest.param(None, (None, None), id="controller-default"),
        pytest.param({"delay": "2s", "jitter": "500ms"}, (2.0, 0.5), id="durations"),
        pytest.param({"delay": 0}, (0.0, None), id="seconds-only-delay"),
    ],
)
def test_per_node_nrt_lag(
    nrt: dict[str, object] | None, expected: tuple[float | None, float | None]
) -> None:
    node = _node() if nrt is None else _node(nrt=nrt)
    (profile,) = parse_profiles({"nodes": [node]}, source="p.yaml")
    assert (profile.nrt_delay, profile.nrt_jitter) == expected


def test_numeric_cpulists_and_quantities() -> None:
    zones = [{"id": 0, "cpus": 0, "memory": 1073741824, "hugepages-2Mi": "4Mi"}]
    (profile,) = parse_profiles({"nodes": [_node(zones=zones)]}, source="p.yaml")
    (zone,) = profile.zones
    assert zone.cpus == frozenset({0})
    assert zone.memory == GI
    assert zone.hugepages == {"hugepages-2Mi": 4 * 2**20}
