"""Which cells a scorecard runs, and picking one by its id."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schedulers import registry
from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.e2e.scenarios import SCENARIOS
from tests.e2e.scenarios.churn import CI_SECONDS, FULL_SECONDS
from tests.e2e.variants import VARIANTS
from tests.scorecard import matrix
from tests.scorecard.assertions import required_cells
from tests.scorecard.cli import _parser, plan

ADAPTERS = (RECONSTRUCTION, STALE_NRT)
SCENARIO_LIST = list(SCENARIOS.values())


def test_full_is_every_adapter_scenario_and_variant_with_h_at_full_length() -> None:
    cells = matrix.full(ADAPTERS, SCENARIO_LIST)
    assert len(cells) == len({c.id for c in cells}) == 2 * 11 * 4
    assert {c.variant for c in cells} == set(VARIANTS)
    (h,) = {c.scenario.parameters["churn_seconds"] for c in cells if c.scenario.id == "h"}
    assert h == FULL_SECONDS


def test_ci_is_every_default_variant_plus_what_the_assertions_need_once() -> None:
    kai = replace(RECONSTRUCTION, scheduler="kai", mode="reconstruction")
    adapters = (*ADAPTERS, kai)
    cells = matrix.with_required(matrix.defaults(adapters, SCENARIO_LIST), required_cells(adapters))
    ids = [c.id for c in cells]
    assert len(ids) == len(set(ids)) == 3 * 11 + 1  # + KAI's g without exporter
    assert "kai-reconstruction/g/no-exporter-lag0" in ids
    assert all(c.default_variant for c in cells if c.id != "kai-reconstruction/g/no-exporter-lag0")
    assert {c.scenario.parameters.get("churn_seconds") for c in cells} == {None, CI_SECONDS}


def test_a_cell_id_picks_the_cell() -> None:
    cell = matrix.parse_cell("reference-stale-nrt/d/no-exporter-lag0", ADAPTERS)
    assert (cell.scheduler, cell.scenario.id, cell.variant.id) == (
        STALE_NRT,
        "d",
        "no-exporter-lag0",
    )
    assert not cell.default_variant
    full = matrix.parse_cell("reference-reconstruction/h/exporter-lag5", ADAPTERS, full_h=True)
    assert full.scenario.parameters["churn_seconds"] == FULL_SECONDS and full.default_variant


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param("reference/d", "expected <scheduler adapter>", id="two-parts"),
        pytest.param("nosuch/d/exporter-lag0", "unknown adapter 'nosuch'", id="adapter"),
        pytest.param("reference-reconstruction/z/exporter-lag0", "unknown scenario", id="scenario"),
        pytest.param("reference-reconstruction/d/exporter-lag9", "expected one of", id="variant"),
    ],
)
def test_a_bad_cell_id_names_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        matrix.parse_cell(text, ADAPTERS)


def test_the_ci_plan_is_every_schedulers_default_mode_plus_what_the_assertions_need() -> None:
    """Against the registered adapters: the CI part runs each scheduler's default mode on
    every scenario; of the other modes only the cells an assertion needs (the reference
    scheduler's stale mode on d); the full matrix every mode."""
    ci = plan(_parser().parse_args([]))
    defaults_ = {a.id for a in registry.adapters() if a.default}
    assert {c.scheduler.id for c in ci} == defaults_ | {"reference-stale-nrt"}
    assert [c.id for c in ci if not c.scheduler.default] == ["reference-stale-nrt/d/exporter-lag5"]
    assert len(ci) == len(defaults_) * 11 + 1 + sum(
        1 for a in registry.adapters() if a.default and a.scheduler == "kai"
    )
    full = plan(_parser().parse_args(["--matrix", "full"]))
    assert len(full) == len(registry.adapters()) * 11 * 4


def test_the_dra_scenarios_are_not_applicable_to_a_scheduler_allocating_no_claims() -> None:
    """i, j, k (their pods use ResourceClaims) are cells of every adapter, applicable only
    to one that allocates claims (``allocates_claims``: here the stock kube-scheduler)."""
    kube = next(a for a in registry.adapters() if a.scheduler == "kube-scheduler")
    assert kube.allocates_claims
    cells = matrix.defaults((RECONSTRUCTION, kube), SCENARIO_LIST)
    not_applicable = {c.id: c.not_applicable for c in cells if c.not_applicable}
    assert sorted(not_applicable) == [
        f"reference-reconstruction/{s}/exporter-lag0" for s in ("i", "j", "k")
    ]
    assert all("does not allocate ResourceClaims" in r for r in not_applicable.values())
    assert [c.id for c in cells if c.scheduler is kube and c.scenario.needs_claims] == [
        f"kube-scheduler/{s}/exporter-lag0" for s in ("i", "j", "k")
    ]


def test_on_kind_the_dra_scenarios_are_left_out_and_a_dra_cell_is_refused() -> None:
    kind = plan(_parser().parse_args(["--kind"]))
    assert kind and not any(c.scenario.needs_claims for c in kind)
    with pytest.raises(ValueError, match="local control plane only"):
        plan(_parser().parse_args(["--kind", "--cell", "kube-scheduler/i/exporter-lag0"]))


def test_picked_schedulers_are_judged_as_a_whole_matrix_of_theirs() -> None:
    from tests.scorecard.cli import judging

    judged, complete = judging(_parser().parse_args(["--scheduler", "reference,kai"]))
    assert complete
    assert {a.scheduler for a in judged} == {"reference", "kai"}
    assert {a.id for a in judged} >= {"reference-stale-nrt", "kai-trust-nrt"}  # every mode
    _, complete = judging(_parser().parse_args(["--scheduler", "kai", "--scenario", "g"]))
    assert not complete
    everyone, complete = judging(_parser().parse_args([]))
    assert complete and {a.scheduler for a in everyone} >= {"volcano", "koordinator"}
