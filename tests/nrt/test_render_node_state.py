"""render_nrt fed by the kubelet simulator's NodeState (the controller's wiring)."""

from __future__ import annotations

import pytest

from fakenrt.kubelet.node import NodeState
from fakenrt.nrt import render_nrt
from fakenrt.podspec import pod_from_manifest
from fakenrt.profiles import example_profile, load_profiles


def _pod(name: str, cpu: str, gpus: int) -> dict[str, object]:
    resources = {"cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": name},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": resources, "limits": resources}}]
        },
    }


@pytest.mark.parametrize("example", ["dgx", "shapes"])
def test_fresh_node_state_renders_like_the_profile_alone(example: str) -> None:
    for profile in load_profiles(example_profile(example)):
        state = NodeState.from_profile(profile)
        assert render_nrt(profile, usage=state.zone_usage()) == render_nrt(profile, usage=None)


def test_available_drops_by_what_an_admitted_pod_holds() -> None:
    profile = load_profiles(example_profile("dgx"))[1]  # small: 2 zones x 4 CPUs, 2 GPUs each
    state = NodeState.from_profile(profile)
    result = state.admit(pod_from_manifest(_pod("p1", "3", 2)))
    assert result.admit
    nrt = render_nrt(profile, usage=state.zone_usage(), pods=state.allocations().keys())
    available = {
        (z["name"], r["name"]): r["available"] for z in nrt["zones"] for r in z["resources"]
    }
    # single-numa-node: everything on one zone
    held = [zone for zone in ("node-0", "node-1") if available[(zone, "cpu")] == "1"]
    assert len(held) == 1
    assert available[(held[0], "nvidia.com/gpu")] == "0"
    assert available[(held[0], "memory")] == str(63 * 2**30)
    other = "node-1" if held[0] == "node-0" else "node-0"
    assert (available[(other, "cpu")], available[(other, "nvidia.com/gpu")]) == ("4", "2")
