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
