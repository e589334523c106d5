"""Scenario g (tests/e2e/scenarios/fragmented.py): a fleet fragmented by pods bound without
any scheduler, then GPU pods that fit only where the fragmentation allows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.outcome import Outcome
from tests.e2e.scenarios import G, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario]
RunFn = Callable[[Scenario], Outcome]


def test_g_fragmented_fleet(run_scenario: RunFn) -> None:
    run_scenario(G)
