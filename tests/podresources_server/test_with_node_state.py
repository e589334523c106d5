"""The server fed by the kubelet simulator: what the simulator allocated is what a
podresources client reads, with each device's NUMA node."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from exporter.podresources_client import PodResourcesClient
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.kubelet.node import NodeState
from fakenrt.podresources_server import PodResourcesServer
from fakenrt.podspec import pod_from_manifest
from fakenrt.profiles import NodeProfile, example_profile, load_profiles


class StateSource:
    def __init__(self, state: NodeState) -> None:
        self.state = state

    def snapshot(self) -> tuple[NodeProfile, Sequence[PodAllocation]]:
        return self.state.profile, tuple(self.state.allocations().values())


def test_list_reports_the_simulators_allocation(tmp_path: Path) -> None:
    profile = load_profiles(example_profile("dgx"))[0]
    state = NodeState.from_profile(profile)
    resources = {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}
    manifest = {
        "metadata": {"namespace": "ns", "name": "p1", "uid": "u1"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": resources, "limits": resources}}]
        },
    }
    result = state.admit(pod_from_manifest(manifest))
    assert result.admit and result.allocation is not None
    (allocated,) = result.allocation.containers

    with PodResourcesServer(tmp_path / "kubelet.sock", StateSource(state)) as srv:
        client = PodResourcesClient(srv.socket_path, timeout_s=5)
        (pod,) = client.list()
        client.close()

    (container,) = pod.containers
    assert pod.key == "ns/p1"
    assert container.cpu_ids == tuple(sorted(allocated.cpus))
    gpu_zone = {d: z.id for z in profile.zones for d in z.devices["nvidia.com/gpu"].ids}
    assert [(d.device_ids, d.numa_ids) for d in container.devices] == [
        ((gpu,), (gpu_zone[gpu],)) for gpu in allocated.devices["nvidia.com/gpu"]
    ]
    assert sum(b.size for b in container.memory) == 8 * 2**30
