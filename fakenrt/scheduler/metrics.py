"""The scheduler loop's Prometheus metrics, on an injected registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class SchedulerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.bind_latency = Histogram(
            "numa_scheduler_bind_latency_seconds",
            "Time from a pod first seen pending by this scheduler to its successful bind.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.filter_rejections = Counter(
            "numa_scheduler_filter_rejections",
            "Nodes filtered out for a pod, by reason (single-numa-node, restricted, "
            "memory manager, deferred, admission order, resources, node), among the nodes "
            "examined.",
            ["reason"],
            registry=registry,
        )
        self.binds = Counter(
            "numa_scheduler_binds", "Pods bound by this scheduler.", registry=registry
        )
        self.unschedulable = Counter(
            "numa_scheduler_unschedulable_attempts",
            "Scheduling attempts that found no node.",
            registry=registry,
        )
        self.topology_affinity_errors = Counter(
            "numa_scheduler_topology_affinity_errors",
            "Pods scheduled here that the kubelet rejected with TopologyAffinityError.",
            registry=registry,
        )
