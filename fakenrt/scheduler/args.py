"""Plugin arguments (``--args`` YAML / the loop's options). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fakenrt.scheduler.scoring import STRATEGIES

DEFAULT_SCORING_STRATEGY = "LeastNUMANodes"


class ArgsError(ValueError):
    """Plugin arguments that do not parse; the message names the source and field."""


@dataclass(frozen=True)
class PluginArgs:
    """``ignore_list``: resources never aligned by the plugin even if NRT reports them per
    zone (e.g. ``memory`` on nodes whose Memory Manager is ``None``).
    ``reconstruct_available``: rebuild free capacity from the pods' placements (default)
    instead of trusting NRT ``available``. ``scoring_strategy``: the score that ranks
    nodes in the loop."""

    ignore_list: frozenset[str] = frozenset()
    reconstruct_available: bool = True
    scoring_strategy: str = DEFAULT_SCORING_STRATEGY
    #: The nodes' kubelets run with ``prefer-closest-numa-nodes`` (not published in NRT).
    prefer_closest_numa_nodes: bool = False


KNOWN_KEYS = ("ignoreList", "reconstructAvailable", "scoringStrategy", "preferClosestNUMANodes")


def parse_args(raw: Any, *, source: str = "args") -> PluginArgs:
    """Parse a mapping with the keys of :data:`KNOWN_KEYS` (all optional); None or an
    empty document gives the defaults."""
    if raw is None:
        return PluginArgs()
    if not isinstance(raw, Mapping):
        raise ArgsError(f"{source}: plugin arguments must be a mapping")
    unknown = sorted(set(raw) - set(KNOWN_KEYS))
    if unknown:
        raise ArgsError(
            f"{source}: unknown argument(s) {', '.join(map(str, unknown))}; known: "
            f"{', '.join(KNOWN_KEYS)}"
        )
    ignore = raw.get("ignoreList") or []
    if not isinstance(ignore, list) or not all(isinstance(r, str) and r for r in ignore):
        raise ArgsError(f"{source}: ignoreList must be a list of resource names")
    reconstruct = _boolean(raw, "reconstructAvailable", True, source)
    closest = _boolean(raw, "preferClosestNUMANodes", False, source)
    strategy = raw.get("scoringStrategy", DEFAULT_SCORING_STRATEGY)
    if strategy not in STRATEGIES:
        raise ArgsError(
            f"{source}: scoringStrategy {strategy!r} is not one of {', '.join(STRATEGIES)}"
        )
    return PluginArgs(
        ignore_list=frozenset(ignore),
        reconstruct_available=reconstruct,
        scoring_strategy=str(strategy),
        prefer_closest_numa_nodes=closest,
    )


def _boolean(raw: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    value = raw.get(key, default)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if not isinstance(value, bool):
        raise ArgsError(f"{source}: {key} must be true or false")
    return value
