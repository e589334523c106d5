"""Cells run at once, except those of a scheduler that acts on the whole cluster (or of a
fixed scheduler name), which run one after another - started first."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from schedulers.reference import RECONSTRUCTION, STALE_NRT
from tests.e2e.scenarios import SCENARIOS
from tests.scorecard import runner
from tests.scorecard.matrix import Cell, defaults

#: Two modes of one scheduler that acts on the whole cluster, like KAI's.
WIDE_A = replace(RECONSTRUCTION, scheduler="wide", mode="a", one_per_cluster=True)
WIDE_B = replace(WIDE_A, mode="b", default=False)
FIXED = replace(STALE_NRT, scheduler="fixed", mode="", fixed_name=True)


def test_exclusion_groups() -> None:
    b = SCENARIOS["b"]
    assert runner.exclusion(Cell(WIDE_A, b, b.default_variant)) == "scheduler wide"
    assert runner.exclusion(Cell(WIDE_B, b, b.default_variant)) == "scheduler wide"
    assert runner.exclusion(Cell(FIXED, b, b.default_variant)) == "adapter fixed"
    assert runner.exclusion(Cell(RECONSTRUCTION, b, b.default_variant)) is None


def test_the_longest_chain_starts_first_then_the_longest_cells() -> None:
    cells = defaults([RECONSTRUCTION, WIDE_A, WIDE_B, FIXED], list(SCENARIOS.values()))
    order = [cells[i] for i in runner.dispatch_order(cells)]
    groups = [runner.exclusion(c) for c in order]
    assert groups[:16] == ["scheduler wide"] * 16  # 16 cells: the longest chain
    assert groups[16:24] == ["adapter fixed"] * 8
    free = [c.scenario.id for c in order[24:]]
    assert free[:2] == ["h", "d"]


def test_a_group_never_runs_two_cells_at_once_and_the_others_fill_the_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running: dict[str | None, int] = {}
    most: dict[str | None, int] = {}
    lock = threading.Lock()

    def fake_run_cell(cell: Cell, **_: Any) -> dict[str, Any]:
        group = runner.exclusion(cell)
        with lock:
            running[group] = running.get(group, 0) + 1
            most[group] = max(most.get(group, 0), running[group])
            most["all"] = max(most.get("all", 0), sum(running.values()))
        time.sleep(0.02)
        with lock:
            running[group] -= 1
        return {"scheduler": cell.scheduler.id, "scenario": cell.scenario.id}

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    cells = defaults([RECONSTRUCTION, STALE_NRT, WIDE_A, WIDE_B], list(SCENARIOS.values()))
    unused: Any = None  # the fake run_cell talks to no cluster
    one = [runner.Cluster(kube=unused, backend=unused)]
    records = runner.run_cells(cells, clusters=one, rerun=lambda c: "", jobs=4)
    assert [(r["scheduler"], r["scenario"]) for r in records] == [
        (c.scheduler.id, c.scenario.id) for c in cells
    ]
    assert most["scheduler wide"] == 1
    assert most["all"] == 4


def test_with_two_clusters_a_group_runs_once_on_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """One KAI-like cell per cluster at a time: two clusters halve its chain."""
    seen: list[tuple[str, int]] = []
    live: dict[int, int] = {}
    most: dict[int, int] = {}
    lock = threading.Lock()

    def fake_run_cell(cell: Cell, *, kube: Any, **_: Any) -> dict[str, Any]:
        with lock:
            live[kube] = live.get(kube, 0) + 1
            most[kube] = max(most.get(kube, 0), live[kube])
            seen.append((cell.id, kube))
        time.sleep(0.02)
        with lock:
            live[kube] -= 1
        return {"scheduler": cell.scheduler.id}

    monkeypatch.setattr(runner, "run_cell", fake_run_cell)
    cells = [
        c for c in defaults([WIDE_A, WIDE_B], list(SCENARIOS.values())) if not c.not_applicable
    ]
    unused: Any = None
    kubes: list[Any] = [0, 1]  # the fake run_cell tells the clusters apart by their client
    two = [runner.Cluster(kube=k, backend=unused) for k in kubes]
    runner.run_cells(cells, clusters=two, rerun=lambda c: "", jobs=4)
    assert most == {0: 1, 1: 1}
    assert len(seen) == 16


def test_a_cell_not_applicable_runs_nothing_and_says_why() -> None:
    """A DRA scenario for a scheduler allocating no ResourceClaims: recorded as not
    applicable without a deployment (no cluster is touched), shown as n/a, no harness
    problem."""
    cell = Cell(RECONSTRUCTION, SCENARIOS["i"], SCENARIOS["i"].default_variant)
    unused: Any = None  # run_cell must not use them
    rec = runner.run_cell(cell, kube=unused, backend=unused, rerun=lambda c: f"rerun {c.id}")
    assert "does not allocate ResourceClaims" in rec["not_applicable"]
    assert rec["harness_problems"] == {} and "submitted" not in rec
    assert runner.one_line(rec).startswith("not applicable: reference-reconstruction")
    assert runner.text_table([rec]).splitlines()[1].split()[-1] == "n/a"
    assert runner.exclusion(replace(cell, scheduler=WIDE_A)) is None
