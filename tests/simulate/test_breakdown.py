"""What an operator asks first, derived from a run's per-pod outcomes: the pods' fates, the
breakdowns by node shape and pod class (which add up to the run's figures), the pods no
node shape admits (and the kubelet's words on each), and every rejection's row."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.simulate.admissible import SHOWN_PODS, never_admissible
from fakenrt.simulate.breakdown import by_node_shape, by_pod_class, fates, rejection_rows
from fakenrt.simulate.engine import simulate
from fakenrt.simulate.scenario import Scenario
from fakenrt.simulate.strategies import BY_NAME, NAMES
from fakenrt.simulate.workload import items_from_entries
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

TAE_MESSAGE = "Resources cannot be allocated with Topology locality"


def _two_shapes() -> Scenario:
    snn = profiles(TWO_ZONES_SNN)[0]
    loose = replace(
        snn, name="be", kubelet=replace(snn.kubelet, topology_manager_policy="best-effort")
    )
    nodes = (replace(snn, name="snn-00"), replace(snn, name="snn-01"), loose)
    items = workload(
        (0, 900, pod("a", gpu=3)),
        (5, 1800, pod("b", gpu=3)),
        (10, 600, pod("c", gpu=2)),
        (20, 1200, pod("d", gpu=1)),
        (30, 3000, pod("e", gpu=4)),
        (40, 900, pod("f", gpu=8)),  # the best-effort node admits it across its two zones
        (50, 900, pod("g", gpu=9)),  # no node has 9 GPUs
    )
    return Scenario(
        nodes=nodes,
        workload=items,
        settings=scenario(nodes, items, duration=3600.0, requeue=True).settings,
        node_profiles={"snn-00": "snn", "snn-01": "snn", "be": "be"},
    )


@pytest.mark.parametrize("strategy", NAMES)
def test_breakdowns_add_up_to_the_run(strategy: str) -> None:
    run = _two_shapes()
    result = simulate(run, BY_NAME[strategy])
    f = result.figures
    shapes = by_node_shape(result, run)
    classes = by_pod_class(result, run)
    assert [s["node_shape"] for s in shapes] == ["snn", "be"]
    assert [(s["nodes"], s["gpus"]) for s in shapes] == [(2, 16), (1, 8)]
    assert sum(s["binds"] for s in shapes) == f["binds"]
    for key in ("topology_affinity_errors", "other_admission_failures"):
        assert sum(s[key] for s in shapes) == f[key] == sum(c[key] for c in classes)
    assert sum(s["gpu_hours"] for s in shapes) == pytest.approx(f["gpu_hours"], abs=2e-3)
    assert sum(c["gpu_hours"] for c in classes) == pytest.approx(f["gpu_hours"], abs=2e-3)
    fate = fates(result)
    assert fate["pods_arrived"] == len(run.workload) == sum(c["pods"] for c in classes)
    per_pod = (
        f["completed"]
        + f["running_at_end"]
        + fate["starting_at_end"]
        + fate["waiting_after_rejection"]
        + fate["never_placed"]
        + f["dropped"]
    )
    assert per_pod == fate["pods_arrived"]
    # the 9-GPU pod is never placed by any strategy
    nine = next(c for c in classes if c["pod_class"] == "9 GPU, 1 CPU, 1Gi")
    assert nine["never_placed"] == 1 and nine["first_bind_seconds_p50"] is None


def test_rejection_rows_name_pod_node_shape_class_time_and_message() -> None:
    run = _two_shapes()
    result = simulate(run, BY_NAME["numa-blind"])
    rows = rejection_rows(result, run)
    assert len(rows) == result.figures["topology_affinity_errors"] > 0
    for row in rows:
        assert row["strategy"] == "numa-blind"
        assert row["node_shape"] == run.profile_of(row["node"])
        assert row["pod"].startswith(row["workload_pod"])
        assert row["message"].endswith(TAE_MESSAGE) and row["reason"] == "TopologyAffinityError"
    assert [r["at_seconds"] for r in rows] == sorted(r["at_seconds"] for r in rows)


def test_never_admissible_names_each_node_shapes_refusal() -> None:
    run = _two_shapes()
    (found,) = never_admissible(run)  # the 8-GPU pod fits the best-effort node: not listed
    assert (found.pod_class, found.count, found.pods) == ("9 GPU, 1 CPU, 1Gi", 1, ("t/g",))
    assert [(r.node_shape, r.nodes, r.reason) for r in found.refusals] == [
        ("snn", 2, "TopologyAffinityError"),
        ("be", 1, "UnexpectedAdmissionError"),
    ]


def test_never_admissible_counts_every_pod_and_lists_a_few() -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = items_from_entries(
        [("e0", {"at": 0, "duration": 60, "count": 12, "pod": pod("big", cpu=6)})]
    )
    (found,) = never_admissible(scenario(nodes, items))
    assert found.count == 12 and len(found.pods) == SHOWN_PODS
    assert found.refusals[0].message == TAE_MESSAGE


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(1, 6), st.sampled_from(["1Gi", "40Gi", "70Gi"])),
        min_size=1,
        max_size=6,
    )
)
def test_a_shape_is_never_admissible_exactly_when_no_empty_node_admits_it(
    sizes: list[tuple[int, int, str]],
) -> None:
    from fakenrt.kubelet.node import NodeState

    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        *(
            (float(i), 60.0, pod(f"p{i}", gpu=g, cpu=c, memory=m))
            for i, (g, c, m) in enumerate(sizes)
        )
    )
    listed = {p for entry in never_admissible(scenario(nodes, items)) for p in entry.pods}
    for item in items:
        admitted = NodeState.from_profile(nodes[0]).admit(item.spec).admit
        assert (item.key in listed) == (not admitted)
