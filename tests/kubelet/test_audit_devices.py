"""Audit: device manager rules checked against ``pkg/kubelet/cm/devicemanager``.

Each case names the upstream function or test it mirrors.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.kubelet.bitmask import BitMask, iterate_masks
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.provider_devices import (
    Device,
    DeviceInventory,
    DeviceProvider,
    pod_device_requests,
)
from tests.kubelet.builders import container, node, pod

GPU = "nvidia.com/gpu"


def test_pod_scope_keeps_a_zero_device_limit() -> None:
    """topology_hints.go getPodDeviceRequest: ``resource.PodLimits`` keeps a resource
    whose limits add up to zero (``addResourceList`` inserts the key), so the pod still
    asks the device manager for hints for it - exactly as ``getContainerDeviceRequest``
    does in container scope."""
    profile = node(devices={GPU: 2})
    p = pod("p", container("c", cpu=1, gpu=0), init=[container("i", cpu=1, gpu=0)])
    assert pod_device_requests(p, DeviceInventory.from_profile(profile)) == {GPU: 0}


def test_pod_scope_zero_device_limit_takes_part_in_the_merge() -> None:
    """generateDeviceTopologyHints with request 0: every mask qualifies and the
    single-NUMA masks are preferred (TestGetPodTopologyHints shape). Merged with CPUs that
    need both NUMA nodes, no merged hint is preferred, so ``restricted`` rejects in pod
    scope as it does in container scope."""
    for scope in ("container", "pod"):
        profile = node(cpus_per_zone=8, devices={GPU: 2}, scope=scope, memory_policy="None")
        result = NodeState.from_profile(profile).admit(pod("p", container("c", cpu=12, gpu=0)))
        assert not result.admit, scope
        assert result.reason == "TopologyAffinityError"
        (report,) = result.hints
        assert [h.numa for h in report.providers[GPU]] == [(0,), (1,), (0, 1)]


def test_zero_request_hints_match_container_scope() -> None:
    """The same request (0) gives the same hints whichever scope asked."""
    profile = node(devices={GPU: 2})
    inventory = DeviceInventory.from_profile(profile)
    p = pod("p", container("c", cpu=1, gpu=0))
    by_pod = DeviceProvider(inventory, {}).pod_hints(p)
    by_container = DeviceProvider(inventory, {}).container_hints(p, p.containers[0])
    expected = (
        TopologyHint(BitMask.of(0), True),
        TopologyHint(BitMask.of(1), True),
        TopologyHint(BitMask.of(0, 1), False),
    )
    assert by_pod == by_container == {GPU: expected}


def test_restartable_init_container_devices_are_not_reallocated() -> None:
    """manager_test.go TestRestartableInitContainerDeviceAllocation: 6 devices without
    topology; init1 takes 3, sidecars 2 and 3 take 1 and 2 of them (a regular init
    container's devices are reusable), the app containers take 1 and 2 more, and the
    devices of sidecars and app containers never overlap (manager.go Allocate:
    removeContainerAllocatedResources for restartable init containers)."""
    res = "example.com/res"
    profile = node(cpus_per_zone=8, node_devices={res: 6}, policy="best-effort")

    def c(name: str, count: int, *, sidecar: bool = False) -> dict[str, object]:
        spec = container(name, cpu=1, memory="256Mi")
        spec["resources"]["limits"][res] = count
        if sidecar:
            spec["restartPolicy"] = "Always"
        return spec

    p = pod(
        "p",
        c("normal1", 1),
        c("normal2", 2),
        init=[c("init1", 3), c("sidecar2", 1, sidecar=True), c("sidecar3", 2, sidecar=True)],
    )
    state = NodeState.from_profile(profile)
    result = state.admit(p)
    assert result.admit and result.allocation is not None
    held = {c.name: set(c.devices.get(res, ())) for c in result.allocation.containers}
    assert {k: len(v) for k, v in held.items()} == {
        "init1": 3,
        "sidecar2": 1,
        "sidecar3": 2,
        "normal1": 1,
        "normal2": 2,
    }
    assert held["sidecar2"] <= held["init1"] and held["sidecar3"] <= held["init1"]
    dedicated = [held[n] for n in ("sidecar2", "sidecar3", "normal1", "normal2")]
    for i, a in enumerate(dedicated):
        for b in dedicated[i + 1 :]:
            assert not a & b
    assert sum(state.zone_usage()[z].get(res, 0) for z in (0, 1)) == 0  # no NUMA zone


@st.composite
def _inventory(draw: st.DrawFn) -> DeviceInventory:
    zones = draw(st.integers(1, 4))
    devices: list[Device] = []
    for z in range(zones):
        for i in range(draw(st.integers(0, 3))):
            devices.append(Device(f"d{z}-{i}", z, draw(st.booleans())))
    for i in range(draw(st.integers(0, 2))):
        devices.append(Device(f"free-{i}", None, draw(st.booleans())))
    return DeviceInventory(numa_nodes=tuple(range(zones)), devices={GPU: tuple(devices)})


@settings(max_examples=300, deadline=None)
@given(_inventory(), st.data())
def test_device_hints_follow_generate_device_topology_hints(
    inventory: DeviceInventory, data: st.DataObject
) -> None:
    """topology_hints.go GetTopologyHints / generateDeviceTopologyHints, transcribed
    again: no hints without any NUMA-aware device; an empty list when free healthy plus
    reusable devices are too few; otherwise every mask whose free healthy devices (with
    NUMA affinity) plus the reusable ones (which must all lie inside it, those without
    affinity skipped) cover the request, preferred at the narrowest width any mask reaches
    counting *all* devices."""
    devices = inventory.devices[GPU]
    ids = [d.id for d in devices]
    allocated = frozenset(data.draw(st.sets(st.sampled_from(ids)))) if ids else frozenset()
    reusable = (
        frozenset(data.draw(st.sets(st.sampled_from(sorted(allocated)))))
        if allocated
        else frozenset()
    )
    request = data.draw(st.integers(0, len(ids) + 1))
    provider = DeviceProvider(inventory, {GPU: allocated})
    provider._reuse = {GPU: reusable}  # what earlier init containers left to reuse
    c = container("c", cpu=1)
    c["resources"]["limits"][GPU] = request
    p = pod("p", c)
    got = provider.container_hints(p, p.containers[0])
    assert got is not None
    numa = {d.id: d.numa for d in devices}
    available = {d.id for d in devices if d.healthy} - allocated
    if all(d.numa is None for d in devices):
        assert got == {GPU: None}
        return
    if len(available | reusable) < request:
        assert got == {GPU: ()}
        return
    min_size = len(inventory.numa_nodes)
    masks: list[BitMask] = []
    for mask in iterate_masks(inventory.numa_nodes):
        in_mask = sum(1 for d in devices if d.numa is not None and mask.is_set(d.numa))
        if in_mask >= request and mask.count() < min_size:
            min_size = mask.count()
        with_topology = [d for d in reusable if numa[d] is not None]
        if any(not mask.is_set(n) for d in with_topology if (n := numa[d]) is not None):
            continue
        free = sum(1 for d in available if (n := numa[d]) is not None and mask.is_set(n))
        if len(with_topology) + free < request:
            continue
        masks.append(mask)
    assert got == {GPU: tuple(TopologyHint(m, m.count() == min_size) for m in masks)}
