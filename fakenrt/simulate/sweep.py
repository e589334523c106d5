"""What to run: every strategy on the scenario, and optionally every strategy at every
value of one swept setting. Pure: :func:`plan` lists the runs; a runner executes them (in
this process or a pool) and :func:`collect` puts the results back in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exporter.validation import quoted
from fakenrt.simulate.limits import MAX_SWEEP_VALUES, LimitError
from fakenrt.simulate.metrics import StrategyResult
from fakenrt.simulate.results import SweepPoint
from fakenrt.simulate.scenario import SWEEPABLE, Scenario, ScenarioError
from fakenrt.simulate.strategies import BY_NAME
from fakenrt.simulate.workload import WorkloadError, seconds


@dataclass(frozen=True)
class Sweep:
    parameter: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class Run:
    """One simulation: a scenario under one strategy; ``point`` is the sweep value's index
    (None for the main runs)."""

    scenario: Scenario
    strategy: str
    point: int | None = None


def parse_sweep(text: str) -> Sweep:
    """``name=v1,v2,...`` with a sweepable setting and durations (``5``, ``30s``, ``1m``)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or name not in SWEEPABLE:
        raise ScenarioError(
            f"--sweep {quoted(text)}: expected NAME=V1,V2,... with NAME one of "
            f"{', '.join(SWEEPABLE)}"
        )
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not parts:
        raise ScenarioError(f"--sweep {quoted(text)}: no values")
    if len(parts) > MAX_SWEEP_VALUES:
        raise LimitError(f"--sweep: at most {MAX_SWEEP_VALUES} values (got {len(parts)})")
    try:
        values = tuple(seconds(p, f"--sweep {name}", allow_zero=name != "period") for p in parts)
    except WorkloadError as exc:
        raise ScenarioError(str(exc)) from None
    return Sweep(parameter=name, values=values)


def plan(scenario: Scenario, strategies: Sequence[str], sweep: Sweep | None) -> list[Run]:
    runs = [Run(scenario, name) for name in strategies]
    if sweep is not None:
        for i, value in enumerate(sweep.values):
            swept = replace(scenario, settings=scenario.settings.swept(sweep.parameter, value))
            runs += [Run(swept, name, i) for name in strategies]
    for run in runs:
        if run.strategy not in BY_NAME:
            raise ScenarioError(f"unknown strategy {run.strategy!r}")
    return runs


def collect(
    runs: Sequence[Run], results: Sequence[StrategyResult], sweep: Sweep | None
) -> tuple[list[StrategyResult], list[SweepPoint]]:
    main = [r for run, r in zip(runs, results, strict=True) if run.point is None]
    points: list[SweepPoint] = []
    if sweep is not None:
        for i, value in enumerate(sweep.values):
            at = tuple(r for run, r in zip(runs, results, strict=True) if run.point == i)
            points.append(SweepPoint(value=value, results=at))
    return main, points
