"""The exporter's Prometheus metrics, registered on an injected ``CollectorRegistry``
(prometheus-client), next to the library's process, platform and garbage-collector
collectors that operators expect from every exporter (``process_*``,
``python_info``, ``python_gc_*``)."""

from __future__ import annotations

import sys

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from exporter import __version__

PREFIX = "numa_exporter"


class ExporterMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.reconcile_duration = Histogram(
            f"{PREFIX}_reconcile_duration_seconds",
            "Wall time of one reconcile pass (podresources List, derivation, patches).",
            registry=registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.reconciles = Counter(
            f"{PREFIX}_reconciles",
            "Reconcile passes by result (ok, podresources_error, api_not_synced).",
            ["result"],
            registry=registry,
        )
        self.rpc_errors = Counter(
            f"{PREFIX}_podresources_rpc_errors",
            "Failed kubelet podresources calls by method and gRPC status code.",
            ["method", "code"],
            registry=registry,
        )
        self.patches = Counter(
            f"{PREFIX}_annotation_patches",
            "Pod annotation patches by result: applied, not_found, replaced, unchanged, "
            "rejected, failed, and conflict (every 409 met, each followed by a re-read).",
            ["result"],
            registry=registry,
        )
        self.pods_observed = Gauge(
            f"{PREFIX}_pods_observed",
            "Pods the kubelet reported in the last successful podresources List.",
            registry=registry,
        )
        self.pods_with_placement = Gauge(
            f"{PREFIX}_pods_with_aligned_resources",
            "Pods in the last pass that hold aligned resources in some NUMA zone.",
            registry=registry,
        )
        self.observation_lag = Histogram(
            f"{PREFIX}_observation_lag_seconds",
            "Time from the pod's status.startTime (kubelet acknowledged it) to the first "
            "write of its observed annotations, for pods started while the exporter runs.",
            registry=registry,
            buckets=(0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300),
        )
        self.unknown_cpus = Gauge(
            f"{PREFIX}_unknown_cpus",
            "Distinct exclusive CPU ids in the last pass that sysfs maps to no NUMA node "
            "(left out of every placement).",
            registry=registry,
        )
        self.dra_pod_misaligned = Gauge(
            f"{PREFIX}_dra_pod_misaligned",
            "1 for each pod of the node running misaligned: a container's DRA devices on a "
            "NUMA node other than its exclusive CPUs and memory (the kubelet aligns DRA "
            "devices with nothing); the series goes with the pod.",
            ["namespace", "pod"],
            registry=registry,
        )
        self.dra_misaligned_pods = Gauge(
            f"{PREFIX}_dra_misaligned_pods",
            "Pods of the node running misaligned (see numa_exporter_dra_pod_misaligned).",
            registry=registry,
        )
        self.dra_devices = Gauge(
            f"{PREFIX}_dra_devices",
            "DRA devices of the node's pods in the last pass, by the rule that gave their "
            "NUMA node: numaNode (the standard attribute), driverAttribute (a known "
            "driver's own), pciBusID (sysfs), none (no NUMA node: in no zone).",
            ["rule"],
            registry=registry,
        )
        self.last_success = Gauge(
            f"{PREFIX}_last_successful_reconcile_timestamp_seconds",
            "Unix time of the last reconcile pass that read podresources and the pod cache.",
            registry=registry,
        )
        self.podresources_up = Gauge(
            f"{PREFIX}_podresources_up",
            "1 if the last podresources List succeeded, else 0.",
            registry=registry,
        )
        self.apiserver_up = Gauge(
            f"{PREFIX}_apiserver_up",
            "1 if the pod list/watch is connected to the API server, else 0.",
            registry=registry,
        )
        self.build_info = Gauge(
            f"{PREFIX}_build_info",
            "Build information; the value is always 1.",
            ["version", "python_version"],
            registry=registry,
        )
        self.build_info.labels(__version__, "{}.{}.{}".format(*sys.version_info[:3])).set(1)
