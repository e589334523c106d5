"""Scenario h (tests/e2e/scenarios/churn.py): churn - pods arriving and finishing under NRT
lag, for the CI length of the churn."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.outcome import Outcome
from tests.e2e.scenarios import H, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario]
RunFn = Callable[[Scenario], Outcome]


def test_h_churn_under_nrt_lag(run_scenario: RunFn) -> None:
    run_scenario(H)
