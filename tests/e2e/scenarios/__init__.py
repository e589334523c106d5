"""The e2e scenarios a-k as data (tests/e2e/scenarios/model.py): the pytest suite asserts
their checks, the scorecard (tests/scorecard) reports them for every scheduler."""

from __future__ import annotations

from tests.e2e.scenarios.alignment import A, B, C, E
from tests.e2e.scenarios.churn import FULL_SECONDS, H, churn
from tests.e2e.scenarios.dra import I, J, K
from tests.e2e.scenarios.fragmented import G
from tests.e2e.scenarios.lag import D
from tests.e2e.scenarios.model import Scenario
from tests.e2e.scenarios.restart import F

__all__ = [
    "SCENARIOS",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I",
    "J",
    "K",
    "Scenario",
    "full_length",
]

#: Every scenario by id, h at its CI length.
SCENARIOS: dict[str, Scenario] = {s.id: s for s in (A, B, C, D, E, F, G, H, I, J, K)}


def full_length(scenario: Scenario) -> Scenario:
    """The scenario as the full scorecard runs it (h's churn for FULL_SECONDS)."""
    return churn(FULL_SECONDS) if scenario.id == "h" else scenario
