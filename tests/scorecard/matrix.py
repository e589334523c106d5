"""Which cells a scorecard runs: scheduler adapter x scenario x variant. Pure.

* the **full** matrix: every adapter, every scenario (h at its full length), every
  variant (with and without the exporter, NRT lag 0 and 5 s +- 3 s);
* the **CI** part: every adapter on every scenario in the scenario's default variant,
  plus the cells the assertions need (tests/scorecard/assertions.py).

A cell's id, ``<adapter>/<scenario>/<variant>`` (e.g. ``kai-reconstruction/g/no-exporter-
lag0``), picks it again on the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schedulers.adapter import Adapter
from tests.e2e.scenarios import SCENARIOS, Scenario, full_length
from tests.e2e.variants import VARIANTS, Variant, parse_variant


@dataclass(frozen=True)
class Cell:
    """One scheduler adapter on one scenario in one variant."""

    scheduler: Adapter
    scenario: Scenario
    variant: Variant

    @property
    def id(self) -> str:
        return f"{self.scheduler.id}/{self.scenario.id}/{self.variant.id}"

    @property
    def default_variant(self) -> bool:
        return self.variant == self.scenario.default_variant

    @property
    def not_applicable(self) -> str | None:
        """Why the scheduler cannot be asked the scenario's question (a scenario whose pods
        use ResourceClaims, a scheduler that allocates none); None: the cell runs."""
        return self.scenario.not_applicable(self.scheduler)


def _unique(cells: Iterable[Cell]) -> list[Cell]:
    return list({c.id: c for c in cells}.values())


def full(adapters: Sequence[Adapter], scenarios: Sequence[Scenario]) -> list[Cell]:
    """Every adapter x scenario (at full length) x variant, scenario by scenario."""
    return [Cell(a, full_length(s), v) for s in scenarios for a in adapters for v in VARIANTS]


def defaults(adapters: Sequence[Adapter], scenarios: Sequence[Scenario]) -> list[Cell]:
    """Every adapter x scenario in the scenario's default variant."""
    return [Cell(a, s, s.default_variant) for s in scenarios for a in adapters]


def parse_cell(text: str, adapters: Sequence[Adapter], *, full_h: bool = False) -> Cell:
    """A cell from its id; ValueError naming what is unknown and what there is."""
    parts = text.split("/")
    if len(parts) != 3:
        raise ValueError(f"cell {text!r}: expected <scheduler adapter>/<scenario>/<variant>")
    adapter_id, scenario_id, variant_id = parts
    by_id = {a.id: a for a in adapters}
    if adapter_id not in by_id:
        raise ValueError(
            f"cell {text!r}: unknown adapter {adapter_id!r}; known: {', '.join(by_id)}"
        )
    if scenario_id not in SCENARIOS:
        raise ValueError(
            f"cell {text!r}: unknown scenario {scenario_id!r}; known: {', '.join(SCENARIOS)}"
        )
    scenario = SCENARIOS[scenario_id]
    return Cell(
        by_id[adapter_id],
        full_length(scenario) if full_h else scenario,
        parse_variant(variant_id),
    )


def with_required(cells: Iterable[Cell], required: Iterable[Cell]) -> list[Cell]:
    """``cells`` followed by the ``required`` ones they lack."""
    return _unique([*cells, *required])
