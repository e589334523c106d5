"""Counters, gauges and histograms in the Prometheus text exposition format (0.0.4).

Pure, standard library only. The exporter has a dozen metrics; ``prometheus_client``
would cost ~40 ms of start-up CPU and ~4 MiB of resident memory on every node for them.
What is kept of its model: metrics registered on an injected :class:`Registry`, label
children by ``labels(*values)``, a counter ``x`` exposed as ``x_total``, histogram
``_bucket``/``_count``/``_sum`` samples, and ``Registry.get_sample_value`` for tests.
Thread-safe: updates and exposition take a lock per metric.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping, Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


class Registry:
    """The metrics one ``/metrics`` endpoint exposes."""

    def __init__(self) -> None:
        self._metrics: list[_Metric] = []
        self._lock = threading.Lock()

    def register(self, metric: _Metric) -> None:
        with self._lock:
            if any(m.name == metric.name for m in self._metrics):
                raise ValueError(f"metric {metric.name} registered twice")
            self._metrics.append(metric)

    def samples(self) -> Iterator[Sample]:
        with self._lock:
            metrics = list(self._metrics)
        for metric in metrics:
            yield from metric.samples()

    def get_sample_value(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """The value of one sample (``name`` with its suffix), or None."""
        wanted = tuple(sorted((labels or {}).items()))
        for sample, sample_labels, value in self.samples():
            if sample == name and tuple(sorted(sample_labels)) == wanted:
                return value
        return None

    def expose(self) -> bytes:
        with self._lock:
            metrics = list(self._metrics)
        lines: list[str] = []
        for metric in metrics:
            lines.append(f"# HELP {metric.exposed} {_help(metric.documentation)}")
            lines.append(f"# TYPE {metric.exposed} {metric.kind}")
            for name, labels, value in metric.samples():
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                lines.append(
                    f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}"
                )
        return ("\n".join(lines) + "\n").encode()


class _Metric:
    kind = ""
    suffix = ""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: Registry,
    ) -> None:
        self.name = name
        self.exposed = name + self.suffix
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._children: dict[tuple[str, ...], list[float]] = {}
        if not self.labelnames:
            self._children[()] = self._initial()
        registry.register(self)

    def _initial(self) -> list[float]:
        return [0.0]

    def _cell(self, values: tuple[str, ...]) -> list[float]:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}")
        with self._lock:
            cell = self._children.get(values)
            if cell is None:
                cell = self._children[values] = self._initial()
            return cell

    def _child_samples(
        self, labels: tuple[tuple[str, str], ...], cell: list[float]
    ) -> list[Sample]:
        return [(self.exposed, labels, cell[0])]

    def samples(self) -> list[Sample]:
        with self._lock:
            cells = [(k, list(v)) for k, v in self._children.items()]
        out: list[Sample] = []
        for values, cell in cells:
            out.extend(self._child_samples(tuple(zip(self.labelnames, values, strict=True)), cell))
        return out


class _CounterChild:
    def __init__(self, metric: Counter, cell: list[float]) -> None:
        self._lock = metric._lock
        self._cell = cell

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            self._cell[0] += amount


class Counter(_Metric):
    kind, suffix = "counter", "_total"

    def labels(self, *values: str) -> _CounterChild:
        return _CounterChild(self, self._cell(values))

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)


class _GaugeChild:
    def __init__(self, metric: Gauge, cell: list[float]) -> None:
        self._lock = metric._lock
        self._cell = cell

    def set(self, value: float) -> None:
        with self._lock:
            self._cell[0] = float(value)


class Gauge(_Metric):
    kind = "gauge"

    def labels(self, *values: str) -> _GaugeChild:
        return _GaugeChild(self, self._cell(values))

    def set(self, value: float) -> None:
        self.labels().set(value)


class Histogram(_Metric):
    """Cell layout: one count per bucket (non-cumulative), then +Inf, then the sum."""

    kind = "histogram"

    def __init__(
        self, name: str, documentation: str, *, buckets: Sequence[float], registry: Registry
    ) -> None:
        self.buckets = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        super().__init__(name, documentation, registry=registry)

    def _initial(self) -> list[float]:
        return [0.0] * (len(self.buckets) + 2)

    def observe(self, value: float) -> None:
        cell = self._children[()]
        index = len(self.buckets)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                index = i
                break
        with self._lock:
            cell[index] += 1
            cell[-1] += value

    def _child_samples(
        self, labels: tuple[tuple[str, str], ...], cell: list[float]
    ) -> list[Sample]:
        out: list[Sample] = []
        total = 0.0
        for bound, count in zip((*self.buckets, math.inf), cell[:-1], strict=True):
            total += count
            out.append((f"{self.name}_bucket", (*labels, ("le", _number(bound))), total))
        out.append((f"{self.name}_count", labels, total))
        out.append((f"{self.name}_sum", labels, cell[-1]))
        return out
