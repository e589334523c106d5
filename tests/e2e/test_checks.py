"""The scenarios' checks on pods as the API returns them: they must flag what is wrong."""

from __future__ import annotations

import json
from typing import Any

import pytest

from exporter.annotations import (
    OBSERVED_MEMORY_GROUPS,
    OBSERVED_PLACEMENT,
    PREDICTED_MEMORY_GROUPS,
    PREDICTED_PLACEMENT,
)
from fakenrt.controller.pods import ALLOCATION_ANNOTATION
from fakenrt.profiles import NodeProfile, parse_profiles
from schedulers.reference import RECONSTRUCTION
from tests.e2e.allocations import recorded_allocations
from tests.e2e.claims import claim_problems, without_devices
from tests.e2e.invariants import (
    HELD_TWICE_S,
    double_allocations,
    expected_available,
    lasting_doubles,
    observation_mismatches,
)
from tests.e2e.outcome import Outcome, figures, prediction_agreement
from tests.e2e.scenarios import K
from tests.e2e.variants import VARIANTS

GIB = 1 << 30


def _profile(name: str = "n1", devices: str = "devicesPerNumaNode") -> NodeProfile:
    """A 2-zone node with ``nvidia.com/gpu`` devices per zone (``devices``:
    ``devicesPerNumaNode``), or DRA GPUs (``draDevicesPerNumaNode``: then ``gpu.nvidia.com``)."""
    resource = "nvidia.com/gpu" if devices == "devicesPerNumaNode" else "gpu.nvidia.com"
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": name,
                    "kubelet": {"topologyManagerPolicy": "single-numa-node"},
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 4,
                        "threadsPerCore": 1,
                        "memoryPerNumaNode": "8Gi",
                        devices: {resource: 2},
                    },
                }
            ]
        },
        source="test",
    )
    return profile


def _gpu(profile: NodeProfile, zone: int, index: int) -> str:
    return profile.zones[zone].devices["nvidia.com/gpu"].ids[index]


def _pod(
    name: str,
    *,
    phase: str = "Running",
    cpus: str = "",
    gpus: tuple[str, ...] = (),
    memory_numa: str | None = None,
    extra: dict[str, str] | None = None,
    node: str | None = "n1",
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main"}
    if cpus:
        container["cpus"] = cpus
    if gpus:
        container["devices"] = {"nvidia.com/gpu": list(gpus)}
    if memory_numa is not None:
        container["memory"] = [{"type": "memory", "size": GIB, "numa": memory_numa}]
    allocation = json.dumps({"v": 1, "uid": f"uid-{name}", "containers": [container]})
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": {ALLOCATION_ANNOTATION: allocation, **(extra or {})},
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def _observed(zone: str, **amount: str) -> str:
    return json.dumps([{"zone": zone, "amount": amount}], separators=(",", ":"))


def test_observation_matching_the_allocation_passes_and_any_difference_is_flagged() -> None:
    profile = _profile()
    gpu = _gpu(profile, 1, 0)
    right = _observed("node-1", cpu="2", memory=str(GIB), **{"nvidia.com/gpu": "1"})
    groups = json.dumps([{"memoryNodes": ["node-1"], "amount": {"memory": str(GIB)}}])
    good = _pod(
        "p",
        cpus="4-5",
        gpus=(gpu,),
        memory_numa="1",
        extra={OBSERVED_PLACEMENT: right, OBSERVED_MEMORY_GROUPS: groups.replace(" ", "")},
    )
    assert observation_mismatches([good], {"n1": profile}, recorded_allocations([good])) == []
    wrong_zone = json.loads(json.dumps(good))
    wrong_zone["metadata"]["annotations"][OBSERVED_PLACEMENT] = right.replace("node-1", "node-0")
    assert observation_mismatches([wrong_zone], {"n1": profile}, recorded_allocations([good])) != []
    missing = json.loads(json.dumps(good))
    del missing["metadata"]["annotations"][OBSERVED_MEMORY_GROUPS]
    assert observation_mismatches([missing], {"n1": profile}, recorded_allocations([good])) != []
    assert observation_mismatches([good], {"n1": profile}, {}) == [
        "p: Running without a recorded allocation"
    ]


def test_double_allocation_is_flagged_only_among_pods_holding_resources() -> None:
    profile = _profile()
    gpu = _gpu(profile, 0, 0)
    a = _pod("a", cpus="0-1", gpus=(gpu,))
    b = _pod("b", cpus="1", phase="Running")
    c = _pod("c", cpus="2", gpus=(gpu,))
    finished = _pod("d", cpus="0-1", gpus=(gpu,), phase="Succeeded")
    listed = [a, b, c, finished]
    assert len(double_allocations([a, b, c], recorded_allocations(listed))) == 2  # CPU 1, GPU
    assert double_allocations([a, finished], recorded_allocations(listed)) == []


def test_a_double_hold_counts_once_it_lasts() -> None:
    # seen at 10.0: a suspect, not yet a problem
    suspects, lasting = lasting_doubles({}, ["n1 cpu 3: held by a and b"], 10.0)
    assert suspects == {"n1 cpu 3: held by a and b": 10.0} and lasting == set()
    # the finished pod's status landed: gone from the next listing, forgotten
    assert lasting_doubles(suspects, [], 10.25) == ({}, set())
    # still both holding it HELD_TWICE_S later: held twice; a new one starts its own clock
    later = 10.0 + HELD_TWICE_S
    suspects, lasting = lasting_doubles(suspects, ["n1 cpu 3: held by a and b", "n1 g: x"], later)
    assert lasting == {"n1 cpu 3: held by a and b"}
    assert suspects["n1 g: x"] == later
    # gone for one listing, back again: its clock starts over
    suspects, _ = lasting_doubles(suspects, [], later + 0.25)
    assert lasting_doubles(suspects, ["n1 cpu 3: held by a and b"], later + 0.5)[1] == set()


def _outcome(pods: list[dict[str, Any]], *profiles: NodeProfile, scenario: str = "t") -> Outcome:
    """The workload ``pods`` on ``profiles`` (default: n1), as a scenario ends."""
    return Outcome(
        scenario=scenario,
        variant=VARIANTS[0],
        pods={p["metadata"]["name"]: p for p in pods},
        workload=tuple(p["metadata"]["name"] for p in pods),
        prebound=(),
        allocations=recorded_allocations(pods),
        profiles=profiles or (_profile(),),
    )


def _agreement(*pods: dict[str, Any]) -> tuple[int, int, int, list[str]]:
    """(predicted, zones agree, exact, names of the mismatches) over ``pods`` on n1."""
    got = prediction_agreement(_outcome(list(pods)))
    return got.predicted, got.zones_agree, got.exact, [m.split(" ")[0] for m in got.mismatches]


def test_prediction_is_compared_with_the_kubelets_allocation() -> None:
    """Predicted zones are judged against what the kubelet allocated (CPUs 0-1 are zone 0),
    never against the exporter; a pod without a prediction is not compared."""
    right = _observed("node-0", cpu="2")
    same = _pod("s", cpus="0-1", extra={PREDICTED_PLACEMENT: right})
    other = _pod("o", cpus="0-1", extra={PREDICTED_PLACEMENT: _observed("node-1", cpu="2")})
    more = _pod("m", cpus="0-1", extra={PREDICTED_PLACEMENT: _observed("node-0", cpu="3")})
    unpredicted = _pod("u", cpus="0-1")
    assert _agreement(same, unpredicted) == (1, 1, 1, [])
    assert _agreement(other) == (1, 0, 0, ["o"])
    assert _agreement(more) == (1, 1, 0, ["m"])  # same zones, other amounts


def test_unreadable_prediction_is_a_mismatch() -> None:
    assert _agreement(_pod("b", cpus="0", extra={PREDICTED_PLACEMENT: "{"})) == (1, 0, 0, ["b:"])


def _groups(*groups: tuple[list[str], int]) -> str:
    entries = [{"memoryNodes": n, "amount": {"memory": str(size)}} for n, size in groups]
    return json.dumps(entries, separators=(",", ":"))


@pytest.mark.parametrize(
    ("predicted_groups", "flagged"),
    [
        pytest.param(_groups((["node-0", "node-1"], GIB)), False, id="same-group"),
        pytest.param(_groups((["node-0", "node-1"], 2 * GIB)), True, id="other-amount"),
        pytest.param(_groups((["node-1"], GIB)), True, id="other-nodes"),
        pytest.param(_groups(), True, id="group-missing"),
        pytest.param(None, False, id="groups-not-predicted"),
    ],
)
def test_multi_numa_memory_is_compared(predicted_groups: str | None, flagged: bool) -> None:
    """A pod whose memory is a group over two zones: the placement carries its CPUs only,
    the groups its memory; both must agree with the allocation, memory included."""
    annotations = {PREDICTED_PLACEMENT: _observed("node-0", cpu="2")}
    if predicted_groups is not None:
        annotations[PREDICTED_MEMORY_GROUPS] = predicted_groups
    pod = _pod("g", cpus="0-1", memory_numa="0,1", extra=annotations)
    predicted, zones, exact, _ = _agreement(pod)
    assert (predicted, zones) == (1, 1)
    assert (exact == 0) is flagged


def test_memory_spread_over_zones_in_the_predicted_placement_is_flagged() -> None:
    """A group's memory spread over the zones of the predicted placement (what KAI writes)
    disagrees with the allocation, whose per-zone memory counts single-NUMA blocks only:
    the zones of CPUs and devices agree, the prediction is not exact."""
    spread = json.dumps(
        [
            {"zone": "node-0", "amount": {"cpu": "2", "memory": str(GIB // 2)}},
            {"zone": "node-1", "amount": {"memory": str(GIB // 2)}},
        ],
        separators=(",", ":"),
    )
    pod = _pod("s", cpus="0-1", memory_numa="0,1", extra={PREDICTED_PLACEMENT: spread})
    assert _agreement(pod) == (1, 1, 0, ["s"])


def test_expected_available_subtracts_holding_pods_only() -> None:
    profile = _profile()
    pods = [
        _pod("a", cpus="0-1", gpus=(_gpu(profile, 0, 0),)),
        _pod("done", cpus="4-7", phase="Succeeded"),
    ]
    assert expected_available(profile, pods, recorded_allocations(pods)) == {
        "node-0": {"cpu": 2, "nvidia.com/gpu": 1},
        "node-1": {"cpu": 4, "nvidia.com/gpu": 2},
    }


@pytest.mark.parametrize(
    ("phase", "reason", "node", "counted"),
    [
        pytest.param("Running", None, "n1", "running", id="running"),
        pytest.param("Failed", "TopologyAffinityError", "n1", "errors", id="rejected"),
        pytest.param("Failed", "OutOfcpu", "n1", "other", id="other-failure"),
        pytest.param("Pending", None, None, "pending", id="unbound"),
    ],
)
def test_figures(phase: str, reason: str | None, node: str | None, counted: str) -> None:
    pod = _pod("p", phase=phase, node=node)
    if reason:
        pod["status"]["reason"] = reason
    result = figures([pod])
    assert result.submitted == 1
    assert result.bound == (node is not None)
    assert result.running == (counted == "running")
    assert result.topology_affinity_errors == (counted == "errors")
    assert result.pending == (counted == "pending")


def _asking(name: str, node: str, *, gpus: str, phase: str = "Running") -> dict[str, Any]:
    pod = _pod(name, node=node, phase=phase)
    limits = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus}
    pod["spec"]["containers"] = [{"name": "main", "resources": {"limits": limits}}]
    return pod


def test_a_pod_running_where_its_device_resource_does_not_exist_is_flagged() -> None:
    """A device-plugin GPU pod on a node that has no such resource runs without it (the
    kubelet drops what the node lacks): flagged under the scenario's claim. On a node that
    has the resource, or not running, or asking for none: not flagged."""
    pods = [
        _asking("lost", "dra", gpus="1"),
        _asking("fine", "n1", gpus="1"),
        _asking("pending", "dra", gpus="1", phase="Pending"),
        _asking("none", "dra", gpus="0"),
    ]
    outcome = _outcome(pods, _profile(), _profile("dra", "draDevicesPerNumaNode"), scenario="k")
    flagged = without_devices(outcome)
    assert flagged == [
        "lost: runs on dra without nvidia.com/gpu: it asks for 1, the node has none "
        "(the kubelet admits it without the device)"
    ]
    assert flagged[0] in claim_problems(RECONSTRUCTION, K, outcome)[K.claim.value]
