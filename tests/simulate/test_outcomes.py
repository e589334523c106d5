"""Per-pod outcomes of a run (fakenrt.simulate.outcomes): each workload pod's fate at the
horizon and every rejection, on small hand-checked scenarios."""

from __future__ import annotations

import pytest

from fakenrt.simulate.engine import simulate
from fakenrt.simulate.outcomes import COMPLETED, DROPPED, PENDING, RUNNING, STARTING
from fakenrt.simulate.strategies import BY_NAME
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

HOUR = 3600.0
TAE_MESSAGE = "Pod was rejected: Resources cannot be allocated with Topology locality"


def test_rejections_name_pod_node_time_and_the_kubelets_message() -> None:
    # numa-blind binds c (2 GPUs) while a and b hold 3 GPUs of each zone: the kubelet
    # rejects it at 10 s and the workload re-creates it (c-r1, c-r2) until maxRequeues.
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, 100, pod("a", gpu=3)), (5, HOUR, pod("b", gpu=3)), (10, HOUR, pod("c", gpu=2))
    )
    run = scenario(nodes, items, duration=600.0, requeue=True, max_requeues=2)
    outcomes = simulate(run, BY_NAME["numa-blind"]).outcomes
    a, b, c = outcomes.pods
    assert (a.pod, a.fate, a.finished, a.node) == ("t/a", COMPLETED, 100.0, "n1")
    assert (b.fate, b.started, b.attempts) == (RUNNING, 5.0, 1)
    assert b.gpu_seconds == pytest.approx(3 * (600 - 5))
    assert (c.fate, c.attempts, c.binds, c.started) == (DROPPED, 3, 3, None)
    assert (a.zones, b.zones, c.zones) == ((0,), (1,), ())
    assert [(r.item, r.pod, r.node, r.at, r.reason, r.message) for r in outcomes.rejections] == [
        (2, "t/c", "n1", 10.0, "TopologyAffinityError", TAE_MESSAGE),
        (2, "t/c-r1", "n1", 11.0, "TopologyAffinityError", TAE_MESSAGE),
        (2, "t/c-r2", "n1", 12.0, "TopologyAffinityError", TAE_MESSAGE),
    ]
    assert outcomes.count(DROPPED) == 1 and outcomes.never_placed == 0


def test_a_pod_no_node_can_take_is_pending_and_never_placed() -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload((0, HOUR, pod("huge", gpu=8)), (0, 60, pod("small", gpu=1)))
    outcomes = simulate(scenario(nodes, items, duration=600.0), BY_NAME["oracle"]).outcomes
    huge, small = outcomes.pods
    assert (huge.fate, huge.binds, huge.never_placed, huge.node) == (PENDING, 0, True, "")
    assert (small.fate, small.first_bound, small.gpu_seconds) == (COMPLETED, 0.0, 60.0)
    assert outcomes.rejections == ()
    assert outcomes.never_placed == 1


def test_a_pod_admitted_but_not_started_at_the_horizon_is_starting() -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload((0, HOUR, pod("slow", gpu=1)), (200, HOUR, pod("late", gpu=1)))
    run = scenario(nodes, items, duration=120.0, start_delay=300.0)
    outcomes = simulate(run, BY_NAME["oracle"]).outcomes
    # "late" arrives after the horizon: it is not a pod of this run.
    (slow,) = outcomes.pods
    assert (slow.fate, slow.binds, slow.started, slow.gpu_seconds) == (STARTING, 1, None, 0.0)


def test_gpu_seconds_of_the_pods_add_up_to_the_runs_gpu_hours() -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, 1800, pod("a", gpu=4)), (0, 3600, pod("b", gpu=2)), (10, 9000, pod("c", gpu=2))
    )
    result = simulate(scenario(nodes, items, duration=7200.0), BY_NAME["oracle"])
    total = sum(p.gpu_seconds for p in result.outcomes.pods)
    assert total / 3600 == pytest.approx(result.figures["gpu_hours"], abs=1e-3)
    assert [p.fate for p in result.outcomes.pods] == [COMPLETED, COMPLETED, RUNNING]
