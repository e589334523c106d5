"""A workload: pods arriving over simulated time, each with its run duration. Pure.

A trace is YAML (a mapping with a ``pods`` list) or JSONL (one entry per line); each
entry::

    at: 90s            # arrival: a duration (30s, 5m, 1h30m, 250ms) or seconds
    duration: 2h       # how long the pod runs once the kubelet started it
    priority: 10       # optional (default 0): higher goes first in the scheduling queue
    count: 3           # optional (default 1): that many copies, named <name>-0, -1, ...
    pod: {...}         # a Pod manifest: metadata.name (namespace optional), spec.containers

Everything is checked against :mod:`fakenrt.simulate.limits`; errors name the source, the
entry and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fakenrt.durations import DurationError, parse_duration
from fakenrt.podspec import PodSpec, PodSpecError, effective_requests, pod_from_manifest
from fakenrt.simulate.limits import MAX_PODS, MAX_SECONDS, LimitError

#: The resource counted as GPUs in every figure.
GPU = "nvidia.com/gpu"
ENTRY_KEYS = ("at", "duration", "priority", "count", "pod")


class WorkloadError(ValueError):
    """A trace or generator setting that cannot be used; the message names where."""


@dataclass(frozen=True, kw_only=True)
class WorkItem:
    """One pod of the workload. ``manifest`` is the Pod as submitted (no node, no status)."""

    at: float
    duration: float
    priority: int
    manifest: Mapping[str, Any]
    spec: PodSpec

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def gpus(self) -> int:
        return int(effective_requests(self.spec).get(GPU, Decimal(0)))


def seconds(value: Any, where: str, *, allow_zero: bool = True) -> float:
    """A duration field: a string with units or a number of seconds, within the limits."""
    if isinstance(value, bool):
        raise WorkloadError(f"{where}: expected a duration, found {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = parse_duration(value)
        except DurationError as exc:
            raise WorkloadError(f"{where}: {exc}") from None
    else:
        raise WorkloadError(f"{where}: expected a duration such as 30s or 2h, found {value!r}")
    if math.isnan(number) or number < 0 or (number == 0 and not allow_zero):
        raise WorkloadError(f"{where}: must be {'>= 0' if allow_zero else '> 0'}")
    if number > MAX_SECONDS:
        raise LimitError(
            f"{where}: {number:.0f}s is beyond the limit of {MAX_SECONDS:.0f}s (30 days)"
        )
    return number


def _integer(value: Any, where: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{where}: expected an integer, found {value!r}")
    if not low <= value <= high:
        raise LimitError(f"{where}: must be between {low} and {high} (got {value})")
    return value


def _renamed(manifest: Mapping[str, Any], name: str) -> dict[str, Any]:
    meta = dict(manifest.get("metadata") or {})
    meta["name"] = name
    return {**manifest, "metadata": meta}


def items_from_entries(entries: Iterable[tuple[str, Any]]) -> tuple[WorkItem, ...]:
    """Work items from ``(where, entry)`` pairs, sorted by arrival (ties: file order).
    Pod keys must be unique."""
    out: list[tuple[float, int, WorkItem]] = []
    seen: set[str] = set()
    for where, entry in entries:
        if not isinstance(entry, Mapping):
            raise WorkloadError(f"{where}: an entry must be a mapping with at, duration and pod")
        unknown = sorted(set(map(str, entry)) - set(ENTRY_KEYS))
        if unknown:
            raise WorkloadError(
                f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(ENTRY_KEYS)}"
            )
        for required in ("at", "duration", "pod"):
            if required not in entry:
                raise WorkloadError(f"{where}: field {required} is required")
        at = seconds(entry["at"], f"{where}: at")
        duration = seconds(entry["duration"], f"{where}: duration", allow_zero=False)
        priority = _integer(
            entry.get("priority", 0), f"{where}: priority", low=-(10**9), high=10**9
        )
        count = _integer(entry.get("count", 1), f"{where}: count", low=1, high=MAX_PODS)
        if len(out) + count > MAX_PODS:
            raise LimitError(f"{where}: the workload has more than {MAX_PODS} pods")
        manifest = entry["pod"]
        try:
            spec = pod_from_manifest(manifest, source=where)
        except PodSpecError as exc:
            raise WorkloadError(str(exc)) from None
        if spec.node_name:
            raise WorkloadError(f"{where}: pod {spec.key}: spec.nodeName must not be set")
        for i in range(count):
            if count > 1:
                name = f"{spec.name}-{i}"
                copy = _renamed(manifest, name)
                item_spec = pod_from_manifest(copy, source=where)
            else:
                copy, item_spec = dict(manifest), spec
            if item_spec.key in seen:
                raise WorkloadError(f"{where}: pod {item_spec.key} appears twice in the workload")
            seen.add(item_spec.key)
            item = WorkItem(
                at=at, duration=duration, priority=priority, manifest=copy, spec=item_spec
            )
            out.append((at, len(out), item))
    out.sort(key=lambda t: (t[0], t[1]))
    return tuple(item for _, _, item in out)


def parse_jsonl(text: str, *, source: str) -> tuple[WorkItem, ...]:
    entries: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append((f"{source}:{number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"{source}:{number}: not valid JSON: {exc.msg}") from None
        if len(entries) > MAX_PODS:
            raise LimitError(f"{source}: more than {MAX_PODS} entries")
    return items_from_entries(entries)


def parse_trace_data(data: Any, *, source: str) -> tuple[WorkItem, ...]:
    """A parsed YAML trace: a mapping with a ``pods`` list."""
    if not isinstance(data, Mapping) or set(map(str, data)) - {"pods"}:
        raise WorkloadError(f"{source}: a YAML trace is a mapping with one field, pods")
    pods = data.get("pods")
    if not isinstance(pods, Sequence) or isinstance(pods, str):
        raise WorkloadError(f"{source}: pods must be a list")
    if len(pods) > MAX_PODS:
        raise LimitError(f"{source}: more than {MAX_PODS} entries")
    return items_from_entries((f"{source}: pods[{i}]", e) for i, e in enumerate(pods))
