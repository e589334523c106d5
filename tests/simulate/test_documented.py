"""What the README and docs/simulate.md say about the bundled scenarios is what the code
prints: the documented outputs are compared with runs, and the README's figures with the
run's. (A change that moves a number fails here, and the docs are updated with it.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.simulate.numbers import fmt

ROOT = Path(__file__).resolve().parents[2]
MARKER = (
    "<!-- output of `fakenrt simulate --no-progress`, checked by "
    "tests/simulate/test_documented.py -->"
)


@pytest.fixture(scope="module")
def bundled() -> tuple[str, dict[str, Any]]:
    """The bundled scenario's terminal output and JSON (one run of every strategy)."""
    done = CliRunner().invoke(main, ["simulate", "--no-progress", "--json", "--jobs", "2"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    from fakenrt.simulate.report import table

    return table(doc), doc


def test_the_documented_output_is_what_the_bundled_scenario_prints(
    bundled: tuple[str, dict[str, Any]],
) -> None:
    text = (ROOT / "docs" / "simulate.md").read_text()
    found = re.search(re.escape(MARKER) + r"\n```\n(.*?)```\n", text, flags=re.S)
    assert found is not None, "the marked output block is missing from docs/simulate.md"
    assert found.group(1) == bundled[0]


DRA_COMMAND = [
    "simulate",
    "--scenario",
    str(ROOT / "fakenrt" / "examples" / "simulate" / "dra.yaml"),
    "--no-progress",
    "--jobs",
    "2",
]
DRA_MARKER = (
    "<!-- output of `fakenrt simulate --scenario fakenrt/examples/simulate/dra.yaml "
    "--no-progress`, checked by tests/simulate/test_documented.py -->"
)


def test_the_documented_dra_example_is_what_it_prints() -> None:
    done = CliRunner().invoke(main, DRA_COMMAND)
    assert done.exit_code == 0, done.output
    text = (ROOT / "docs" / "simulate.md").read_text()
    found = re.search(re.escape(DRA_MARKER) + r"\n```\n(.*?)```\n", text, flags=re.S)
    assert found is not None, "the marked DRA output block is missing from docs/simulate.md"
    assert found.group(1) == done.output


def test_the_readmes_figures_are_the_runs(bundled: tuple[str, dict[str, Any]]) -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    s = bundled[1]["strategies"]
    trust = s["nrt-trust"]
    exact = ("reconstruct-predicted", "reconstruct-observed", "oracle")
    claim = (
        f"on it `nrt-trust` has {fmt(trust['topology_affinity_errors_per_1000_binds'], 'per1k')} "
        f"`TopologyAffinityError`s per 1,000 binds and loses "
        f"{fmt(trust['gpu_hours_lost'], 'hours')} GPU-hours against the best strategy, the "
        "reconstruction and the oracle have none and lose at most "
        f"{fmt(max(s[name]['gpu_hours_lost'] for name in exact), 'hours')}"
    )
    assert claim in readme
    for name in exact:
        assert s[name]["topology_affinity_errors"] == 0
        assert s[name]["gpu_hours_lost"] < trust["gpu_hours_lost"]
