"""A workload: pods arriving over simulated time, each with its run duration. Pure.

A trace is YAML (a mapping with a ``pods`` list) or JSONL (one entry per line); each
entry::

    at: 90s            # arrival: a duration (30s, 5m, 1h30m, 250ms) or seconds
    duration: 2h       # how long the pod runs once the kubelet started it
    priority: 10       # optional (default 0): higher goes first in the scheduling queue
    count: 3           # optional (default 1): that many copies, named <name>-0, -1, ...
    class: finetune    # optional: the pod class the figures are broken down by (default:
                       # the pod's size, such as "2 GPU, 16 CPU, 96Gi")
    pod: {...}         # a Pod manifest: metadata.name (namespace optional), spec.containers

Every pod passes the same validation as ``fakenrt kubelet explain`` and ``fakenrt scheduler
evaluate`` (:mod:`fakenrt.podvalidation`): a manifest the API server would refuse is
refused here, naming the entry, the pod and the field.

Everything is checked against :mod:`fakenrt.simulate.limits`; errors name the source, the
entry and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any

from fakenrt.durations import DurationError, parse_duration
from fakenrt.podspec import PodSpec, PodSpecError, effective_requests, pod_from_manifest
from fakenrt.podvalidation import PodInvalid, validated_pod
from fakenrt.scheduler.books import pod_shape
from fakenrt.simulate.limits import MAX_PODS, MAX_SECONDS, LimitError, shown

#: The resource counted as GPUs in every figure.
GPU = "nvidia.com/gpu"
ENTRY_KEYS = ("at", "duration", "priority", "count", "class", "pod")
#: Longest pod class name.
MAX_CLASS_LENGTH = 63


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
    #: The class the figures are broken down by (the generator's class, a trace entry's
    #: ``class``, else :func:`size_label`).
    pod_class: str = ""

    def __post_init__(self) -> None:
        if not self.pod_class:
            object.__setattr__(self, "pod_class", size_label(self.spec))

    @property
    def key(self) -> str:
        return self.spec.key

    # Kept (read at every arrival of the pod and its re-creations): the spec is fixed.
    @cached_property
    def gpus(self) -> int:
        return int(effective_requests(self.spec).get(GPU, Decimal(0)))

    @cached_property
    def shape(self) -> str:
        """The pod's :func:`~fakenrt.scheduler.books.pod_shape` (its re-creations' too:
        they differ only in name)."""
        return pod_shape(self.spec)


def _amount(value: Decimal) -> str:
    return f"{value.normalize():f}"


def _memory(value: Decimal) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size and value % size == 0:
            return f"{_amount(value / size)}{unit}"
    return _amount(value)


def size_label(spec: PodSpec) -> str:
    """A pod's size in words, such as ``2 GPU, 16 CPU, 96Gi`` (its effective requests)."""
    requests = effective_requests(spec)
    parts = []
    if requests.get(GPU):
        parts.append(f"{_amount(requests[GPU])} GPU")
    if requests.get("cpu"):
        parts.append(f"{_amount(requests['cpu'])} CPU")
    if requests.get("memory"):
        parts.append(_memory(requests["memory"]))
    return ", ".join(parts) or "no requests"


def value_problem(exc: ValueError) -> str:
    """What a YAML or JSON parser's ValueError says, in the user's terms."""
    if "integer string conversion" in str(exc):
        return "an integer of more than 4,300 digits"
    return str(exc)


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
        raise LimitError(f"{where}: must be between {low} and {high} (got {shown(value)})")
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
        pod_class = entry.get("class", "")
        if not isinstance(pod_class, str) or len(pod_class) > MAX_CLASS_LENGTH:
            raise WorkloadError(
                f"{where}: class must be a string of at most {MAX_CLASS_LENGTH} characters"
            )
        manifest = entry["pod"]
        try:
            spec = validated_pod(manifest, source=where)
        except PodInvalid as exc:
            raise WorkloadError(str(exc)) from None
        if spec.node_name:
            raise WorkloadError(f"{where}: pod {spec.key}: spec.nodeName must not be set")
        for i in range(count):
            if count > 1:
                name = f"{spec.name}-{i}"
                copy = _renamed(manifest, name)
                try:  # the copies differ from the validated pod in their name only
                    item_spec = pod_from_manifest(copy, source=where)
                except PodSpecError as exc:
                    raise WorkloadError(str(exc)) from None
            else:
                copy, item_spec = dict(manifest), spec
            if item_spec.key in seen:
                raise WorkloadError(f"{where}: pod {item_spec.key} appears twice in the workload")
            seen.add(item_spec.key)
            item = WorkItem(
                at=at,
                duration=duration,
                priority=priority,
                manifest=copy,
                spec=item_spec,
                pod_class=pod_class,
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
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise WorkloadError(
                f"{source}:{number}: not valid JSON: {value_problem(exc)}"
            ) from None
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
