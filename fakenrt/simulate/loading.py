"""Reading a scenario and its files (the I/O edge of ``fakenrt simulate``). Files are
size-checked before they are read (:data:`~fakenrt.simulate.limits.MAX_TRACE_BYTES`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.loading import load_yaml
from fakenrt.simulate.generator import GeneratorSettings, generate, parse_generator
from fakenrt.simulate.limits import MAX_TRACE_BYTES, LimitError
from fakenrt.simulate.scenario import (
    SCENARIO_KEYS,
    Scenario,
    ScenarioError,
    Settings,
    expand_nodes,
    parse_settings,
)
from fakenrt.simulate.workload import (
    WorkItem,
    WorkloadError,
    parse_jsonl,
    parse_trace_data,
)

BUNDLED = "default.yaml"


def bundled_scenario() -> Path:
    """The path of the bundled default scenario."""
    return Path(str(resources.files("fakenrt.examples.simulate").joinpath(BUNDLED)))


def read_bounded(path: Path, *, what: str) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise LimitError(
                f"{path}: {what} of {size} bytes is beyond the limit of {MAX_TRACE_BYTES} bytes"
            )
        if not path.is_file():
            raise ScenarioError(f"{path}: {what} is not a regular file")
        with path.open(encoding="utf-8") as handle:
            text = handle.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: {what} is not UTF-8 text") from None
    if len(text) > MAX_TRACE_BYTES:
        raise LimitError(f"{path}: {what} is beyond the limit of {MAX_TRACE_BYTES} bytes")
    return text


def _yaml(text: str, *, source: str) -> object:
    """One YAML document; syntax errors, hostile sizes and values the constructor cannot
    build (an integer of more than 4,300 digits) are a ProfileError naming the file
    (:mod:`fakenrt.yamltext`)."""
    return load_yaml(text, source=source)


def load_trace(path: Path) -> tuple[WorkItem, ...]:
    """A trace file: JSONL when it ends in ``.jsonl``, else YAML."""
    text = read_bounded(path, what="trace")
    if path.suffix == ".jsonl":
        return parse_jsonl(text, source=str(path))
    try:
        data = _yaml(text, source=str(path))
    except ProfileError as exc:
        raise WorkloadError(str(exc)) from None
    return parse_trace_data(data, source=str(path))


@dataclass(frozen=True, kw_only=True)
class Overrides:
    """Command-line choices that replace the scenario file's."""

    profiles: Path | None = None
    trace: Path | None = None
    generate: Mapping[str, Any] = field(default_factory=dict)
    #: The option that set each ``generate`` field (``{"mix": "--mix"}``), named by errors.
    generate_options: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)


def _shown_path(path: Path) -> str:
    """A bundled file by what it is (``bundled cluster.yaml``: the same on every machine),
    any other file as given."""
    if path.resolve().parent == bundled_scenario().resolve().parent:
        return f"bundled {path.name}"
    return str(path)


def load_scenario(path: Path, overrides: Overrides) -> Scenario:
    """Read the scenario at ``path`` with ``overrides`` applied. Raises ScenarioError,
    WorkloadError, LimitError or ProfileError naming the file (or option) and field: the
    file that supplied the value, never the scenario a command-line file replaced."""
    source = str(path)
    data = _yaml(read_bounded(path, what="scenario"), source=source)
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: a scenario is a mapping ({', '.join(SCENARIO_KEYS)})")
    unknown = sorted(set(map(str, data)) - set(SCENARIO_KEYS))
    if unknown:
        raise ScenarioError(
            f"{source}: unknown field(s) {', '.join(unknown)}; known: {', '.join(SCENARIO_KEYS)}"
        )
    base = path.parent
    profiles_path = overrides.profiles
    if profiles_path is None:
        if not isinstance(data.get("profiles"), str):
            raise ScenarioError(f"{source}: profiles (a file name) is required")
        profiles_path = base / data["profiles"]
    read_bounded(profiles_path, what="profiles")  # size check before the YAML parser
    profiles = load_profiles(profiles_path)
    if overrides.profiles is not None:  # one node per profile of the user's file
        nodes, node_profiles = expand_nodes(profiles, None, source=str(profiles_path))
    else:
        nodes, node_profiles = expand_nodes(profiles, data.get("nodes"), source=source)
    kwargs = parse_settings(data.get("settings"), source=source)
    kwargs.update(overrides.settings)
    settings = Settings(**kwargs)
    workload_raw = data.get("workload")
    if workload_raw is None:
        workload_raw = {}
    if not isinstance(workload_raw, Mapping) or set(map(str, workload_raw)) - {"trace", "generate"}:
        raise ScenarioError(f"{source}: workload must be a mapping with trace or generate")
    if "trace" in workload_raw and "generate" in workload_raw:
        raise ScenarioError(
            f"{source}: workload has both trace and generate; give exactly one of them"
        )
    description = {"scenario": _shown_path(path), "profiles": _shown_path(profiles_path)}
    generator: GeneratorSettings | None = None
    trace_path: Path | None = overrides.trace
    if trace_path is None and "trace" in workload_raw:
        # --duration is the horizon too: only the generator's own options conflict
        chosen = {k: o for k, o in overrides.generate_options.items() if k != "duration"}
        if chosen:
            options = " / ".join(sorted(set(chosen.values())))
            raise ScenarioError(
                f"{source}: the workload is a trace; {options} set a generated workload "
                "(give --trace, or a scenario whose workload is generate)"
            )
        if not isinstance(workload_raw["trace"], str):
            raise ScenarioError(f"{source}: workload.trace must be a file name")
        trace_path = base / workload_raw["trace"]
    if trace_path is not None:
        workload = load_trace(trace_path)
        description["trace"] = _shown_path(trace_path)
        description["workload"] = f"trace {description['trace']} ({len(workload)} pods)"
        if not workload:
            raise ScenarioError(f"{trace_path}: nothing to schedule: the trace has no pods")
    else:
        if "generate" not in workload_raw and not overrides.generate:
            raise ScenarioError(f"{source}: workload needs trace or generate")
        raw_gen = workload_raw.get("generate") or {}
        if not isinstance(raw_gen, Mapping):
            raise ScenarioError(f"{source}: workload.generate must be a mapping")
        generator = parse_generator(
            {**raw_gen, **overrides.generate},
            source=source,
            options=overrides.generate_options,
        )
        workload = generate(generator, seed=settings.seed)
        if settings.duration is None:
            settings = replace(settings, duration=generator.duration)
        description["workload"] = (
            f"generated mix {generator.mix}, {generator.arrivals_per_hour:g} arrivals/h "
            f"over {generator.duration / 3600:g} h, seed {settings.seed} ({len(workload)} pods)"
        )
        if not workload:
            raise ScenarioError(
                f"{source}: nothing to schedule: the generator made no pod in "
                f"{generator.duration:g}s at {generator.arrivals_per_hour:g} arrivals per hour"
            )
    scenario = Scenario(
        nodes=nodes,
        workload=workload,
        settings=settings,
        description=description,
        node_profiles=node_profiles,
        generator=generator,
    )
    if all(item.at > scenario.horizon for item in workload):
        raise ScenarioError(
            f"{trace_path or source}: nothing to schedule: every pod arrives after "
            f"the end of the simulation ({scenario.horizon:g}s)"
        )
    return scenario
