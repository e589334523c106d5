"""Prometheus metrics of the controller, read from its counters at scrape time. Edge.

A custom collector (no metric objects updated on the hot path): every scrape reads the
executor's write counters and the core's per-node counts. The registry is injected, so
tests read a fresh ``CollectorRegistry``; ``serve_metrics`` exposes it over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter.endpoints import parse_bind_address
from fakenrt import __version__

PREFIX = "fakenrt_controller"


@dataclass(frozen=True)
class Snapshot:
    """What a scrape reports (see ``Controller.snapshot``)."""

    nodes: int = 0
    admitted: int = 0
    rejected: int = 0
    #: stage (preparing, starting, running, rejected, succeeded) -> pods tracked.
    pods: Mapping[str, int] = field(default_factory=dict)
    pending_nrt_changes: int = 0
    #: executor counters: "<Effect>" (ok), "<Effect>:retry", "<Effect>:error", "...:gone".
    writes: Mapping[str, int] = field(default_factory=dict)
    nrt_writes: int = 0


class ControllerCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        info = GaugeMetricFamily(
            f"{PREFIX}_build_info", "fakenrt version (value 1).", labels=["version"]
        )
        info.add_metric([__version__], 1)
        yield info
        yield GaugeMetricFamily(f"{PREFIX}_nodes", "Fake nodes served.", value=s.nodes)
        admissions = CounterMetricFamily(
            f"{PREFIX}_admissions", "Pods through the simulated kubelet, by result.",
            labels=["result"],
        )  # fmt: skip
        admissions.add_metric(["admitted"], s.admitted)
        admissions.add_metric(["rejected"], s.rejected)
        yield admissions
        pods = GaugeMetricFamily(f"{PREFIX}_pods", "Pods tracked, by stage.", labels=["stage"])
        for stage, count in sorted(s.pods.items()):
            pods.add_metric([stage], count)
        yield pods
        yield GaugeMetricFamily(
            f"{PREFIX}_nrt_pending_changes",
            "Allocation changes not yet visible in any NRT (lag).",
            value=s.pending_nrt_changes,
        )
        writes = CounterMetricFamily(
            f"{PREFIX}_api_writes",
            "API writes by effect and result (ok, retry, error, gone).",
            labels=["effect", "result"],
        )
        for key, count in sorted(s.writes.items()):
            effect, _, result = key.partition(":")
            writes.add_metric([effect, result or "ok"], count)
        yield writes
        yield CounterMetricFamily(
            f"{PREFIX}_nrt_writes", "NodeResourceTopology creates and updates.", value=s.nrt_writes
        )


def serve_metrics(address: str, registry: CollectorRegistry) -> tuple[WSGIServer, Thread]:
    """Serve ``/metrics`` of ``registry`` on ``host:port`` (or ``:port``)."""
    host, port = parse_bind_address(address)
    return start_http_server(port, addr=host, registry=registry)
