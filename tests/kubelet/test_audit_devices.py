"""Audit: device manager rules checked against ``pkg/kubelet/cm/devicemanager``.

Each case names the upstream function or test it mirrors.
"""

from __future__ import annotations

from fakenrt.kubelet.bitmask import BitMask
from fakenrt.kubelet.hints import TopologyHint
from fakenrt.kubelet.node import NodeState
from fakenrt.kubelet.provider_devices import DeviceInventory, DeviceProvider, pod_device_requests
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
