"""Properties of the simulated node over random profiles and random admit / release
sequences (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.allocation import INIT, AdmissionResult
from fakenrt.kubelet.node import NodeState
from fakenrt.profiles.model import CpuPolicyOptions, NodeProfile
from fakenrt.profiles.resources import zone_allocatable, zone_capacity
from tests.kubelet.builders import GI, node, pod

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
#: CPU Manager policy options (combinations the kubelet accepts).
CPU_OPTIONS = (
    CpuPolicyOptions(),
    CpuPolicyOptions(),
    CpuPolicyOptions(full_pcpus_only=True),
    CpuPolicyOptions(distribute_cpus_across_numa=True, full_pcpus_only=True),
    CpuPolicyOptions(distribute_cpus_across_cores=True),
    CpuPolicyOptions(prefer_align_cpus_by_uncorecache=True, strict_cpu_reservation=True),
    CpuPolicyOptions(align_by_socket=True),
)


@st.composite
def profiles(draw: st.DrawFn) -> NodeProfile:
    zones = draw(st.integers(1, 4))
    threads = draw(st.sampled_from([1, 2]))
    cpus_per_zone = threads * draw(st.integers(1, 4))
    gpus = draw(st.integers(0, 3))
    bad = draw(st.integers(0, 1)) if gpus else 0
    reserved = draw(st.sets(st.integers(0, zones * cpus_per_zone - 1), max_size=2))
    allocated: dict[int, dict[str, int]] = {}
    if draw(st.booleans()):
        free0 = cpus_per_zone - len(
            [c for c in reserved if c % (zones * cpus_per_zone) < cpus_per_zone]
        )
        allocated[0] = {"memory": GI}
        if gpus > bad and draw(st.booleans()):
            allocated[0]["nvidia.com/gpu"] = 1
        if free0 > 1 and threads == 1 and 0 not in reserved:
            allocated[0]["cpu"] = 1
    return node(
        zones=zones,
        cpus_per_zone=cpus_per_zone,
        threads=threads,
        memory=4 * GI,
        devices={"nvidia.com/gpu": gpus} if gpus else {},
        unhealthy={"nvidia.com/gpu": bad} if gpus else {},
        hugepages={"hugepages-1Gi": 2 * GI} if draw(st.booleans()) else {},
        policy=draw(st.sampled_from(POLICIES)),
        scope=draw(st.sampled_from(["container", "pod"])),
        cpu_policy=draw(st.sampled_from(["static", "static", "none"])),
        memory_policy=draw(st.sampled_from(["Static", "Static", "None"])),
        reserved=frozenset(reserved) if threads == 1 else frozenset(),
        allocated=allocated,
        node_devices={"example.com/license": 1} if draw(st.booleans()) else {},
        cpu_options=draw(st.sampled_from(CPU_OPTIONS)),
    )


@st.composite
def containers(draw: st.DrawFn, name: str, guaranteed: bool, hugepages: bool) -> dict[str, Any]:
    res: dict[str, Any] = {
        "cpu": draw(st.sampled_from(["1", "2", "3", "5", "500m", "1500m"])),
        "memory": draw(st.sampled_from(["256Mi", "1Gi", "1Gi", "3Gi", "6Gi"])),
    }
    if draw(st.booleans()):
        res["nvidia.com/gpu"] = draw(st.integers(1, 3))
    if hugepages and draw(st.integers(0, 3)) == 0:
        res["hugepages-1Gi"] = "1Gi"
    if draw(st.integers(0, 5)) == 0:
        res["example.com/license"] = 1
    if guaranteed:
        return {"name": name, "resources": {"limits": res}}
    limits = {k: v for k, v in res.items() if "/" in k or k.startswith("hugepages")}
    requests = dict(res)
    return {"name": name, "resources": {"requests": requests, "limits": limits}}


@st.composite
def pods(draw: st.DrawFn, index: int, hugepages: bool) -> Any:
    guaranteed = draw(st.booleans())
    apps = [
        draw(containers(f"c{i}", guaranteed, hugepages)) for i in range(draw(st.integers(1, 2)))
    ]
    inits = []
    for i in range(draw(st.integers(0, 2))):
        c = draw(containers(f"i{i}", guaranteed, hugepages))
        if draw(st.booleans()):
            c["restartPolicy"] = "Always"
        inits.append(c)
    return pod(f"p{index}", *apps, init=inits)


def check_invariants(state: NodeState) -> None:
    profile = state.profile
    usage, free = state.zone_usage(), state.zone_free()
    allocatable, capacity = zone_allocatable(profile), zone_capacity(profile)
    for zone in profile.zones:
        for resource, total in allocatable[zone.id].items():
            assert usage[zone.id][resource] + free[zone.id][resource] == total, (zone.id, resource)
            assert 0 <= usage[zone.id][resource] <= capacity[zone.id][resource]
    reserved = profile.kubelet.reserved_cpus
    unhealthy = {d for z in profile.zones for s in z.devices.values() for d in s.unhealthy}
    cpu_owner: dict[int, str] = {}
    dev_owner: dict[str, str] = {}
    for key, allocation in state.allocations().items():
        running = [c for c in allocation.containers if c.kind != INIT]
        for i, a in enumerate(running):  # concurrently running containers never share
            for b in running[i + 1 :]:
                assert not a.cpus & b.cpus
                for res, ids in a.devices.items():
                    assert not set(ids) & set(b.devices.get(res, ()))
        for c in allocation.containers:
            assert not c.cpus & reserved
            for cpu in c.cpus:
                assert cpu_owner.setdefault(cpu, key) == key, f"CPU {cpu} held by two pods"
            for ids in c.devices.values():
                assert not set(ids) & unhealthy
                for d in ids:
                    assert dev_owner.setdefault(d, key) == key, f"device {d} held by two pods"


def check_result(state: NodeState, result: AdmissionResult) -> None:
    zone_ids = set(state.profile.zone_ids)
    for report in result.hints:
        if report.best.numa is not None:
            assert set(report.best.numa) <= zone_ids and report.best.numa
    if result.admit and state.profile.kubelet.topology_manager_policy == "single-numa-node":
        for report in result.hints:
            assert report.best.preferred
            assert report.best.numa is None or len(report.best.numa) == 1
    if not result.admit:
        assert result.allocation is None and result.reason


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(profiles(), st.data())
def test_admit_release_keeps_the_books(profile: NodeProfile, data: st.DataObject) -> None:
    state = NodeState.from_profile(profile)
    initial = state.zone_usage()
    check_invariants(state)
    for step in range(data.draw(st.integers(1, 8))):
        admitted = list(state.allocations())
        if admitted and data.draw(st.integers(0, 3)) == 0:
            state.release(data.draw(st.sampled_from(admitted)))
        else:
            before = state.zone_usage()
            hugepages = any(z.hugepages for z in profile.zones)
            result = state.admit(data.draw(pods(step, hugepages)))
            check_result(state, result)
            event(f"verdict: {result.reason or 'admitted'}")
            if not result.admit:
                assert state.zone_usage() == before  # a rejected pod holds nothing
        check_invariants(state)
    for key in list(state.allocations()):
        state.release(key)
    assert state.zone_usage() == initial
