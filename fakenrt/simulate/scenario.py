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
      dra: false                     # GPUs through DRA on DRA GPU nodes (fakenrt/simulate/dra.py)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fakenrt.profiles.model import NodeProfile
from fakenrt.scheduler.args import ArgsError, PluginArgs, parse_args
from fakenrt.scheduler.scoring import STRATEGIES as SCORES
from fakenrt.simulate.dra import DraModeError, check_nodes
from fakenrt.simulate.generator import GeneratorSettings
from fakenrt.simulate.limits import (
    MAX_CYCLES,
    MAX_LAG_SECONDS,
    MAX_NODES,
    MAX_REQUEUES,
    MAX_SECONDS,
    MAX_SEED,
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
    "dra",
)
#: The file's spelling of the settings fields (file key -> :class:`Settings` field).
FILE_KEYS = {
    "nrtDelay": "nrt_delay",
    "nrtJitter": "nrt_jitter",
    "exporterDelay": "exporter_delay",
    "startDelay": "start_delay",
    "period": "period",
    "duration": "duration",
    "maxRequeues": "max_requeues",
    "seed": "seed",
}
#: Settings a ``--sweep`` may vary (command-line spelling -> field).
SWEEPABLE = {
    "nrt-delay": "nrt_delay",
    "nrt-jitter": "nrt_jitter",
    "exporter-delay": "exporter_delay",
    "period": "period",
}


#: The bounds of every numeric setting (field -> low, high), checked where the value is
#: read (naming the file field or the command-line option) and again when the
#: :class:`Settings` is built.
SETTING_BOUNDS: Mapping[str, tuple[float, float]] = {
    "nrt_delay": (0.0, MAX_LAG_SECONDS),
    "nrt_jitter": (0.0, MAX_LAG_SECONDS),
    "exporter_delay": (0.0, MAX_LAG_SECONDS),
    "start_delay": (0.0, MAX_LAG_SECONDS),
    "period": (MIN_PERIOD, MAX_LAG_SECONDS),
    "max_requeues": (0, MAX_REQUEUES),
    "duration": (1e-3, MAX_SECONDS),
    "seed": (0, MAX_SEED),
}


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the file and field."""


def check_setting(name: str, value: float, *, where: str) -> None:
    """Raise :class:`LimitError` naming ``where`` when ``value`` is out of the bounds of
    the setting ``name`` (a field of :class:`Settings`)."""
    low, high = SETTING_BOUNDS[name]
    check_range(value, name=where, low=low, high=high)


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
    #: The DRA mode: GPU requests become ResourceClaims on DRA GPU nodes (:mod:`.dra`).
    dra: bool = False

    def __post_init__(self) -> None:
        for name in SETTING_BOUNDS:
            value = getattr(self, name)
            if value is not None:
                check_setting(name, value, where=name.replace("_", "-"))
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
    #: Where the settings, the nodes and the workload came from (shown in the report and
    #: named by errors): ``scenario``, ``profiles``, ``workload`` and, for a trace,
    #: ``trace`` (paths as given).
    description: Mapping[str, str] = field(default_factory=dict)
    #: Node name -> the profile it is a copy of (its node shape in the breakdowns); a node
    #: missing here is its own shape.
    node_profiles: Mapping[str, str] = field(default_factory=dict)
    #: The generator that made the workload (None: a trace), so that a run over several
    #: seeds regenerates it per seed.
    generator: GeneratorSettings | None = None

    def __post_init__(self) -> None:
        if self.settings.dra:
            try:
                check_nodes(self.nodes)
            except DraModeError as exc:
                raise ScenarioError(str(exc)) from None
        cycles = self.horizon / self.settings.period
        if cycles > MAX_CYCLES:
            raise LimitError(
                f"{self.horizon:.0f}s of simulated time at a {self.settings.period:g}s period is "
                f"{cycles:.0f} scheduling periods; the limit is {MAX_CYCLES} (raise the period "
                "or shorten the duration)"
            )

    def profile_of(self, node: str) -> str:
        """The profile a node copies (its node shape in the breakdowns)."""
        return self.node_profiles.get(node, node)

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
    for key, name in FILE_KEYS.items():
        if name in out:
            check_setting(name, out[name], where=f"{where}.{key}")
    for key in ("requeue", "dra"):
        if key in data:
            if not isinstance(data[key], bool):
                raise ScenarioError(f"{where}.{key}: must be true or false")
            out[key] = data[key]
    for key, name in (("maxRequeues", "max_requeues"), ("seed", "seed")):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ScenarioError(f"{where}.{key}: must be a non-negative integer")
            check_setting(name, value, where=f"{where}.{key}")
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
) -> tuple[tuple[NodeProfile, ...], dict[str, str]]:
    """The scenario's nodes: ``count`` copies of named profiles (named ``<profile>-<i>``),
    or every profile once when ``nodes`` is absent; and the profile of every node."""
    of: dict[str, str] = {}
    if raw is None:
        nodes = tuple(profiles)
        of = {p.name: p.name for p in profiles}
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
            copies = [replace(profile, name=f"{profile.name}-{n:02d}") for n in range(count)]
            of.update((c.name, profile.name) for c in copies)
            out += copies
        nodes = tuple(out)
    if not nodes:
        raise ScenarioError(f"{source}: the scenario has no nodes")
    if len(nodes) > MAX_NODES:
        raise LimitError(f"{source}: more than {MAX_NODES} nodes in the scenario")
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{source}: node names must be unique")
    return nodes, of
