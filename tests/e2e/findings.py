"""The line a scenario prints about the scheduler under test, and its record.

Every scenario of the pytest suite reports what it found: one line of figures, a line per
finding (what the scheduler did that its adapter does not claim to avoid) and, when
``$NUMA_TESTKIT_FINDINGS`` names a file, the scenario's scorecard record
(tests/scorecard/records.py) appended to it as one JSON line. What the adapter claims and
the harness's invariants are asserted by the tests themselves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedulers.adapter import Adapter
from tests.e2e.outcome import Outcome, figures
from tests.e2e.scenarios.model import Scenario
from tests.scorecard.matrix import Cell
from tests.scorecard.records import all_findings, record

#: Where the records go (JSON lines), when set.
FINDINGS_ENV = "NUMA_TESTKIT_FINDINGS"


def scenario_record(scheduler: Adapter, scenario: Scenario, outcome: Outcome) -> dict[str, Any]:
    """The scorecard record of a pytest scenario (its variant: the outcome's)."""
    cell = Cell(scheduler, scenario, outcome.variant)
    return record(cell, outcome, command=f"make scorecard-ci CELL={cell.id}")


def line(scheduler: Adapter, outcome: Outcome, rec: Mapping[str, Any]) -> str:
    """``[e2e <scenario>] <figures> [misaligned=<n>] predictions=<agreed>/<predicted>``,
    then a ``findings:`` line per finding."""
    result = figures(outcome.workload_pods())
    predicted = rec.get("predicted_pods") or 0
    agreement = f"{rec.get('exact_predictions')}/{predicted}" if predicted else "none predicted"
    misaligned = rec.get("misaligned")
    dra = f" misaligned={misaligned}" if misaligned is not None else ""
    text = (
        f"[e2e {outcome.scenario}] {result.line(scheduler.id)}{dra} predictions={agreement} "
        f"settled in {outcome.duration_s} s"
    )
    return text + "".join(f"\n  findings: {f}" for f in all_findings(rec))


def report(scheduler: Adapter, scenario: Scenario, outcome: Outcome) -> str:
    """The scenario's line; its record appended to ``$NUMA_TESTKIT_FINDINGS`` when set."""
    rec = scenario_record(scheduler, scenario, outcome)
    target = os.environ.get(FINDINGS_ENV)
    if target:
        with Path(target).open("a") as out:
            out.write(json.dumps(rec, sort_keys=False) + "\n")
    return line(scheduler, outcome, rec)
