"""``fakenrt simulate``: a whole GPU cluster in one process, in simulated time; every
scheduling strategy on the same workload; a table, ``--json`` and an HTML ``--report``.
See docs/simulate.md."""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from exporter.validation import one_line
from fakenrt.commands.params import DaskAddress, Duration, Number, OutputFile
from fakenrt.profiles import ProfileError
from fakenrt.scheduler.args import ArgsError, parse_args
from fakenrt.scheduler.scoring import STRATEGIES as SCORES
from fakenrt.simulate.breakdown import rejection_rows
from fakenrt.simulate.columns import glossary_lines
from fakenrt.simulate.dask_runs import ExecutorError
from fakenrt.simulate.generator import MIXES
from fakenrt.simulate.limits import LimitError
from fakenrt.simulate.loading import Overrides, bundled_scenario, load_scenario
from fakenrt.simulate.report import html, table
from fakenrt.simulate.results import document, to_json
from fakenrt.simulate.runner import DASK, EXECUTORS, LOCAL, execute
from fakenrt.simulate.scenario import SWEEPABLE, ScenarioError, check_setting
from fakenrt.simulate.strategies import NAMES
from fakenrt.simulate.sweep import Sweep, collect, parse_sweep, plan, seed_values
from fakenrt.simulate.workload import WorkloadError

#: The options' syntax and finiteness here; their ranges are the scenario's
#: (fakenrt.simulate.scenario.check_setting), with the same messages as in a scenario file.
SECONDS = Duration(maximum=math.inf)
FINITE = Number(minimum=-math.inf, maximum=math.inf)

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


EPILOG = "\b\n" + "\n".join(glossary_lines())


@click.command("simulate", epilog=EPILOG)
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
@click.option("--arrivals-per-hour", type=FINITE, help="Arrival rate of the generated workload.")
@click.option(
    "--duration",
    type=SECONDS,
    help="Simulated time (30s, 2h, ...); also the generated workload's span.",
)
@click.option(
    "--nrt-delay",
    type=SECONDS,
    help="NRT publication delay after a change.",
)
@click.option(
    "--nrt-jitter",
    type=SECONDS,
    help="Extra NRT delay, uniform in [0, jitter].",
)
@click.option(
    "--exporter-delay",
    type=SECONDS,
    help="Delay from a change to the observed annotations.",
)
@click.option("--period", type=SECONDS, help="Scheduling period.")
@click.option(
    "--requeue/--no-requeue",
    default=None,
    help="Re-create a pod the kubelet rejected (as its controller would).",
)
@click.option("--max-requeues", type=int, help="Re-creations per pod at most.")
@click.option(
    "--dra/--no-dra",
    default=None,
    help="DRA mode: on nodes whose GPUs are DRA devices (DeviceClass gpu.nvidia.com), GPU "
    "requests become ResourceClaims the kubelet prepares unaligned; adds the misaligned "
    "pods per strategy.",
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
    "sweep_texts",
    multiple=True,
    help=f"Also run every strategy at each value of one setting: NAME=V1,V2,... with NAME "
    f"one of {', '.join(SWEEPABLE)} (values in seconds or with units).",
)
@click.option(
    "--seeds",
    type=int,
    default=1,
    show_default=True,
    help="Run every point (the scenario's settings and each swept value) with this many "
    "seeds, from --seed on, and report means with 95% t-intervals over them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
@click.option(
    "--rejections",
    "rejections_path",
    type=OutputFile(),
    help="Write every kubelet rejection of the main runs as JSONL: strategy, time, pod, "
    "workload pod, class, node, node shape, reason and the kubelet's message.",
)
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
    "--executor",
    type=click.Choice(EXECUTORS),
    default=LOCAL,
    show_default=True,
    help="Where the runs execute: local worker processes (--jobs), or the Dask cluster at "
    "--address (needs the distributed extra). The results are the same bytes.",
)
@click.option(
    "--address",
    type=DaskAddress(),
    help="The Dask scheduler of --executor dask (tcp://HOST:8786).",
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
    except (*INPUT_ERRORS, ExecutorError) as exc:
        raise click.ClickException(one_line(str(exc))) from None


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
    dra: bool | None,
    seed: int | None,
    strategies: tuple[str, ...],
    score: str | None,
    sweep_texts: tuple[str, ...],
    seeds: int,
    as_json: bool,
    rejections_path: Path | None,
    report_path: Path | None,
    jobs: int,
    executor: str,
    address: str | None,
    progress: bool | None,
) -> None:
    if trace_path is not None and (mix is not None or arrivals_per_hour is not None):
        raise click.UsageError("--trace cannot be combined with --mix / --arrivals-per-hour")
    if (executor == DASK) != (address is not None):
        raise click.UsageError("--address goes with --executor dask, and --executor dask with it")
    if len(sweep_texts) > 1:
        raise click.UsageError(
            f"--sweep is given {len(sweep_texts)} times ({', '.join(sweep_texts)}); "
            "one sweep at a time"
        )
    path = scenario_path or bundled_scenario()
    settings: dict[str, Any] = {}
    for name, option, value in (
        ("nrt_delay", "--nrt-delay", nrt_delay),
        ("nrt_jitter", "--nrt-jitter", nrt_jitter),
        ("exporter_delay", "--exporter-delay", exporter_delay),
        ("period", "--period", period),
        ("max_requeues", "--max-requeues", max_requeues),
        ("seed", "--seed", seed),
        ("duration", "--duration", duration),
    ):
        if value is not None:
            check_setting(name, value, where=option)
            settings[name] = value
    if requeue is not None:
        settings["requeue"] = requeue
    if dra is not None:
        settings["dra"] = dra
    generate: dict[str, Any] = {}
    options: dict[str, str] = {}
    chosen: tuple[tuple[str, str, object], ...] = (
        ("mix", "--mix", mix),
        ("arrivalsPerHour", "--arrivals-per-hour", arrivals_per_hour),
        ("duration", "--duration", duration if trace_path is None else None),
    )
    for key, option, given in chosen:
        if given is not None:
            generate[key] = given
            options[key] = option
    overrides = Overrides(
        profiles=profiles_path,
        trace=trace_path,
        generate=generate,
        generate_options=options,
        settings=settings,
    )
    scenario = load_scenario(path, overrides)
    if score is not None:
        plugin = parse_args({"scoringStrategy": score}, source="--score")
        plugin = replace(scenario.settings.plugin, scoring_strategy=plugin.scoring_strategy)
        scenario = replace(scenario, settings=replace(scenario.settings, plugin=plugin))
    sweep: Sweep | None = parse_sweep(sweep_texts[0]) if sweep_texts else None
    names = list(strategies) if strategies else list(NAMES)
    runs = plan(scenario, names, sweep, seeds=seeds)
    bar = _Bar(sys.stderr.isatty() if progress is None else progress)
    try:
        results = execute(runs, jobs=jobs, progress=bar, executor=executor, address=address)
    finally:
        bar.close()
    main, main_seeds, points = collect(runs, results, sweep)
    doc = document(
        scenario,
        main,
        seeds=seed_values(scenario, seeds),
        main_seeds=main_seeds,
        sweep_parameter=sweep.parameter if sweep else None,
        sweep=points,
    )
    rejected = {r.strategy: rejection_rows(r, scenario) for r in main}
    if rejections_path is not None:
        lines = "".join(
            json.dumps(row, sort_keys=True) + "\n" for rows in rejected.values() for row in rows
        )
        _write(rejections_path, lines)
    if report_path is not None:
        from fakenrt.simulate.figures import charts  # matplotlib: only for a report

        _write(report_path, html(doc, charts=charts(doc), rejections=rejected))
    if as_json:
        click.echo(to_json(doc), nl=False)
    else:
        click.echo(table(doc), nl=False)
        for label, written in (("rejections", rejections_path), ("report", report_path)):
            if written is not None:
                click.echo(f"{label}: {written}")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write: {exc.strerror or exc}") from None
