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
from tests.e2e.allocations import recorded_allocations
from tests.e2e.cluster import (
    double_allocations,
    expected_available,
    observation_mismatches,
    prediction_mismatches,
)
from tests.e2e.outcome import (
    figures,
)

GIB = 1 << 30


def _profile() -> NodeProfile:
    (profile,) = parse_profiles(
        {
            "nodes": [
                {
                    "name": "n1",
                    "kubelet": {"topologyManagerPolicy": "single-numa-node"},
                    "shape": {
                        "numaNodes": 2,
                        "coresPerNumaNode": 4,
                        "threadsPerCore": 1,
                        "memoryPerNumaNode": "8Gi",
                        "devicesPerNumaNode": {"nvidia.com/gpu": 2},
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


def test_prediction_differing_from_observation_is_flagged() -> None:
    observed = _observed("node-0", cpu="2")
    same = _pod("s", extra={OBSERVED_PLACEMENT: observed, PREDICTED_PLACEMENT: observed})
    other = _pod(
        "o", extra={OBSERVED_PLACEMENT: observed, PREDICTED_PLACEMENT: _observed("node-1", cpu="2")}
    )
    unpredicted = _pod("u", extra={OBSERVED_PLACEMENT: observed})
    assert prediction_mismatches([same, unpredicted]) == []
    assert [m.split(":")[0] for m in prediction_mismatches([other])] == ["o"]


def _groups(*groups: tuple[list[str], int]) -> str:
    entries = [{"memoryNodes": n, "amount": {"memory": str(size)}} for n, size in groups]
    return json.dumps(entries, separators=(",", ":"))


@pytest.mark.parametrize(
    ("predicted_groups", "flagged"),
    [
        pytest.param(_groups((["node-0", "node-1"], 12 * GIB)), False, id="same-group"),
        pytest.param(_groups((["node-0", "node-1"], 11 * GIB)), True, id="other-amount"),
        pytest.param(_groups((["node-1", "node-2"], 12 * GIB)), True, id="other-nodes"),
        pytest.param(_groups(), True, id="group-missing"),
        pytest.param(None, False, id="groups-not-predicted"),
    ],
)
def test_multi_numa_memory_is_compared(predicted_groups: str | None, flagged: bool) -> None:
    """A pod whose memory is a group over two zones: the placement carries its CPUs only,
    the groups its memory; both pairs must agree, memory included."""
    observed = _observed("node-0", cpu="2")
    annotations = {
        OBSERVED_PLACEMENT: observed,
        OBSERVED_MEMORY_GROUPS: _groups((["node-0", "node-1"], 12 * GIB)),
        PREDICTED_PLACEMENT: observed,
    }
    if predicted_groups is not None:
        annotations[PREDICTED_MEMORY_GROUPS] = predicted_groups
    problems = prediction_mismatches([_pod("g", extra=annotations)])
    assert bool(problems) is flagged, problems


def test_memory_spread_over_zones_in_the_predicted_placement_is_flagged() -> None:
    """The old prediction form - a group's memory spread over the zones of the placement -
    is a disagreement with the observed form."""
    spread = json.dumps(
        [
            {"zone": "node-0", "amount": {"cpu": "2", "memory": str(8 * GIB)}},
            {"zone": "node-1", "amount": {"memory": str(4 * GIB)}},
        ],
        separators=(",", ":"),
    )
    pod = _pod(
        "s",
        extra={
            OBSERVED_PLACEMENT: _observed("node-0", cpu="2"),
            OBSERVED_MEMORY_GROUPS: _groups((["node-0", "node-1"], 12 * GIB)),
            PREDICTED_PLACEMENT: spread,
        },
    )
    assert [m.split(":")[0] for m in prediction_mismatches([pod])] == ["s"]


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
