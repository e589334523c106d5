"""The controller in real time: registration, one watch, the core loop, the writers.

Threads: one pod watch and one ResourceClaim watch (``watching.Watcher``), the loop
(``Controller.run``, the only thread that touches the core), ``workers`` writer threads
(``executor.Executor``), and the podresources servers' own threads. Nothing per node is a
thread. The nodes' ResourceSlices and DeviceClasses are written once, at start
(``draobjects``).

The clock is injected: with a real clock the loop sleeps until the next timer or the next
watch message; with a test clock, tests advance it and call :meth:`Controller.wake`.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporter.kubeclient import KubeClient
from fakenrt.controller.effects import Effect, ServePodResources
from fakenrt.controller.executor import Executor, SocketEffect
from fakenrt.controller.fleet import Fleet
from fakenrt.controller.metrics import Snapshot
from fakenrt.controller.nodeobjects import CONTROLLER_LABEL, NodeIdentity
from fakenrt.controller.registration import register_nodes
from fakenrt.controller.settings import ControllerSettings
from fakenrt.controller.watching import CLAIMS, Message, Watcher, list_bound_pods, list_claims
from fakenrt.controller.writers import NUMATOPOLOGY, NrtWriter
from fakenrt.profiles.model import NodeProfile

if TYPE_CHECKING:
    from fakenrt.controller.endpoints import NodeEndpoints

log = logging.getLogger(__name__)

#: Longest the loop blocks without looking at the clock (a test clock may jump).
MAX_WAIT_S = 1.0
#: Watch messages handled per loop turn before timers get their turn.
BATCH = 512


@dataclass(frozen=True)
class RunOptions:
    """Runner-only options (the core's live in ControllerSettings)."""

    #: Per node ``<state_dir>/<node>/kubelet.sock`` and ``<state_dir>/<node>/sys``; None: no
    #: podresources sockets or sysfs trees.
    state_dir: Path | None = None
    workers: int = 8


class Controller:
    """One fakenrt controller process: owns its nodes, serves them until stopped."""

    def __init__(
        self,
        kube: KubeClient,
        profiles: Sequence[NodeProfile],
        settings: ControllerSettings,
        options: RunOptions,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.profiles = tuple(profiles)
        self.settings = settings
        self.options = options
        self.clock = clock
        self.inbox: queue.Queue[Message] = queue.Queue()
        self.stop_event = threading.Event()
        self.identities = [
            (p, NodeIdentity(p.name, index)) for index, p in enumerate(self.profiles)
        ]
        self.fleet: Fleet | None = None
        self.foreign: tuple[str, ...] = ()
        self.node_uids: dict[str, str] = {}
        self.endpoints: NodeEndpoints | None = None
        self.executor: Executor | None = None
        self.watcher: Watcher | None = None
        self.claim_watcher: Watcher | None = None
        self.nrt = NrtWriter(kube, controller=settings.controller)
        self.numatopology = NrtWriter(kube, controller=settings.controller, resource=NUMATOPOLOGY)
        self._thread: threading.Thread | None = None
        self.started = threading.Event()
        #: Loop turns completed (tests wait for a turn that saw their clock change).
        self.turns = 0

    # ---- start -----------------------------------------------------------------------

    def start(self) -> None:
        """Register nodes, rebuild state from the API, publish, start watching (blocking
        until all of that is done); then :meth:`run` or :meth:`run_in_thread`."""
        now = self.clock()
        registration = register_nodes(
            self.kube,
            self.identities,
            controller=self.settings.controller,
            taint=self.settings.taint,
            now=now,
            workers=self.options.workers,
        )
        self.foreign = registration.foreign
        self.node_uids = registration.node_uids
        for node, uid in self.node_uids.items():
            self.nrt.set_node_uid(node, uid)
            self.numatopology.set_node_uid(node, uid)
        served = [(p, i) for p, i in self.identities if p.name in self.node_uids]
        self._publish_dra([p for p, _ in served])
        self.fleet = Fleet(served, self.settings, clock=self.clock)
        if self.options.state_dir is not None:
            from fakenrt.controller.endpoints import NodeEndpoints  # gRPC only when serving

            self.endpoints = NodeEndpoints(self.options.state_dir)
            self.endpoints.start([p for p, _ in served])
        self.executor = Executor(
            self.kube,
            self.nrt,
            workers=self.options.workers,
            lease_duration=self.settings.lease_duration,
            node_uids=self.node_uids,
            serve_pod_resources=self._serve,
            rng=random.Random(f"{self.settings.seed}/executor"),
            numatopology=self.numatopology,
        )
        claims, claims_version = list_claims(self.kube)
        pods, version = list_bound_pods(self.kube)
        self.executor.submit(self.fleet.start(pods, registration.memory_states, claims))
        self.watcher = Watcher(
            self.kube,
            self.inbox,
            resource_version=version,
            rng=random.Random(f"{self.settings.seed}/watch"),
        )
        self.watcher.start()
        self.claim_watcher = Watcher(
            self.kube,
            self.inbox,
            resource_version=claims_version,
            rng=random.Random(f"{self.settings.seed}/claim-watch"),
            watched=CLAIMS,
        )
        self.claim_watcher.start()
        self.started.set()
        log.info(
            "serving %d fake nodes (%d skipped: not ours): %s",
            len(served), len(self.foreign), ", ".join(p.name for p, _ in served[:10]),
        )  # fmt: skip

    def _publish_dra(self, profiles: Sequence[NodeProfile]) -> None:
        """The ResourceSlices of every served node with DRA drivers, and their
        DeviceClasses; our slices on served nodes without DRA drivers (left by an earlier
        fleet) go. Without resource.k8s.io/v1 on the API server they cannot be written:
        logged when the fleet has DRA nodes, and the nodes are served without them."""
        from exporter.kubeerrors import NotFound
        from fakenrt.controller.draobjects import drop_slices, publish_classes, publish_slices

        with_dra = [p for p in profiles if p.dra]
        labels = {CONTROLLER_LABEL: self.settings.controller}
        try:
            if with_dra:
                publish_classes(self.kube, with_dra, controller=self.settings.controller)
            for profile in with_dra:
                publish_slices(
                    self.kube, profile, node_uid=self.node_uids[profile.name], labels=labels
                )
            drop_slices(self.kube, {p.name for p in profiles if not p.dra}, labels=labels)
        except NotFound as exc:
            if with_dra:
                log.error("cannot publish ResourceSlices (is resource.k8s.io/v1 served?): %s", exc)

    def _serve(self, effect: SocketEffect) -> None:
        if self.endpoints is None:
            return
        if isinstance(effect, ServePodResources):
            self.endpoints.serve(effect.node, effect.allocations)
        else:
            self.endpoints.withdraw(effect.node)

    # ---- loop ------------------------------------------------------------------------

    def wake(self) -> None:
        """Make the loop look at the clock now (after a test advanced it)."""
        self.inbox.put(("wake",))

    def _handle(self, message: Message) -> list[Effect]:
        assert self.fleet is not None
        if message[0] == "event":
            return self.fleet.pod_event(message[1], message[2])
        if message[0] == "list":
            return self.fleet.resync(message[1])
        if message[0] == "claim":
            return self.fleet.claim_event(message[1], message[2])
        if message[0] == "claims":
            return self.fleet.claims_list(message[1])
        return []

    def turn(self, timeout: float) -> None:
        """One loop turn: wait up to ``timeout`` for a message, handle a batch, fire timers."""
        assert self.fleet is not None and self.executor is not None
        effects: list[Effect] = []
        try:
            message = self.inbox.get(timeout=timeout) if timeout > 0 else self.inbox.get_nowait()
            effects += self._handle(message)
            for _ in range(BATCH - 1):
                effects += self._handle(self.inbox.get_nowait())
        except queue.Empty:
            pass
        effects += self.fleet.advance()
        if effects:
            self.executor.submit(effects)
        self.turns += 1

    def run(self) -> None:
        """Serve until :meth:`stop`."""
        assert self.fleet is not None
        while not self.stop_event.is_set():
            due = self.fleet.next_due()
            wait = MAX_WAIT_S if due is None else min(MAX_WAIT_S, max(0.0, due - self.clock()))
            self.turn(wait)

    def run_in_thread(self) -> None:
        self._thread = threading.Thread(target=self.run, name="fakenrt-controller", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        self.wake()
        for watcher in (self.watcher, self.claim_watcher):
            if watcher is not None:
                watcher.close()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.executor is not None:
            self.executor.wait_idle(timeout)
            self.executor.stop(timeout)
        if self.endpoints is not None:
            self.endpoints.stop()

    # ---- introspection (tests, benchmark) --------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters for tests and the benchmark."""
        snap = self.snapshot()
        return {
            **snap.writes,
            "admitted": snap.admitted,
            "rejected": snap.rejected,
            "pending_publications": snap.pending_nrt_changes,
            "nrt_writes": snap.nrt_writes,
        }

    def snapshot(self) -> Snapshot:
        """What the metrics report; safe to call from another thread (reads counters)."""
        fleet = self.fleet
        writes = self.executor.counts() if self.executor else {}
        if fleet is None:
            return Snapshot(writes=writes, nrt_writes=self.nrt.writes)
        models = list(fleet.nodes.values())
        stages: Counter[str] = Counter()
        for model in models:
            stages.update(t.stage.value for t in list(model.pods.values()))
        return Snapshot(
            nodes=len(models),
            admitted=sum(m.admissions for m in models),
            rejected=sum(m.rejections for m in models),
            pods=dict(stages),
            pending_nrt_changes=fleet.pending_publications(),
            writes=writes,
            nrt_writes=self.nrt.writes,
        )
