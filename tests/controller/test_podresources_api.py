"""R4 against the real API server: each fake node's podresources socket reports exactly the
simulator's allocations (CPU ids, device ids with their NUMA node, memory blocks) the moment
they change, and its sysfs tree maps every CPU to its zone."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.kubeclient import KubeClient, path
from exporter.podresources_client import PodResourcesClient
from exporter.sysfs import read_cpu_numa_map
from fakenrt.controller.endpoints import socket_path, sysfs_root
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controller.harness import create_pod, phase_of, running, wait_for
from tests.controller.podmanifests import pod

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]


def test_r4_socket_and_sysfs_follow_the_simulator(
    kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    profiles = make_profiles(two_numa_profile(unique("fake")), two_numa_profile(unique("fake")))
    node, other = profiles[0].name, profiles[1].name
    state = tmp_path / "s"
    with running(kube, profiles, state_dir=state) as ctl:
        assert ctl.fleet is not None
        cpu_zone = read_cpu_numa_map(sysfs_root(state, node))
        assert cpu_zone == {cpu: z.id for z in profiles[0].zones for cpu in z.cpus}
        client = PodResourcesClient(socket_path(state, node), timeout_s=5)
        try:
            allocatable = client.allocatable()
            assert set(allocatable.cpu_ids) == set(cpu_zone)
            create_pod(kube, pod("a", node, namespace=namespace, cpu="2", gpus=2))
            wait_for(phase_of(kube, namespace, "a", "Running"), what="a Running")
            held = ctl.fleet.nodes[node].state.allocations()[f"{namespace}/a"].containers[0]
            (listed,) = [p for p in client.list() if p.name == "a"]
            (container,) = listed.containers
            assert set(container.cpu_ids) == held.cpus
            zone = {cpu_zone[c] for c in held.cpus}
            assert {(d.resource_name, d.device_ids, d.numa_ids) for d in container.devices} == {
                ("nvidia.com/gpu", (dev,), tuple(zone)) for dev in held.devices["nvidia.com/gpu"]
            }
            assert [(m.memory_type, m.size, m.numa_ids) for m in container.memory] == [
                (b.type, b.size, tuple(sorted(b.numa))) for b in held.memory
            ]
            # The other node's socket knows nothing of this pod.
            other_client = PodResourcesClient(socket_path(state, other), timeout_s=5)
            assert other_client.list() == ()
            other_client.close()

            kube.delete(
                path("api", "v1", "namespaces", namespace, "pods", "a"), {"gracePeriodSeconds": 0}
            )
            wait_for(lambda: not [p for p in client.list() if p.name == "a"], what="released")
        finally:
            client.close()
