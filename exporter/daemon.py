"""``numa-exporter run``: wires the edges together and runs until SIGTERM/SIGINT.

Threads: the pod cache's list/watch loop, the node's ResourceSlice list/watch loop (DRA
devices' NUMA nodes), the HTTP server (metrics and probes), the reconcile loop and the
write pools' workers (patches, DRAMisaligned events). Every dependency is built here
from the options, or passed in by tests (clock, registry, API client).
"""

from __future__ import annotations

import gc
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from exporter import __version__, stopsignals
from exporter.dra_observer import DraObserver
from exporter.endpoints import HttpServer
from exporter.health import Health
from exporter.kube_events import MisalignedEvents
from exporter.kube_pods import PodApi
from exporter.kube_slices import SliceApi
from exporter.kubeclient import KubeClient
from exporter.metrics import ExporterMetrics
from exporter.patching import Patcher
from exporter.pod_cache import PodCache
from exporter.podresources_client import PodResourcesClient
from exporter.podresources_settings import DEFAULT_TIMEOUT_S
from exporter.reconciler import Reconciler
from exporter.slice_cache import SliceCache
from exporter.sysfs import read_cpu_numa_map, read_pci_numa_node
from exporter.writepool import DEFAULT_WRITE_CONCURRENCY, WritePool

log = logging.getLogger(__name__)

#: The latest the HTTP server starts serving after start(), whatever the first pass does.
HTTP_START_AFTER_S = 2.0


@dataclass(frozen=True)
class Options:
    node_name: str
    podresources_socket: Path
    sysfs_root: Path
    poll_interval_s: float = 1.0
    metrics_bind_address: str = ":8080"
    rpc_timeout_s: float = DEFAULT_TIMEOUT_S
    readiness_window: int = 3
    #: patches in flight at once (one per pod): a slow API server costs latency, not
    #: a pass of (pods x latency)
    write_concurrency: int = DEFAULT_WRITE_CONCURRENCY
    #: /healthz fails after the reconcile loop made no progress for this long (None:
    #: ``liveness_window_s(poll_interval_s, rpc_timeout_s)``)
    liveness_window_s: float | None = None


def liveness_window_s(poll_interval_s: float, rpc_timeout_s: float) -> float:
    """How long the reconcile loop may go without a sign of progress before /healthz
    fails: well above its longest quiet step while it works (a wait of one poll interval,
    a podresources call within its deadline, one API request with its retries)."""
    return max(120.0, 10 * poll_interval_s + 4 * rpc_timeout_s)


class Exporter:
    """The assembled daemon; ``start()`` returns at once, ``stop()`` joins the threads."""

    def __init__(
        self,
        options: Options,
        kube: KubeClient,
        *,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        first_pod_list: Callable[[], tuple[str, list[dict[str, Any]]]] | None = None,
    ) -> None:
        self.options = options
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = ExporterMetrics(self.registry)
        rng = rng or random.Random()
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self.health = Health(
            clock=clock,
            window=options.readiness_window,
            stall_after_s=(
                options.liveness_window_s
                if options.liveness_window_s is not None
                else liveness_window_s(options.poll_interval_s, options.rpc_timeout_s)
            ),
        )
        self.podresources = PodResourcesClient(
            options.podresources_socket,
            timeout_s=options.rpc_timeout_s,
            on_error=lambda method, code: self.metrics.rpc_errors.labels(method, code).inc(),
        )
        pod_api = PodApi(kube)
        self.cache = PodCache(
            pod_api,
            options.node_name,
            on_change=self.wake.set,
            rng=rng,
            first_list=first_pod_list,
        )
        self.slices = SliceCache(
            SliceApi(kube), options.node_name, on_change=self.wake.set, rng=rng
        )
        #: the DRAMisaligned events, one at a time, off the reconcile loop
        self.event_writes = WritePool(1, name="event")
        events = MisalignedEvents(
            kube,
            node=options.node_name,
            submit=self.event_writes.submit,
            wall_clock=wall_clock,
        )
        self.dra = DraObserver(
            locate=lambda device: self.slices.locate(
                device, lambda address: read_pci_numa_node(options.sysfs_root, address)
            ),
            generation=lambda: self.slices.generation,
            metrics=self.metrics,
            record_event=events.record,
            ready=self.slices.synced.is_set,
        )
        self.reconciler = Reconciler(
            podresources=self.podresources,
            cache=self.cache,
            patcher=Patcher(pod_api, sleep=self._sleep, rng=rng),
            writes=WritePool(options.write_concurrency, name="patch"),
            load_cpu_map=lambda: read_cpu_numa_map(options.sysfs_root),
            metrics=self.metrics,
            health=self.health,
            clock=clock,
            wall_clock=wall_clock,
            rng=rng,
            dra=self.dra,
        )
        self.http = HttpServer(options.metrics_bind_address, self.registry, self.health)
        self._threads: list[threading.Thread] = []

    def _serve_http(self) -> None:
        """Serve /metrics and the probes once the first pass has reached the kubelet and
        the API server (start-up work goes to the annotations first; the port is already
        bound and queues connections), or after HTTP_START_AFTER_S at the latest."""
        self.health.reached.wait(HTTP_START_AFTER_S)
        if not self.stop_event.is_set():
            self.http.start()

    def _sleep(self, seconds: float) -> None:
        self.stop_event.wait(seconds)

    def start(self) -> None:
        log.info(
            "starting numa-exporter",
            extra={
                "version": __version__,
                "node": self.options.node_name,
                "socket": str(self.options.podresources_socket),
                "sysfs_root": str(self.options.sysfs_root),
                "poll_interval_s": self.options.poll_interval_s,
                "metrics_port": self.http.port,
            },
        )
        for name, target in (
            ("pod-cache", lambda: self.cache.run(self.stop_event)),
            ("slice-cache", lambda: self.slices.run(self.stop_event)),
            (
                "reconcile",
                lambda: self.reconciler.run(
                    self.stop_event, self.wake, self.options.poll_interval_s
                ),
            ),
            ("http-start", self._serve_http),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stop_event.set()
        self.wake.set()
        self.cache.interrupt()
        self.slices.interrupt()
        for thread in self._threads:
            thread.join(timeout_s)
        self.event_writes.stop(timeout_s)
        self.http.stop()
        self.podresources.close()


def freeze_startup_heap() -> None:
    """Move every object alive now (modules, classes, functions: the imports) out of the
    garbage collector's sight: they live as long as the process, and the collections a
    burst of decoded pods triggers would otherwise walk them all, again and again (no
    collection first: a full one costs more CPU than the few cycles it would free). The
    collector is on from here (the console script starts with it off, for the imports)."""
    gc.freeze()
    gc.enable()


def run(
    options: Options,
    kube: KubeClient,
    *,
    first_pod_list: Callable[[], tuple[str, list[dict[str, Any]]]] | None = None,
) -> None:
    """Run the daemon in the foreground until SIGTERM or SIGINT (``first_pod_list``: the
    answer of the node's pod list sent ahead, ``PodApi.prefetch_node_pods``). The signals
    are taken with ``sigwait``, blocked in every thread (``exporter.stopsignals``): enter
    ``stopsignals.blocked()`` before starting any thread of your own (the prefetch)."""
    with stopsignals.blocked():
        exporter = Exporter(options, kube, first_pod_list=first_pod_list)
        freeze_startup_heap()
        exporter.start()
        received = stopsignals.wait()
        log.info("stopping numa-exporter", extra={"signal": received.name if received else ""})
        exporter.stop()
