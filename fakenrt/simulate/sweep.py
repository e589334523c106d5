"""What to run: every strategy on the scenario, optionally every strategy at every value
of one swept setting, each over one or more seeds. Pure: :func:`plan` lists the runs; a
runner executes them (in this process, a pool, or a cluster) and :func:`collect` puts the
results back in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exporter.validation import quoted
from fakenrt.simulate.generator import generate
from fakenrt.simulate.limits import (
    MAX_RUNS,
    MAX_SEED,
    MAX_SEEDS,
    MAX_SWEEP_VALUES,
    LimitError,
    check_range,
)
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
    (None for the main runs), ``seed`` the index of its seed (0: the scenario's)."""

    scenario: Scenario
    strategy: str
    point: int | None = None
    seed: int = 0


def seed_values(scenario: Scenario, count: int) -> tuple[int, ...]:
    """The seeds of ``count`` runs of every point: the scenario's seed and the next ones."""
    check_range(count, name="--seeds", low=1, high=MAX_SEEDS)
    first = scenario.settings.seed
    if first + count - 1 > MAX_SEED:
        raise LimitError(f"--seeds {count} from seed {first} goes beyond the largest seed")
    return tuple(range(first, first + count))


def reseeded(scenario: Scenario, seed: int) -> Scenario:
    """``scenario`` with another seed: the NRT jitter's, and a generated workload made
    again from it (a trace stays the same pods)."""
    if seed == scenario.settings.seed:
        return scenario
    settings = replace(scenario.settings, seed=seed)
    if scenario.generator is None:
        return replace(scenario, settings=settings)
    return replace(scenario, settings=settings, workload=generate(scenario.generator, seed=seed))


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


def plan(
    scenario: Scenario, strategies: Sequence[str], sweep: Sweep | None, *, seeds: int = 1
) -> list[Run]:
    """Every run: each strategy at the scenario's settings and at each swept value, each
    over ``seeds`` seeds."""
    for name in strategies:
        if name not in BY_NAME:
            raise ScenarioError(f"unknown strategy {name!r}")
    values = seed_values(scenario, seeds)
    points: list[tuple[int | None, Scenario]] = [(None, scenario)]
    if sweep is not None:
        points += [
            (i, replace(scenario, settings=scenario.settings.swept(sweep.parameter, v)))
            for i, v in enumerate(sweep.values)
        ]
    total = len(points) * len(values) * len(strategies)
    if total > MAX_RUNS:
        raise LimitError(
            f"{len(strategies)} strategies x {len(points)} points x {len(values)} seeds is "
            f"{total} runs; the limit is {MAX_RUNS}"
        )
    runs = []
    for k, seed in enumerate(values):
        for point, base in points:
            at_seed = reseeded(base, seed)
            runs += [Run(at_seed, name, point, k) for name in strategies]
    return runs


def collect(
    runs: Sequence[Run], results: Sequence[StrategyResult], sweep: Sweep | None
) -> tuple[list[StrategyResult], list[list[StrategyResult]], list[SweepPoint]]:
    """The main runs of the first seed, the main runs of every seed, and every swept
    value's runs per seed - each in strategy order."""
    pairs = list(zip(runs, results, strict=True))
    seeds = max((run.seed for run in runs), default=0) + 1

    def at(point: int | None, seed: int) -> list[StrategyResult]:
        return [r for run, r in pairs if run.point == point and run.seed == seed]

    main_seeds = [at(None, k) for k in range(seeds)]
    points: list[SweepPoint] = []
    if sweep is not None:
        for i, value in enumerate(sweep.values):
            points.append(
                SweepPoint(value=value, seeds=tuple(tuple(at(i, k)) for k in range(seeds)))
            )
    return main_seeds[0], main_seeds, points
