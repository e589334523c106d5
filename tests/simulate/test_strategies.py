"""Each strategy on small hand-checked scenarios (tables), and the rule that the oracle
and reconstruct-observed never see a TopologyAffinityError without lag (hypothesis)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakenrt.simulate.engine import Simulation, simulate
from fakenrt.simulate.limits import LimitError
from fakenrt.simulate.strategies import BY_NAME, NAMES
from tests.simulate.builders import TWO_ZONES_SNN, pod, profiles, scenario, workload

HOUR = 3600.0

# Seed 000's example: pods of 3, 3 and 2 cores on two 4-core zones (single-numa-node), all
# arriving together. The kubelet can run two of them; the third finds one free core per
# zone. A plugin with the in-cycle reservation (or an exact view) places two and keeps the
# third pending; numa-blind binds all three (8 cores fit the node) and the kubelet rejects
# the third; nrt-trust, without the reservation, predicts zone 0 for every pod of the cycle
# and also sends the third to the kubelet.
THREE_THREE_TWO = {
    "numa-blind": (3, 1, 0),
    "nrt-trust": (3, 1, 0),
    "nrt-reserve": (2, 0, 1),
    "reconstruct-predicted": (2, 0, 1),
    "reconstruct-observed": (2, 0, 1),
    "oracle": (2, 0, 1),
}

# NRT lag across cycles: 3 GPUs at t=0 (zone 0 keeps 1), 3 GPUs at t=5 (zone 1 keeps 1),
# then 2 GPUs at t=10. The node has 2 GPUs free in total but no zone has 2: the kubelet
# must reject the last pod. With NRT published 30 s after each change, the NRT strategies
# still see a free zone and send it (TopologyAffinityError); the reconstruction sees the
# predicted placements of the first two and keeps it pending, like the oracle.
LAGGED = {
    "numa-blind": (3, 1, 0),
    "nrt-trust": (3, 1, 0),
    "nrt-reserve": (3, 1, 0),
    "reconstruct-predicted": (2, 0, 1),
    "reconstruct-observed": (2, 0, 1),
    "oracle": (2, 0, 1),
}


def outcome(figures: Any) -> tuple[int, int, int]:
    return (figures["binds"], figures["topology_affinity_errors"], figures["pending_at_end"])


@pytest.mark.parametrize(
    ("strategy", "expected"), list(THREE_THREE_TWO.items()), ids=list(THREE_THREE_TWO)
)
def test_three_three_two_cores(*, strategy: str, expected: tuple[int, int, int]) -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, HOUR, pod("a", cpu=3)), (0, HOUR, pod("b", cpu=3)), (0, HOUR, pod("c", cpu=2))
    )
    result = simulate(scenario(nodes, items, duration=600.0), BY_NAME[strategy])
    assert outcome(result.figures) == expected
    assert result.figures["other_admission_failures"] == 0


@pytest.mark.parametrize(("strategy", "expected"), list(LAGGED.items()), ids=list(LAGGED))
def test_stale_nrt_across_cycles(*, strategy: str, expected: tuple[int, int, int]) -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, HOUR, pod("a", gpu=3)), (5, HOUR, pod("b", gpu=3)), (10, HOUR, pod("c", gpu=2))
    )
    run = scenario(nodes, items, duration=600.0, nrt_delay=30.0, exporter_delay=2.0)
    result = simulate(run, BY_NAME[strategy])
    assert outcome(result.figures) == expected
    if BY_NAME[strategy].reads_lagged_nrt:
        assert result.figures["stale_nrt_read_share"] > 0


@pytest.mark.parametrize(
    ("max_requeues", "tae", "requeued", "dropped", "running"),
    [
        # c is rejected while a holds zone 0 and re-created at once (the next cycle binds
        # it again, a second later) until a finishes at 100 s; then c runs.
        pytest.param(100, 90, 90, 0, 2, id="recreated-until-it-runs"),
        pytest.param(2, 3, 2, 1, 1, id="given-up-after-max-requeues"),
    ],
)
def test_rejected_pod_is_recreated_and_counted(
    *, max_requeues: int, tae: int, requeued: int, dropped: int, running: int
) -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload(
        (0, 100, pod("a", gpu=3)), (5, HOUR, pod("b", gpu=3)), (10, HOUR, pod("c", gpu=2))
    )
    run = scenario(nodes, items, duration=600.0, requeue=True, max_requeues=max_requeues)
    f = simulate(run, BY_NAME["numa-blind"]).figures
    assert (f["topology_affinity_errors"], f["requeued"], f["dropped"]) == (tae, requeued, dropped)
    assert f["completed"] == 1 and f["running_at_end"] == running


def test_gpu_hours_and_completion() -> None:
    nodes = profiles(TWO_ZONES_SNN)
    items = workload((0, 1800, pod("a", gpu=4)), (0, 3600, pod("b", gpu=2)))
    result = simulate(scenario(nodes, items, duration=7200.0), BY_NAME["oracle"])
    f = result.figures
    # Scheduled in the cycle at t=0: 4 GPUs for 30 min + 2 GPUs for 60 min = 4 GPU-hours.
    assert f["completed"] == 2
    assert f["gpu_hours"] == pytest.approx(4.0)
    assert f["gpu_utilization"] == pytest.approx(4.0 / (8 * 2))
    assert f["pending_seconds_p50"] == 0


RESTRICTED_AND_SNN = """
nodes:
- name: r1
  kubelet: {topologyManagerPolicy: restricted}
  shape: {numaNodes: 2, coresPerNumaNode: 8, threadsPerCore: 1, memoryPerNumaNode: 64Gi,
          devicesPerNumaNode: {nvidia.com/gpu: 4}}
- name: s1
  kubelet: {topologyManagerPolicy: single-numa-node}
  shape: {numaNodes: 2, coresPerNumaNode: 8, threadsPerCore: 1, memoryPerNumaNode: 64Gi,
          devicesPerNumaNode: {nvidia.com/gpu: 4}}
"""


@settings(max_examples=25, deadline=None)
@given(
    arrivals=st.lists(
        st.tuples(
            st.integers(0, 600),  # arrival
            st.integers(30, 1200),  # run time
            st.integers(1, 4),  # GPUs
            st.integers(1, 6),  # cores
        ),
        min_size=1,
        max_size=14,
    ),
    strategy=st.sampled_from(["oracle", "reconstruct-observed"]),
)
def test_no_topology_affinity_error_without_lag(
    *, arrivals: list[tuple[int, int, int, int]], strategy: str
) -> None:
    nodes = profiles(RESTRICTED_AND_SNN)
    items = workload(
        *(
            (float(at), float(run), pod(f"p{i}", gpu=gpu, cpu=cpu))
            for i, (at, run, gpu, cpu) in enumerate(arrivals)
        )
    )
    result = simulate(scenario(nodes, items, duration=2400.0), BY_NAME[strategy])
    assert result.figures["topology_affinity_errors"] == 0
    assert result.figures["other_admission_failures"] == 0


def test_every_strategy_is_a_configuration_of_the_one_scheduler() -> None:
    assert set(NAMES) == {
        "numa-blind",
        "nrt-trust",
        "nrt-reserve",
        "reconstruct-predicted",
        "reconstruct-observed",
        "oracle",
    }


def test_a_run_stops_with_an_error_past_the_attempt_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from fakenrt.simulate import engine

    monkeypatch.setattr(engine, "MAX_ATTEMPTS", 3)
    nodes = profiles(TWO_ZONES_SNN)
    items = workload((0, HOUR, pod("huge", gpu=8)))  # no zone has 8 GPUs: never placed
    with pytest.raises(LimitError, match="more than 3 failed scheduling attempts"):
        simulate(scenario(nodes, items, duration=HOUR), BY_NAME["oracle"])


def test_parked_attempts_count_in_the_figures_but_not_against_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pod that fits nowhere is tried every 10 s for an hour (~360 attempts); once its
    backoff is at the maximum it is parked and its attempts cost one check per batch, so a
    fleet-scale run is not stopped by attempts that cost nothing."""
    from fakenrt.simulate import engine

    monkeypatch.setattr(engine, "MAX_ATTEMPTS", 50)
    nodes = profiles(TWO_ZONES_SNN)
    items = workload((0, HOUR, pod("huge", gpu=8)))
    result = simulate(scenario(nodes, items, duration=HOUR), BY_NAME["oracle"])
    assert result.figures["unschedulable_attempts"] > 300


@settings(max_examples=15, deadline=None)
@given(
    arrivals=st.lists(
        st.tuples(st.integers(0, 300), st.integers(30, 900), st.integers(0, 8), st.integers(1, 8)),
        min_size=1,
        max_size=16,
    ),
    strategy=st.sampled_from(NAMES),
)
def test_shortcuts_change_nothing(
    *, arrivals: list[tuple[int, int, int, int]], strategy: str
) -> None:
    nodes = profiles(RESTRICTED_AND_SNN)
    items = workload(
        *(
            (float(at), float(run), pod(f"p{i}", gpu=gpu, cpu=cpu))
            for i, (at, run, gpu, cpu) in enumerate(arrivals)
        )
    )
    run = scenario(nodes, items, duration=1800.0, nrt_delay=20.0, nrt_jitter=10.0, requeue=True)
    fast = Simulation(scenario=run, strategy=BY_NAME[strategy]).run()
    slow = Simulation(scenario=run, strategy=BY_NAME[strategy], shortcuts=False).run()
    assert fast == slow


@pytest.mark.parametrize("strategy", NAMES)
def test_long_waits_at_the_longest_backoff_change_nothing(strategy: str) -> None:
    """Pods that wait minutes retry at the backoff's longest delay, many at the same
    moments, while their shapes fit nowhere (the engine then counts their attempts in
    bulk) - interleaved with binds of other shapes and completions that make room."""
    nodes = profiles(RESTRICTED_AND_SNN)
    items = workload(
        *((float(i % 3), 600.0 + 60 * i, pod(f"big{i}", gpu=3, cpu=2)) for i in range(8)),
        *((float(5 * i), 240.0, pod(f"small{i}", gpu=1, cpu=1)) for i in range(12)),
        *((30.0 + i, 900.0, pod(f"cpu{i}", cpu=6)) for i in range(4)),
    )
    run = scenario(nodes, items, duration=3600.0, nrt_delay=20.0, nrt_jitter=10.0, requeue=True)
    fast = Simulation(scenario=run, strategy=BY_NAME[strategy]).run()
    slow = Simulation(scenario=run, strategy=BY_NAME[strategy], shortcuts=False).run()
    assert fast == slow
    assert fast.figures["unschedulable_attempts"] > 100
