"""The harness's view of DRA devices (tests/e2e/dra.py and what uses it), as tables: a
pod's claims become what its kubelet holds, counted in the zones of the observed
placement, never held twice, and judged misaligned by the exporter's definition."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakenrt.kubelet.allocation import (
    ClaimResource,
    ContainerAllocation,
    DynamicResource,
    MemoryBlock,
    PodAllocation,
)
from fakenrt.profiles import NodeProfile, parse_profiles
from tests.e2e.allocations import zone_amounts
from tests.e2e.dra import (
    metric_misaligned,
    misaligned,
    misaligned_pods,
    reported_misaligned,
    with_claims,
)
from tests.e2e.invariants import double_allocations
from tests.e2e.outcome import Outcome, harness_problems, misalignment_reports
from tests.e2e.scenarios.dra import dra_node
from tests.e2e.variants import LAG_NONE, Variant

NS = "ns"


def node(**kwargs: Any) -> NodeProfile:
    raw = dra_node(**kwargs)
    return parse_profiles({"nodes": [raw]}, source="test")[0]


GPUS = node(gpus=2)  # gpu-0, gpu-1 on NUMA node 0; gpu-2, gpu-3 on 1; CPUs 0-3 | 4-7
CPU_DRIVER = node(gpus=1, cpu_driver=True)  # gpu-0 | gpu-1; cpudevnuma000 | cpudevnuma001


def claimed(profile: NodeProfile, *devices: tuple[str, str]) -> DynamicResource:
    return DynamicResource(
        "c", NS, tuple(ClaimResource(drv, profile.name, dev) for drv, dev in devices)
    )


def allocation(
    cpus: frozenset[int] | set[int] = frozenset(),
    dynamic: tuple[DynamicResource, ...] = (),
    memory_numa: int | None = None,
) -> PodAllocation:
    memory = (
        (MemoryBlock("memory", 1 << 30, frozenset({memory_numa})),)
        if memory_numa is not None
        else ()
    )
    return PodAllocation(
        NS, "p", "uid", (ContainerAllocation("main", frozenset(cpus), {}, memory, dynamic=dynamic),)
    )


GPU0 = ("gpu.nvidia.com", "gpu-0")
GPU2 = ("gpu.nvidia.com", "gpu-2")


@pytest.mark.parametrize(
    ("profile", "alloc", "expected"),
    [
        pytest.param(GPUS, allocation({4, 5}, (claimed(GPUS, GPU0),)), 1, id="gpu-0-cpus-1"),
        pytest.param(GPUS, allocation({4, 5}, (claimed(GPUS, GPU2),)), 0, id="gpu-1-cpus-1"),
        pytest.param(GPUS, allocation(set(), (claimed(GPUS, GPU0),)), 0, id="nothing-pinned"),
        pytest.param(
            GPUS, allocation({1}, (claimed(GPUS, GPU2),), memory_numa=1), 0, id="memory-on-1"
        ),
        pytest.param(
            CPU_DRIVER,
            allocation(set(), (claimed(CPU_DRIVER, GPU0, ("dra.cpu", "cpudevnuma000")),)),
            0,
            id="dra-cpus-same-node",
        ),
        pytest.param(
            CPU_DRIVER,
            allocation(set(), (claimed(CPU_DRIVER, GPU0, ("dra.cpu", "cpudevnuma001")),)),
            1,
            id="dra-cpus-other-node",
        ),
    ],
)
def test_misaligned_is_the_exporters_definition_on_the_profiles_devices(
    profile: NodeProfile, alloc: PodAllocation, expected: int
) -> None:
    assert len(misaligned(profile, alloc)) == expected


def test_a_misaligned_container_is_described_with_its_device_and_nodes() -> None:
    (how,) = misaligned(GPUS, allocation({4, 5}, (claimed(GPUS, GPU0),)))
    assert how == (
        f"container main: DRA device gpu.nvidia.com/{GPUS.name}/gpu-0 on NUMA node 0, "
        "its exclusive CPUs and memory on NUMA node 1"
    )


def test_dra_devices_count_in_their_zone_under_the_driver_once_per_pod() -> None:
    shared = claimed(GPUS, GPU0, GPU2)
    two = PodAllocation(
        NS,
        "p",
        "u",
        (
            ContainerAllocation("a", frozenset({1}), dynamic=(shared,)),
            ContainerAllocation("b", frozenset({2}), dynamic=(shared,)),
        ),
    )
    per_zone, _ = zone_amounts(GPUS, two)
    assert per_zone == {0: {"cpu": 2, "gpu.nvidia.com": 1}, 1: {"gpu.nvidia.com": 1}}


def pod(name: str, phase: str = "Running", claim: str | None = "c") -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": GPUS.name, "containers": [{"name": "main"}]}
    if claim is not None:
        spec["resourceClaims"] = [{"name": "devices", "resourceClaimName": claim}]
        spec["containers"][0]["resources"] = {"claims": [{"name": "devices"}]}
    return {
        "metadata": {"name": name, "namespace": NS, "uid": name},
        "spec": spec,
        "status": {"phase": phase},
    }


def claim_object(*devices: str) -> dict[str, Any]:
    results = [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": GPUS.name, "device": d}
        for d in devices
    ]
    return {"metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": results}}}}


def test_a_running_pods_claims_become_what_its_kubelet_holds() -> None:
    record = {
        n: PodAllocation(NS, n, n, (ContainerAllocation("main", frozenset({4})),))
        for n in ("run", "wait", "none")
    }
    listed = [pod("run"), pod("wait", phase="Pending"), pod("none", claim=None)]
    held = with_claims(record, listed, {"c": claim_object("gpu-0")})
    (dynamic,) = held["run"].containers[0].dynamic
    assert dynamic.resources == (ClaimResource("gpu.nvidia.com", GPUS.name, "gpu-0"),)
    assert held["wait"] == record["wait"]  # not prepared before it runs
    assert held["none"] == record["none"]
    assert misaligned_pods(listed, {GPUS.name: GPUS}, held) == {
        "run": [
            f"container main: DRA device gpu.nvidia.com/{GPUS.name}/gpu-0 on NUMA node 0, "
            "its exclusive CPUs and memory on NUMA node 1"
        ]
    }


def test_a_claim_made_from_a_template_is_found_through_the_pods_status() -> None:
    record = {
        n: PodAllocation(NS, n, n, (ContainerAllocation("main", frozenset({4})),))
        for n in ("made", "unmade")
    }

    def from_template(name: str, made: str | None) -> dict[str, Any]:
        manifest = pod(name)
        manifest["spec"]["resourceClaims"] = [{"name": "devices", "resourceClaimTemplateName": "t"}]
        if made is not None:
            statuses = [{"name": "devices", "resourceClaimName": made}]
            manifest["status"]["resourceClaimStatuses"] = statuses
        return manifest

    listed = [from_template("made", "c"), from_template("unmade", None)]
    held = with_claims(record, listed, {"c": claim_object("gpu-0")})
    (dynamic,) = held["made"].containers[0].dynamic
    assert dynamic.claim_name == "c"
    assert dynamic.resources == (ClaimResource("gpu.nvidia.com", GPUS.name, "gpu-0"),)
    assert held["unmade"] == record["unmade"]


def test_a_dra_gpu_held_by_two_pods_is_caught_a_shared_cpu_device_is_not() -> None:
    def holding(name: str, *devices: tuple[str, str]) -> PodAllocation:
        c = ContainerAllocation("main", dynamic=(claimed(CPU_DRIVER, *devices),))
        return PodAllocation(NS, name, name, (c,))

    cpu = ("dra.cpu", "cpudevnuma000")
    listed = [
        {**pod(n), "spec": {**pod(n)["spec"], "nodeName": CPU_DRIVER.name}} for n in ("a", "b")
    ]
    shared_cpu = {"a": holding("a", GPU0, cpu), "b": holding("b", cpu)}
    assert double_allocations(listed, shared_cpu) == []
    twice = {**shared_cpu, "b": holding("b", GPU0)}
    assert double_allocations(listed, twice) == [
        f"{CPU_DRIVER.name} gpu.nvidia.com/{CPU_DRIVER.name} gpu-0: held by a and b"
    ]


def test_the_exporters_metric_and_events_name_the_misaligned_pods() -> None:
    text = (
        "# TYPE numa_exporter_dra_pod_misaligned gauge\n"
        'numa_exporter_dra_pod_misaligned{namespace="ns",pod="far"} 1.0\n'
        'numa_exporter_dra_pod_misaligned{namespace="other",pod="x"} 1.0\n'
    )
    assert metric_misaligned([text, ""], NS) == {"far"}
    events = [
        {
            "reason": "DRAMisaligned",
            "involvedObject": {"name": "far"},
            "source": {"component": "numa-exporter"},
        },
        {"reason": "DRAMisaligned", "involvedObject": {"name": "x"}, "source": {"component": "z"}},
        {"reason": "Scheduled", "involvedObject": {"name": "near"}},
    ]
    assert reported_misaligned(events) == {"far"}


def outcome(**kwargs: Any) -> Outcome:
    base = Outcome(
        scenario="i", variant=Variant(exporter=True, lag=LAG_NONE), pods={}, workload=(),
        prebound=(), allocations={},
    )  # fmt: skip
    return replace(base, **kwargs)


def test_the_harness_fails_when_the_exporter_misreports_a_pod() -> None:
    truth = {"far": ("container main: ...",)}
    right = outcome(
        misaligned=truth, misaligned_metric=frozenset({"far"}), misaligned_events=frozenset({"far"})
    )
    assert harness_problems(right) == []
    assert outcome(misaligned=truth).misaligned_metric is None  # not read: nothing to hold
    assert misalignment_reports(outcome(misaligned=truth)) == []
    silent = replace(right, misaligned_metric=frozenset())
    assert misalignment_reports(silent) == [
        "far: runs misaligned (container main: ...), not in the exporter's metric"
    ]
    wrong = replace(right, misaligned_events=frozenset({"far", "near"}))
    assert misalignment_reports(wrong) == [
        "near: aligned, named by the exporter's DRAMisaligned Events"
    ]


@given(
    cpus=st.frozensets(st.integers(0, 7)),
    gpus=st.frozensets(st.sampled_from(["gpu-0", "gpu-1", "gpu-2", "gpu-3"]), min_size=1),
)
def test_a_pod_is_misaligned_exactly_when_a_gpu_is_off_its_cpus_zones(
    cpus: frozenset[int], gpus: frozenset[str]
) -> None:
    """GPUS: gpu-0, gpu-1 and CPUs 0-3 on NUMA node 0; gpu-2, gpu-3 and CPUs 4-7 on 1."""
    dynamic = (claimed(GPUS, *(("gpu.nvidia.com", g) for g in sorted(gpus))),)
    cpu_zones = {c // 4 for c in cpus}
    gpu_zones = {int(g[-1]) // 2 for g in gpus}
    expected = bool(cpu_zones) and not gpu_zones <= cpu_zones
    assert bool(misaligned(GPUS, allocation(cpus, dynamic))) == expected
    per_zone, _ = zone_amounts(GPUS, allocation(cpus, dynamic))
    assert sum(z.get("gpu.nvidia.com", 0) for z in per_zone.values()) == len(gpus)
