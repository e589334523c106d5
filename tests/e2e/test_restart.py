"""Scenario f (tests/e2e/scenarios/restart.py): the controller SIGKILLed and restarted
mid-burst. No CPU or GPU is ever held twice (checked at every poll), and every node's NRT
and every pod's observed annotations converge to what the rebuilt simulator holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.outcome import Outcome
from tests.e2e.scenarios import F, Scenario

pytestmark = [pytest.mark.controlplane, pytest.mark.scenario]
RunFn = Callable[[Scenario], Outcome]


def test_f_controller_killed_and_restarted_mid_burst(run_scenario: RunFn) -> None:
    run_scenario(F)
