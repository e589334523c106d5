"""Scenarios a, b, c and e (tests/e2e/scenarios/alignment.py): where the scheduler under
test places NUMA-aligned pods on empty nodes. The harness's invariants are asserted for
every scheduler, the scenario's checks for the claims its adapter makes (``run_scenario``,
tests/e2e/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.outcome import Outcome
from tests.e2e.scenarios import A, B, C, E, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario]
RunFn = Callable[[Scenario], Outcome]


def test_a_gpu_and_cpu_pods_run_only_where_alignable(run_scenario: RunFn) -> None:
    """Two single-numa-node nodes with 4 GPUs each: "split" has 2 per zone, "lopsided" all 4
    in zone 0. Every pod runs inside one zone; a pod of 3 GPUs runs only on "lopsided"
    although both nodes have the GPUs; a pod of 5 CPUs (4 per zone) fits no zone and stays
    Pending unbound, reported with the scheduler's NUMA reason - never sent to a kubelet
    that would refuse it."""
    run_scenario(A)


def test_b_three_three_two_on_two_four_core_zones(run_scenario: RunFn) -> None:
    """Two 4-core zones, Guaranteed pods of 3, 3 and 2 cores: whole-node accounting would
    admit all three (8 cores), the zones hold only two. Exactly two run; the third stays
    Pending with the scheduler's reason - never bound, never rejected by the kubelet."""
    run_scenario(B)


def test_c_full_node_gpu_pods_span_both_zones_on_restricted_nodes(run_scenario: RunFn) -> None:
    """restricted, two zones of 8 cores, 8Gi and 4 GPUs: a pod of 8 GPUs, 12 cores and
    12Gi needs both zones for every resource, which restricted admits (every provider's
    narrowest width is the same mask). One per node runs, on both zones, its memory a
    Memory Manager group over both; the exporter observes exactly that."""
    run_scenario(C)


def test_e_observed_equals_allocated(run_scenario: RunFn) -> None:
    """A mixed workload on a single-numa-node and a restricted node: everything runs, and
    every Running pod's observed annotations equal the simulator's allocation (CPUs, GPUs,
    memory, nothing for a Burstable pod) - the harness's own check, on every scenario."""
    run_scenario(E)
