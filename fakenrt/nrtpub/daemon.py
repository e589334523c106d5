"""``fakenrt nrt publish``: the per-node daemon that publishes the NodeResourceTopology of
a node run by a real kubelet. Edge module: wires the inputs (:mod:`fakenrt.nrtpub.inputs`),
the mapping (:mod:`fakenrt.nrtpub.compute`), the lag model
(:class:`fakenrt.controller.lag.LagPipeline`) and the NRT writer
(:class:`fakenrt.controller.writers.NrtWriter`).

Every poll reads sysfs, the kubelet configuration and the kubelet's podresources
(``GetAllocatableResources`` + ``List``) and computes the node's object. The first object
is published at once; afterwards every detected change enters the lag pipeline and
becomes visible ``delay + U(0, jitter)`` later, coalesced and in order, as on fake nodes.
The object is written (created, or updated with conflict retries) when the visible
object changes, again after a failed write, and every ``resync_interval_s`` unchanged -
which repairs an edit or a deletion by someone else (an unchanged update is a no-op for
the API server).

Bad input (an unreadable socket, a malformed configuration, missing sysfs files) is
logged in one line when it first appears (and when it changes or clears); the daemon keeps
polling and serving ``/healthz`` while ``/readyz`` says what is missing.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from exporter import stopsignals
from exporter.endpoints import HttpServer
from exporter.health import Health
from exporter.kubeclient import KubeClient
from exporter.kubeerrors import ApiError
from exporter.podresources_client import PodResourcesClient
from exporter.podresources_settings import DEFAULT_TIMEOUT_S
from exporter.validation import one_line
from fakenrt.controller.effects import PublishNrt
from fakenrt.controller.lag import LagPipeline
from fakenrt.controller.writers import NrtWriter
from fakenrt.nrtpub.compute import Observation, compute_nrt
from fakenrt.nrtpub.inputs import InputError, observe

log = logging.getLogger(__name__)

#: The label on published objects (no fakenrt.io/controller: no fake controller owns them).
MANAGED_BY = {"app.kubernetes.io/managed-by": "fakenrt-nrt-publisher"}


@dataclass(frozen=True)
class PublisherOptions:
    node: str
    podresources_socket: Path
    sysfs_root: Path
    kubelet_config: Path
    delay_s: float = 0.0
    jitter_s: float = 0.0
    seed: int | None = None
    poll_interval_s: float = 1.0
    health_bind_address: str = ""
    topology_policies: bool = True
    rpc_timeout_s: float = DEFAULT_TIMEOUT_S
    #: Write the visible object again this often even unchanged (0: never), which
    #: repairs an edit or deletion by someone else.
    resync_interval_s: float = 60.0


class PublisherHealth(Health):
    """The exporter's probes; ``/readyz`` also names the last input problem."""

    problem: str | None = None

    def readiness(self) -> tuple[bool, str]:
        ready, reason = super().readiness()
        if not ready and self.problem:
            reason = f"{reason}; last problem: {self.problem}"
        return ready, reason


class Publisher:
    """One node's publisher. ``step()`` does one poll (tests drive it with their own
    ``clock``); ``run()`` polls until stopped."""

    def __init__(
        self,
        options: PublisherOptions,
        kube: KubeClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        observe_node: Callable[[], Observation] | None = None,
    ) -> None:
        self.options = options
        self._clock = clock
        self.client = PodResourcesClient(
            options.podresources_socket, timeout_s=options.rpc_timeout_s
        )
        self._observe = observe_node or (
            lambda: observe(
                client=self.client,
                sysfs_root=options.sysfs_root,
                kubelet_config=options.kubelet_config,
            )
        )
        self.pipeline: LagPipeline[dict[str, Any]] = LagPipeline(
            delay=options.delay_s, jitter=options.jitter_s, rng=random.Random(options.seed)
        )
        self.writer = NrtWriter(kube, labels=MANAGED_BY)
        self.health = PublisherHealth(
            clock=clock,
            window=3,
            stall_after_s=max(120.0, 10 * options.poll_interval_s + 4 * options.rpc_timeout_s),
        )
        #: The object as last computed (the node's current state), the one visible now
        #: (what should be published), and the one last written.
        self.current: dict[str, Any] | None = None
        self.visible: dict[str, Any] | None = None
        self.written: dict[str, Any] | None = None
        self._api_ok = False
        self._last_write: float | None = None
        self._input_problem: str | None = None

    def step(self) -> float:
        """One poll at ``clock()``; returns the seconds until the next one is due."""
        now = self._clock()
        inputs_ok = self._poll(now)
        due = self.pipeline.pop_due(now)
        if due is not None:
            self.visible = due
        resync = self.options.resync_interval_s
        stale = resync > 0 and self._last_write is not None and now - self._last_write >= resync
        if self.visible is not None and (self.visible != self.written or stale):
            self._write(self.visible, now)
        self.health.record_pass(podresources_ok=inputs_ok, api_ok=self._api_ok)
        wait = self.options.poll_interval_s
        next_due = self.pipeline.next_due()
        if next_due is not None:
            wait = min(wait, max(0.0, next_due - now))
        return wait

    def _poll(self, now: float) -> bool:
        try:
            body = compute_nrt(
                self.options.node,
                self._observe(),
                topology_policies=self.options.topology_policies,
            )
        except (InputError, ValueError) as exc:
            problem = one_line(str(exc))
            if problem != self._input_problem:
                log.error("node %s: cannot read the node: %s", self.options.node, problem)
            self._input_problem = self.health.problem = problem
            return False
        if self._input_problem is not None:
            log.info("node %s: inputs readable again", self.options.node)
            self._input_problem = self.health.problem = None
        if self.current is None:
            self.visible = body  # start-up: the node's state as it is, at once
        elif body != self.current:
            at = self.pipeline.push(now, body)
            log.debug("node %s: change detected, visible in %.3fs", self.options.node, at - now)
        self.current = body
        return True

    def _write(self, body: dict[str, Any], now: float) -> None:
        try:
            self.writer.publish(PublishNrt(self.options.node, body))
        except (ApiError, OSError) as exc:
            if self._api_ok:
                log.error(
                    "node %s: cannot write its NodeResourceTopology: %s", self.options.node, exc
                )
            self._api_ok = False
            return
        changed = body != self.written
        self.written = body
        self._last_write = now
        self._api_ok = True
        if changed:
            log.info("node %s: NodeResourceTopology published", self.options.node)

    def close(self) -> None:
        self.client.close()


class BindError(ValueError):
    """The health address cannot be bound."""


def serve(options: PublisherOptions, kube: KubeClient) -> None:
    """Run the publisher (and its health server) in the foreground until SIGTERM /
    SIGINT, taken as the loop's sleep (``exporter.stopsignals``: no Python signal
    handler). Raises BindError for a health address that cannot be bound."""
    with stopsignals.blocked():  # before the health server's threads: they inherit it
        _serve(options, kube)


def _serve(options: PublisherOptions, kube: KubeClient) -> None:
    publisher = Publisher(options, kube)
    http = None
    if options.health_bind_address:
        try:
            http = HttpServer(options.health_bind_address, CollectorRegistry(), publisher.health)
        except (OSError, ValueError) as exc:
            publisher.close()
            raise BindError(str(exc)) from None
        http.start()
    log.info(
        "publishing the NodeResourceTopology of node %s (socket %s, sysfs %s, kubelet config %s, "
        "delay %ss, jitter %ss)",
        options.node,
        options.podresources_socket,
        options.sysfs_root,
        options.kubelet_config,
        options.delay_s,
        options.jitter_s,
    )
    try:
        while (received := stopsignals.wait(publisher.step())) is None:
            pass
        log.info("node %s: stopping on %s", options.node, received.name)
    finally:
        if http is not None:
            http.stop()
        publisher.close()
