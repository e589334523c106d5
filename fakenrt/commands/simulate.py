"""``fakenrt simulate``: a whole GPU cluster in one process, in simulated time; every
scheduling strategy on the same workload; a table, ``--json`` and an HTML ``--report``.
See docs/simulate.md."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from fakenrt.commands.params import DAY, Duration, Number, OutputFile
from fakenrt.profiles import ProfileError
from fakenrt.scheduler.args import ArgsError, parse_args
from fakenrt.scheduler.scoring import STRATEGIES as SCORES
from fakenrt.simulate.generator import MIXES
from fakenrt.simulate.limits import (
    MAX_ARRIVALS_PER_HOUR,
    MAX_LAG_SECONDS,
    MAX_REQUEUES,
    MAX_SECONDS,
    MIN_PERIOD,
    LimitError,
)
from fakenrt.simulate.loading import Overrides, bundled_scenario, load_scenario, read_bounded
from fakenrt.simulate.report import html, table
from fakenrt.simulate.results import document, to_json
from fakenrt.simulate.runner import execute
from fakenrt.simulate.scenario import SWEEPABLE, ScenarioError
from fakenrt.simulate.strategies import NAMES
from fakenrt.simulate.sweep import Sweep, collect, parse_sweep, plan
from fakenrt.simulate.workload import WorkloadError

INPUT_ERRORS = (ScenarioError, WorkloadError, LimitError, ProfileError, ArgsError)


class _Bar:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = False

    def __call__(self, done: int, total: int, fraction: float) -> None:
        if not self.enabled:
            return
        share = (done + fraction) / total if total else 1.0
        filled = int(share * 30)
        sys.stderr.write(f"\rsimulating [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} runs")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


@click.command("simulate")
@click.option(
    "--scenario",
    "scenario_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Scenario file (YAML; docs/simulate.md). Default: the bundled one - 16 GPU nodes, "
    "a day of training and inference pods, NRT published 20-60 s after each change.",
)
@click.option(
    "--profiles",
    "profiles_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Node profiles to use instead of the scenario's (one node per profile).",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Workload trace (YAML, or JSONL when it ends in .jsonl) instead of the scenario's.",
)
@click.option(
    "--mix",
    type=click.Choice(tuple(MIXES)),
    help="Generate the workload with this named mix instead.",
)
@click.option(
    "--arrivals-per-hour",
    type=Number(minimum=0, maximum=MAX_ARRIVALS_PER_HOUR),
    help="Arrival rate of the generated workload.",
)
@click.option(
    "--duration",
    type=Duration(positive=True, maximum=MAX_SECONDS),
    help="Simulated time (30s, 2h, ...); also the generated workload's span.",
)
@click.option(
    "--nrt-delay",
    type=Duration(maximum=MAX_LAG_SECONDS),
    help="NRT publication delay after a change.",
)
@click.option(
    "--nrt-jitter",
    type=Duration(maximum=MAX_LAG_SECONDS),
    help="Extra NRT delay, uniform in [0, jitter].",
)
@click.option(
    "--exporter-delay",
    type=Duration(maximum=MAX_LAG_SECONDS),
    help="Delay from a change to the observed annotations.",
)
@click.option("--period", type=Duration(minimum=MIN_PERIOD, maximum=DAY), help="Scheduling period.")
@click.option(
    "--requeue/--no-requeue",
    default=None,
    help="Re-create a pod the kubelet rejected (as its controller would).",
)
@click.option(
    "--max-requeues",
    type=click.IntRange(min=0, max=MAX_REQUEUES),
    help="Re-creations per pod at most.",
)
@click.option("--seed", type=int, help="Seed of the generator and of the NRT jitter.")
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    type=click.Choice(NAMES),
    help="Strategies to run (repeatable; default: all).",
)
@click.option(
    "--score",
    type=click.Choice(tuple(SCORES)),
    help="The scheduler's scoring strategy (default: the scenario's, LeastNUMANodes).",
)
@click.option(
    "--sweep",
    "sweep_text",
    help=f"Also run every strategy at each value of one setting: NAME=V1,V2,... with NAME "
    f"one of {', '.join(SWEEPABLE)} (values in seconds or with units).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
@click.option(
    "--report",
    "report_path",
    type=OutputFile(),
    help="Write a self-contained HTML report (charts inline; opens offline).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=64),
    default=min(os.cpu_count() or 1, 4),
    show_default=True,
    help="Runs simulated in parallel (worker processes); results do not depend on it.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal).",
)
def simulate(**options: Any) -> None:
    """Simulate a GPU cluster in one process and compare scheduling strategies on the same
    workload: how many pods would the kubelet reject, and how many GPU-hours would be lost,
    under each way of scheduling?"""
    try:
        run(**options)
    except INPUT_ERRORS as exc:
        raise click.ClickException(str(exc)) from None


def run(
    *,
    scenario_path: Path | None,
    profiles_path: Path | None,
    trace_path: Path | None,
    mix: str | None,
    arrivals_per_hour: float | None,
    duration: float | None,
    nrt_delay: float | None,
    nrt_jitter: float | None,
    exporter_delay: float | None,
    period: float | None,
    requeue: bool | None,
    max_requeues: int | None,
    seed: int | None,
    strategies: tuple[str, ...],
    score: str | None,
    sweep_text: str | None,
    as_json: bool,
    report_path: Path | None,
    jobs: int,
    progress: bool | None,
) -> None:
    if trace_path is not None and (mix is not None or arrivals_per_hour is not None):
        raise click.UsageError("--trace cannot be combined with --mix / --arrivals-per-hour")
    path = scenario_path or bundled_scenario()
    settings: dict[str, Any] = {
        name: value
        for name, value in (
            ("nrt_delay", nrt_delay),
            ("nrt_jitter", nrt_jitter),
            ("exporter_delay", exporter_delay),
            ("period", period),
            ("requeue", requeue),
            ("max_requeues", max_requeues),
            ("seed", seed),
            ("duration", duration),
        )
        if value is not None
    }
    generate: dict[str, Any] = {}
    if mix is not None:
        generate["mix"] = mix
    if arrivals_per_hour is not None:
        generate["arrivalsPerHour"] = arrivals_per_hour
    if duration is not None and trace_path is None:
        generate["duration"] = duration
    overrides = Overrides(
        profiles=profiles_path, trace=trace_path, generate=generate, settings=settings
    )
    scenario = load_scenario(path, overrides)
    if score is not None:
        plugin = parse_args({"scoringStrategy": score}, source="--score")
        plugin = replace(scenario.settings.plugin, scoring_strategy=plugin.scoring_strategy)
        scenario = replace(scenario, settings=replace(scenario.settings, plugin=plugin))
    sweep: Sweep | None = None
    if sweep_text is not None:
        try:
            sweep = parse_sweep(sweep_text)
        except (ScenarioError, LimitError) as exc:
            raise click.BadParameter(
                str(exc).removeprefix("--sweep "), param_hint="--sweep"
            ) from None
    names = list(strategies) if strategies else list(NAMES)
    runs = plan(scenario, names, sweep)
    bar = _Bar(sys.stderr.isatty() if progress is None else progress)
    try:
        results = execute(runs, jobs=jobs, progress=bar)
    finally:
        bar.close()
    main, points = collect(runs, results, sweep)
    doc = document(
        scenario,
        main,
        sweep_parameter=sweep.parameter if sweep else None,
        sweep=points,
    )
    if report_path is not None:
        text = read_bounded(path, what="scenario")
        try:
            report_path.write_text(html(doc, scenario_text=text), encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"{report_path}: cannot write: {exc.strerror}") from None
    if as_json:
        click.echo(to_json(doc), nl=False)
    else:
        click.echo(table(doc), nl=False)
        if report_path is not None:
            click.echo(f"report: {report_path}")
