"""A scenario: the nodes, the workload and the knobs of one simulation. Pure - the
command reads the files and hands their parsed contents in.

A scenario file (YAML)::

    profiles: profiles.yaml          # node profiles (docs/profiles.md), relative to this file
    nodes:                           # optional: how many nodes of each profile (default: one each)
    - {profile: gpu-restricted, count: 6}
    workload:                        # exactly one of:
      trace: trace.yaml              #   a trace file (YAML or .jsonl), relative to this file
      generate: {mix: training-inference, duration: 24h, arrivalsPerHour: 20}
    settings:                        # all optional; command-line options override them
      nrtDelay: 20s                  # NRT publication delay after a change ...
      nrtJitter: 20s                 # ... plus uniform jitter (per node, seeded)
      exporterDelay: 5s              # change -> observed annotations written
      period: 1s                     # scheduling period
      requeue: true                  # re-create a pod the kubelet rejected
      maxRequeues: 3                 # at most this many times per pod
      startDelay: 0s                 # admission -> Running
      duration: 24h                  # simulated horizon (default: the generator's duration,
                                     # or the last arrival plus the longest run for a trace)
      seed: 1
      score: LeastNUMANodes          # the scheduler's scoring strategy
      pluginArgs: {ignoreList: []}   # other plugin arguments (docs/scheduler.md)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fakenrt.profiles.model import NodeProfile
from fakenrt.scheduler.args import ArgsError, PluginArgs, parse_args
from fakenrt.scheduler.scoring import STRATEGIES as SCORES
from fakenrt.simulate.limits import (
    MAX_CYCLES,
    MAX_LAG_SECONDS,
    MAX_NODES,
    MAX_REQUEUES,
    MAX_SECONDS,
    MIN_PERIOD,
    LimitError,
    check_range,
)
from fakenrt.simulate.workload import WorkItem, WorkloadError, seconds

SCENARIO_KEYS = ("profiles", "nodes", "workload", "settings")
SETTINGS_KEYS = (
    "nrtDelay",
    "nrtJitter",
    "exporterDelay",
    "period",
    "requeue",
    "maxRequeues",
    "startDelay",
    "duration",
    "seed",
    "score",
    "pluginArgs",
)
#: Settings a ``--sweep`` may vary (command-line spelling -> field).
SWEEPABLE = {
    "nrt-delay": "nrt_delay",
    "nrt-jitter": "nrt_jitter",
    "exporter-delay": "exporter_delay",
    "period": "period",
}


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the file and field."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    nrt_delay: float = 0.0
    nrt_jitter: float = 0.0
    exporter_delay: float = 0.0
    period: float = 1.0
    requeue: bool = True
    max_requeues: int = 3
    start_delay: float = 0.0
    #: None: derived from the workload (see :func:`horizon`).
    duration: float | None = None
    seed: int = 0
    plugin: PluginArgs = field(default_factory=PluginArgs)

    def __post_init__(self) -> None:
        for name in ("nrt_delay", "nrt_jitter", "exporter_delay", "start_delay"):
            check_range(
                getattr(self, name), name=name.replace("_", "-"), low=0, high=MAX_LAG_SECONDS
            )
        check_range(self.period, name="period", low=MIN_PERIOD, high=MAX_LAG_SECONDS)
        check_range(self.max_requeues, name="max-requeues", low=0, high=MAX_REQUEUES)
        if self.duration is not None:
            check_range(self.duration, name="duration", low=1e-3, high=MAX_SECONDS)
        if self.plugin.scoring_strategy not in SCORES:
            raise ScenarioError(f"score must be one of {', '.join(SCORES)}")

    def swept(self, name: str, value: float) -> Settings:
        """These settings with one sweepable setting (command-line spelling) replaced."""
        field_name = SWEEPABLE[name]
        if field_name == "nrt_delay":
            return replace(self, nrt_delay=value)
        if field_name == "nrt_jitter":
            return replace(self, nrt_jitter=value)
        if field_name == "exporter_delay":
            return replace(self, exporter_delay=value)
        return replace(self, period=value)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    nodes: tuple[NodeProfile, ...]
    workload: tuple[WorkItem, ...]
    settings: Settings
    #: Where the nodes and the workload came from (shown in the report).
    description: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cycles = self.horizon / self.settings.period
        if cycles > MAX_CYCLES:
            raise LimitError(
                f"{self.horizon:.0f}s of simulated time at a {self.settings.period:g}s period is "
                f"{cycles:.0f} scheduling periods; the limit is {MAX_CYCLES} (raise the period "
                "or shorten the duration)"
            )

    @property
    def horizon(self) -> float:
        """When the simulation stops: the settings' duration, else the last arrival plus
        the longest run (every pod could finish)."""
        if self.settings.duration is not None:
            return self.settings.duration
        if not self.workload:
            return 0.0
        return max(w.at for w in self.workload) + max(w.duration for w in self.workload)


def _mapping(raw: Any, where: str, keys: Sequence[str]) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where}: must be a mapping")
    unknown = sorted(set(map(str, raw)) - set(keys))
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(keys)}"
        )
    return raw


def parse_settings(raw: Any, *, source: str) -> dict[str, Any]:
    """The ``settings`` mapping as :class:`Settings` keyword arguments (validated when the
    :class:`Settings` is built, after command-line overrides)."""
    data = _mapping(raw, f"{source}: settings", SETTINGS_KEYS)
    where = f"{source}: settings"
    out: dict[str, Any] = {}
    try:
        for key, name in (
            ("nrtDelay", "nrt_delay"),
            ("nrtJitter", "nrt_jitter"),
            ("exporterDelay", "exporter_delay"),
            ("startDelay", "start_delay"),
        ):
            if key in data:
                out[name] = seconds(data[key], f"{where}.{key}")
        if "period" in data:
            out["period"] = seconds(data["period"], f"{where}.period", allow_zero=False)
        if "duration" in data:
            out["duration"] = seconds(data["duration"], f"{where}.duration", allow_zero=False)
    except WorkloadError as exc:
        raise ScenarioError(str(exc)) from None
    if "requeue" in data:
        if not isinstance(data["requeue"], bool):
            raise ScenarioError(f"{where}.requeue: must be true or false")
        out["requeue"] = data["requeue"]
    for key, name in (("maxRequeues", "max_requeues"), ("seed", "seed")):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ScenarioError(f"{where}.{key}: must be a non-negative integer")
            if key == "seed" and value >= 2**63:
                raise LimitError(f"{where}.seed: must be below 2**63")
            out[name] = value
    plugin_raw = dict(data.get("pluginArgs") or {})
    if "score" in data:
        plugin_raw["scoringStrategy"] = data["score"]
    try:
        out["plugin"] = parse_args(plugin_raw, source=f"{where}.pluginArgs")
    except ArgsError as exc:
        raise ScenarioError(str(exc)) from None
    return out


def expand_nodes(
    profiles: Sequence[NodeProfile], raw: Any, *, source: str
) -> tuple[NodeProfile, ...]:
    """The scenario's nodes: ``count`` copies of named profiles (named ``<profile>-<i>``),
    or every profile once when ``nodes`` is absent."""
    if raw is None:
        nodes = tuple(profiles)
    else:
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ScenarioError(f"{source}: nodes must be a list of {{profile, count}}")
        by_name = {p.name: p for p in profiles}
        out: list[NodeProfile] = []
        for i, entry in enumerate(raw):
            where = f"{source}: nodes[{i}]"
            data = _mapping(entry, where, ("profile", "count"))
            name = data.get("profile")
            if name not in by_name:
                raise ScenarioError(
                    f"{where}.profile: {name!r} is not a profile of the profiles file "
                    f"(known: {', '.join(sorted(by_name))})"
                )
            count = data.get("count", 1)
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ScenarioError(f"{where}.count: must be a positive integer")
            if len(out) + count > MAX_NODES:
                raise LimitError(f"{where}: more than {MAX_NODES} nodes in the scenario")
            profile = by_name[str(name)]
            out += [replace(profile, name=f"{profile.name}-{n:02d}") for n in range(count)]
        nodes = tuple(out)
    if not nodes:
        raise ScenarioError(f"{source}: the scenario has no nodes")
    if len(nodes) > MAX_NODES:
        raise LimitError(f"{source}: more than {MAX_NODES} nodes in the scenario")
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{source}: node names must be unique")
    return nodes
