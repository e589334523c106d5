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
from fakenrt.simulate.generator import generate, parse_generator
from fakenrt.simulate.limits import MAX_TRACE_BYTES, LimitError
from fakenrt.simulate.scenario import (
    SCENARIO_KEYS,
    Scenario,
    ScenarioError,
    Settings,
    expand_nodes,
    parse_settings,
)
from fakenrt.simulate.workload import WorkItem, WorkloadError, parse_jsonl, parse_trace_data

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


def load_trace(path: Path) -> tuple[WorkItem, ...]:
    """A trace file: JSONL when it ends in ``.jsonl``, else YAML."""
    text = read_bounded(path, what="trace")
    if path.suffix == ".jsonl":
        return parse_jsonl(text, source=str(path))
    try:
        data = load_yaml(text, source=str(path))
    except ProfileError as exc:
        raise WorkloadError(str(exc)) from None
    return parse_trace_data(data, source=str(path))


@dataclass(frozen=True, kw_only=True)
class Overrides:
    """Command-line choices that replace the scenario file's."""

    profiles: Path | None = None
    trace: Path | None = None
    generate: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)


def load_scenario(path: Path, overrides: Overrides) -> Scenario:
    """Read the scenario at ``path`` with ``overrides`` applied. Raises ScenarioError,
    WorkloadError, LimitError or ProfileError naming the file and field."""
    source = str(path)
    data = load_yaml(read_bounded(path, what="scenario"), source=source)
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
    nodes = expand_nodes(profiles, None if overrides.profiles else data.get("nodes"), source=source)
    kwargs = parse_settings(data.get("settings"), source=source)
    kwargs.update(overrides.settings)
    if "plugin" in overrides.settings:
        kwargs["plugin"] = overrides.settings["plugin"]
    settings = Settings(**kwargs)
    workload_raw = data.get("workload") or {}
    if not isinstance(workload_raw, Mapping) or set(map(str, workload_raw)) - {"trace", "generate"}:
        raise ScenarioError(f"{source}: workload must be a mapping with trace or generate")
    description = {"scenario": path.name, "profiles": profiles_path.name}
    if overrides.trace is not None or ("trace" in workload_raw and not overrides.generate):
        trace_path = overrides.trace or base / str(workload_raw["trace"])
        workload = load_trace(trace_path)
        description["workload"] = f"trace {trace_path.name}"
    else:
        raw_gen = {**dict(workload_raw.get("generate") or {}), **overrides.generate}
        if not raw_gen and "generate" not in workload_raw:
            raise ScenarioError(f"{source}: workload needs trace or generate")
        gen = parse_generator(raw_gen, source=source)
        workload = generate(gen, seed=settings.seed)
        if settings.duration is None:
            settings = replace(settings, duration=gen.duration)
        description["workload"] = (
            f"generated mix {gen.mix}, {gen.arrivals_per_hour:g} arrivals/h "
            f"over {gen.duration / 3600:g} h, seed {settings.seed}"
        )
    return Scenario(nodes=nodes, workload=workload, settings=settings, description=description)
