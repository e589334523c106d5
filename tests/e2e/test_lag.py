"""Scenario d (tests/e2e/scenarios/lag.py): NRT lag of 5 s +- 3 s on a workload where the
lag matters. Every mode of each scheduler runs it: a lag-safe one must see no
TopologyAffinityError and run every pod (its claim); for a mode known to trust a stale NRT
the harness must catch it (TopologyAffinityErrors > 0)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schedulers.adapter import Adapter
from tests.e2e.outcome import Outcome, figures
from tests.e2e.scenarios import D, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario, pytest.mark.every_mode]
RunFn = Callable[[Scenario], Outcome]


def test_d_nrt_lag_on_unevenly_used_nodes(run_scenario: RunFn, scheduler: Adapter) -> None:
    result = figures(run_scenario(D).workload_pods())
    assert result.submitted == len(D.workload)
    if scheduler.trusts_stale_nrt:
        assert result.topology_affinity_errors > 0, "the harness did not catch the stale NRT"
