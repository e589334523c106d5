"""THE differential test: the publisher's read + compute path, run against a profile node
served as a real-kubelet node (machine files, KubeletConfiguration, podresources over a
real unix socket answering with the kubelet simulator's allocations), publishes exactly
the NRT the fake controller publishes for the same state (``render_loaded``).

Scenarios: every example profile node with the example pods, and the oracle's fixed and
random scenarios (:mod:`fakenrt.realnode.scenarios`); after every admission, then after
releasing the admitted pods one by one. Every disagreement fails, naming the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.podresources_client import PodResourcesClient
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt.loaded import node_allocations, render_loaded
from fakenrt.nrtpub.compute import compute_nrt
from fakenrt.nrtpub.inputs import observe
from fakenrt.podspec import PodSpec
from fakenrt.profiles import load_profiles
from fakenrt.profiles.model import DeviceSet, NodeProfile
from fakenrt.realnode.scenarios import fixed_scenarios, random_scenarios, scenario_inputs
from tests.nrtpub.realnode_files import served_node

EXAMPLES = Path(__file__).resolve().parents[2] / "fakenrt" / "examples"


def _example_cases() -> Iterator[Any]:
    from fakenrt.commands.podfiles import read_pods

    pod_files = sorted((EXAMPLES / "pods").glob("*.yaml"))
    for path in sorted((EXAMPLES / "profiles").glob("*.yaml")):
        for profile in load_profiles(path):
            for pod_file in pod_files:
                pods = list(read_pods([str(pod_file)]))
                yield pytest.param(profile, pods, id=f"{path.stem}-{profile.name}-{pod_file.stem}")


def _scenario_cases() -> Iterator[Any]:
    for scenario in (*fixed_scenarios(), *random_scenarios(50, seed=7)):
        profile, pods = scenario_inputs(scenario)
        yield pytest.param(profile, pods, id=scenario.name)


def expected_view(state: NodeState) -> dict[str, Any]:
    """What the fake controller publishes, as a podresources reader can know it: the
    capacity of a device resource counts only healthy devices (podresources never shows
    unhealthy ones; docs/nrt.md)."""
    expected = render_loaded(state)
    unhealthy = {
        (zone.id, name): len(dset.unhealthy)
        for zone in state.profile.zones
        for name, dset in zone.devices.items()
    }
    for index, zone in enumerate(expected["zones"]):
        zone_id = state.profile.zone_ids[index]
        kept = []
        for resource in zone["resources"]:
            missing = unhealthy.get((zone_id, resource["name"]), 0)
            if missing:
                resource = {**resource, "capacity": str(int(resource["capacity"]) - missing)}
            if resource["capacity"] != "0" or not resource["name"].startswith("hugepages-"):
                kept.append(resource)
        zone["resources"] = [r for r in kept if not _empty_device(r, zone_id, state.profile)]
    return expected


def _empty_device(resource: dict[str, str], zone_id: int, profile: NodeProfile) -> bool:
    """A device resource whose every device in the zone is unhealthy: podresources shows
    none of them, so the zone does not list the resource."""
    (zone,) = [z for z in profile.zones if z.id == zone_id]
    dset = zone.devices.get(resource["name"], DeviceSet(ids=()))
    return bool(dset.ids) and not dset.healthy


def _published(served: Any, client: PodResourcesClient, node: str) -> dict[str, Any]:
    obs = observe(client=client, sysfs_root=served.sysfs_root, kubelet_config=served.kubelet_config)
    return compute_nrt(node, obs)


def run_differential(profile: NodeProfile, pods: list[PodSpec]) -> list[str]:
    """Admit then release ``pods``; per step, the disagreement (empty when none)."""
    state = NodeState.from_profile(profile)
    failures: list[str] = []
    with served_node(profile) as served:
        client = PodResourcesClient(served.socket)
        try:

            def check(step: str) -> None:
                served.serve(node_allocations(state))
                got = _published(served, client, profile.name)
                want = expected_view(state)
                if got != want:
                    failures.append(f"{profile.name}: after {step}:\n got  {got}\n want {want}")

            check("start")
            admitted = []
            for pod in pods:
                node_pod = dataclasses.replace(pod, node_name=profile.name)
                result = state.admit(node_pod)
                if result.admit:
                    admitted.append(node_pod.key)
                check(f"pod {pod.key} ({'admitted' if result.admit else result.reason})")
            for key in admitted:
                state.release(key)
                check(f"releasing {key}")
        finally:
            client.close()
    return failures


@pytest.mark.parametrize(("profile", "pods"), [*_example_cases(), *_scenario_cases()])
def test_publisher_agrees_with_the_fake_controller(
    profile: NodeProfile, pods: list[PodSpec]
) -> None:
    failures = run_differential(profile, pods)
    assert not failures, "\n".join(failures[:3])
