"""The real exporter, unchanged, against a fake node's podresources socket and sysfs: the
observed annotations it writes equal what the simulated kubelet allocated."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    MemoryGroup,
    ZonePlacement,
    format_memory_groups,
    format_placement,
)
from exporter.kubeclient import KubeClient
from fakenrt.controller.endpoints import socket_path, sysfs_root
from fakenrt.kubelet.allocation import PodAllocation
from fakenrt.profiles import NodeProfile
from tests.controller.conftest import make_profiles, two_numa_profile, unique
from tests.controller.harness import create_pod, get_pod, phase_of, running, wait_for
from tests.controller.podmanifests import pod
from tests.controlplane.cluster import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures("nrt_crd")]
REPO = Path(__file__).resolve().parents[2]


def expected_annotations(profile: NodeProfile, allocation: PodAllocation) -> tuple[str, str]:
    """The placement the simulator's allocation amounts to, in the exporter's format."""
    zone_of_cpu = {cpu: z.id for z in profile.zones for cpu in z.cpus}
    zone_of_device = {
        (name, dev): z.id for z in profile.zones for name, ds in z.devices.items() for dev in ds.ids
    }
    per_zone: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    groups: dict[frozenset[int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in allocation.containers:
        for cpu in c.cpus:
            per_zone[zone_of_cpu[cpu]]["cpu"] += 1
        for name, ids in c.devices.items():
            for dev in ids:
                per_zone[zone_of_device[(name, dev)]][name] += 1
        for block in c.memory:
            if len(block.numa) == 1:
                per_zone[next(iter(block.numa))][block.type] += block.size
            groups[block.numa][block.type] += block.size
    placement = format_placement(ZonePlacement(z, dict(a)) for z, a in per_zone.items())
    memory = format_memory_groups(MemoryGroup(n, dict(a)) for n, a in groups.items())
    return placement, memory


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_exporter_observes_exactly_the_simulated_allocation(
    kube: KubeClient, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    (profile,) = make_profiles(two_numa_profile(unique("fake"), policy="restricted", gpus=2))
    node = profile.name
    state = tmp_path / "s"
    with running(kube, [profile], state_dir=state) as ctl:
        create_pod(kube, pod("train", node, namespace=namespace, cpu="3", memory="2Gi", gpus=2))
        create_pod(kube, pod("web", node, namespace=namespace, cpu="500m", guaranteed=False))
        wait_for(phase_of(kube, namespace, "train", "Running"), what="train Running")
        wait_for(phase_of(kube, namespace, "web", "Running"), what="web Running")
        assert ctl.fleet is not None
        allocation = ctl.fleet.nodes[node].state.allocations()[f"{namespace}/train"]
        placement, memory = expected_annotations(profile, allocation)
        assert placement != "[]"

        exporter = subprocess.Popen(
            [
                sys.executable, "-c", "from exporter.cli import main; main()", "run",
                "--node-name", node,
                "--podresources-socket", str(socket_path(state, node)),
                "--sysfs-root", str(sysfs_root(state, node)),
                "--kubeconfig", str(control_plane.kubeconfig),
                "--metrics-bind-address", f"127.0.0.1:{_free_port()}",
                "--poll-interval", "0.2",
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            observed = wait_for(
                lambda: (
                    get_pod(kube, namespace, "train")["metadata"].get("annotations") or {}
                ).get(OBSERVED_PLACEMENT),
                timeout=60,
                what="observed placement",
            )
            annotations = get_pod(kube, namespace, "train")["metadata"]["annotations"]
            web = wait_for(
                lambda: (
                    (a := get_pod(kube, namespace, "web")["metadata"]["annotations"])
                    and OBSERVED_MEMORY_GROUPS in a
                    and a
                ),
                timeout=60,
                what="web observed",
            )
        finally:
            exporter.terminate()
            _, stderr = exporter.communicate(timeout=30)
        assert observed == placement, stderr[-2000:]
        assert annotations[OBSERVED_MEMORY_GROUPS] == memory
        # A Burstable pod holds nothing aligned: no placement, and "[]" memory groups.
        assert OBSERVED_PLACEMENT not in web
        assert web[OBSERVED_MEMORY_GROUPS] == "[]"
