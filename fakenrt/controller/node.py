"""One fake node's simulated kubelet: admission in bind order, pod lifecycle, NRT lag. Pure.

A :class:`NodeModel` owns the node's :class:`~fakenrt.kubelet.node.NodeState` (the
Topology Manager simulator), the pods bound to it and its :class:`LagPipeline`. It reacts
to pods seen on the watch and to its timers (start, completion, NRT publication, refresh)
and answers with :mod:`effects`; it performs no I/O. Timers live in a queue shared by every node of
the fleet, keyed ``(kind, node, pod key)``. With the static Memory Manager it records the
manager's checkpoint on the Node and, at start, refuses to run on one the kubelet would
refuse (:meth:`NodeModel.recover`): the node then stays down, like a kubelet that exits.
An admitted pod's ResourceClaims are prepared before it starts (``fakenrt.kubelet.dra``);
while they cannot be, the pod stays Pending holding its resources, with the kubelet's
``FailedPrepareDynamicResources`` event, and is retried as the kubelet's pod worker
retries a failed sync (every 10 s plus up to 50 % jitter). The kubelet reads a claim from
the API server when it prepares; the controller reads its claim watch, which can trail the
pod watch by a moment (the scheduler writes a claim's allocation just before binding the
pod). So a first failure is held back for :data:`PREPARE_GRACE_S`, during which a change
of the pod or of one of its claims retries at once; only a failure that outlasts it is the
kubelet's (event, backoff).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fakenrt.controller.effects import (
    CreatePod,
    DeletePod,
    Effect,
    NrtSnapshot,
    PatchPodStatus,
    PublishNrt,
    PublishNumatopology,
    RecordMemoryCheckpoint,
    RecordNodeEvent,
    RecordPodEvent,
    Rendered,
    ServePodResources,
    WithdrawPodResources,
)
from fakenrt.controller.foreign import foreign_pod_object
from fakenrt.controller.lag import LagPipeline
from fakenrt.controller.nodeobjects import MEMORY_STATE_ANNOTATION, NodeIdentity
from fakenrt.controller.pods import (
    ALLOCATION_ANNOTATION,
    RUN_DURATION_ANNOTATION,
    SEQUENCE_ANNOTATION,
    ObservedPod,
)
from fakenrt.controller.podstatus import (
    pending_status,
    rejected_status,
    running_status,
    succeeded_status,
)
from fakenrt.controller.settings import ControllerSettings
from fakenrt.controller.timers import TimerQueue
from fakenrt.durations import DurationError, parse_duration
from fakenrt.kubelet.allocation import UNEXPECTED_ADMISSION_ERROR, PodAllocation
from fakenrt.kubelet.allocation_codec import decode_allocation, encode_allocation
from fakenrt.kubelet.dra import FAILED_PREPARE, ClaimLookup, ClaimProblem, claim_names
from fakenrt.kubelet.explain_dra import pending_message
from fakenrt.kubelet.memory_checkpoint import (
    MemoryCheckpoint,
    MemoryCheckpointError,
    decode_memory_checkpoint,
    encode_memory_checkpoint,
)
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt import render_nrt
from fakenrt.nrt.koordlet import render_koordlet_nrt
from fakenrt.nrt.loaded import exclusive_pods, foreign_pods, holds_exclusive, node_allocations
from fakenrt.nrt.volcano import render_numatopology
from fakenrt.podspec import PodSpec
from fakenrt.profiles.model import NodeProfile

#: Reason of the Warning event on a pod whose recorded allocation could not be restored.
ALLOCATION_NOT_RESTORED = "AllocationNotRestored"
#: Reason of the Ready=False condition and the Warning event on a Node whose simulated
#: kubelet refuses to start on its recorded Memory Manager state.
MEMORY_STATE_INVALID = "MemoryManagerStateInvalid"
#: Reason of the Warning event on a Node whose recorded Memory Manager state is unreadable.
MEMORY_STATE_UNREADABLE = "MemoryManagerStateUnreadable"

TimerKey = tuple[str, str, str]
START, COMPLETE, PUBLISH, REFRESH = "start", "complete", "publish", "refresh"
PREPARE = "prepare"
#: The kubelet's pod worker retries a failed sync after ``backOffPeriod`` (10 s,
#: ``pkg/kubelet/kubelet.go``) with jitter factor 0.5 (``pod_workers.go``).
PREPARE_RETRY_S = 10.0
PREPARE_RETRY_JITTER = 0.5
#: How long a first failure to prepare waits for the claim watch to catch up.
PREPARE_GRACE_S = 1.0
_FIRST_POD_HOST, _LAST_POD_HOST = 2, 254


class Stage(Enum):
    """Where a tracked pod is in the simulated kubelet's lifecycle."""

    PREPARING = "preparing"  # admitted, its ResourceClaims not prepared yet (holds resources)
    STARTING = "starting"  # admitted, containers not started yet (holds resources)
    RUNNING = "running"  # holds resources
    REJECTED = "rejected"  # Failed at admission, holds nothing
    SUCCEEDED = "succeeded"  # completed, released


@dataclass
class TrackedPod:
    pod: ObservedPod
    stage: Stage
    sequence: int | None = None
    admitted_at: float = 0.0
    started_at: float | None = None
    ip_host: int | None = None
    #: The pod was admitted holding exclusive resources (stays True once it terminates:
    #: a kubelet before 1.32 keeps such a pod in its podresources List, so in the NRT
    #: fingerprint, until the pod is deleted).
    held_exclusive: bool = False
    #: Failed attempts to prepare its claims reported so far (0: in the grace period).
    prepare_failures: int = 0

    @property
    def holds(self) -> bool:
        return self.stage in (Stage.PREPARING, Stage.STARTING, Stage.RUNNING)


class NodeModel:
    """The simulated kubelet of one fake node."""

    def __init__(
        self,
        profile: NodeProfile,
        identity: NodeIdentity,
        settings: ControllerSettings,
        timers: TimerQueue[TimerKey],
        claims: ClaimLookup = lambda namespace, name: None,
    ) -> None:
        self.profile = profile
        #: The ResourceClaims of the cluster, by namespace and name (the fleet's view).
        self.claims = claims
        self.identity = identity
        self.settings = settings
        self.state = NodeState.from_profile(profile)
        # One random source per node, derived from the seed and the node name, so a node's
        # jitter does not depend on what other nodes did (string seeds hash with SHA-512).
        self.rng = random.Random(f"{settings.seed}/{profile.name}")
        # The profile may give this node its own lag; else the controller-wide setting.
        delay = settings.nrt_delay if profile.nrt_delay is None else profile.nrt_delay
        jitter = settings.nrt_jitter if profile.nrt_jitter is None else profile.nrt_jitter
        self.lag: LagPipeline[NrtSnapshot] = LagPipeline(delay=delay, jitter=jitter, rng=self.rng)
        # How the NRT is written: the profile's choice, else the controller's.
        self.fingerprint_terminated_pods = (
            settings.nrt_fingerprint_terminated_pods
            if profile.nrt_fingerprint_terminated_pods is None
            else profile.nrt_fingerprint_terminated_pods
        )
        self.topology_policies = (
            settings.nrt_topology_policies
            if profile.nrt_topology_policies is None
            else profile.nrt_topology_policies
        )
        # Which agents' objects the node publishes besides (or, koordlet, instead of) the
        # topology exporter's NRT v1alpha2.
        self.volcano = settings.nrt_volcano if profile.nrt_volcano is None else profile.nrt_volcano
        self.koordlet = (
            settings.nrt_koordlet if profile.nrt_koordlet is None else profile.nrt_koordlet
        )
        self.pods: dict[str, TrackedPod] = {}
        # The pods standing for the profile's foreign `allocated` (controller/foreign.py).
        self.foreign: dict[str, PodSpec] = {spec.key: spec for spec, _ in foreign_pods(self.state)}
        self._deleting: set[str] = set()
        self._timers = timers
        self._next_sequence = 1
        self._hosts_in_use: set[int] = set()
        self.published: NrtSnapshot | None = None
        #: The last snapshot: of which kubelet state, at which version (see :meth:`snapshot`).
        self._snapshot: tuple[NodeState, int, NrtSnapshot] | None = None
        self.admissions = 0
        self.rejections = 0
        #: Why the simulated kubelet refused to start (its recorded Memory Manager state is
        #: not the one its blocks give); None when it runs. Set by :meth:`recover` only.
        self.refused: str | None = None
        # The Memory Manager state last recorded on the Node: the state itself, or (after
        # a start, until the first record) the value found there; None: none known.
        self._last_checkpoint: MemoryCheckpoint | None = None
        self._recorded_state: str | None = None

    @property
    def name(self) -> str:
        return self.profile.name

    def _key(self, kind: str, pod_key: str = "") -> TimerKey:
        return (kind, self.name, pod_key)

    # ---- snapshots -------------------------------------------------------------------

    def snapshot(self) -> NrtSnapshot:
        """What the node's NRT publishes now. Kept while the kubelet's state has the same
        version (every change of the node takes one and publishing reads it again), but
        where it reads the tracked pods too (terminated pods fingerprinted, koordlet)."""
        if self.fingerprint_terminated_pods or self.koordlet:
            return self._take_snapshot()
        state = self.state
        kept = self._snapshot
        if kept is None or kept[0] is not state or kept[1] != state.version:
            kept = self._snapshot = (state, state.version, self._take_snapshot())
        return kept[2]

    def _take_snapshot(self) -> NrtSnapshot:
        allocations = node_allocations(self.state)
        pods = list(exclusive_pods(allocations))
        if self.fingerprint_terminated_pods:
            # kubelet < 1.32: terminated pods that held exclusive resources are still
            # listed by podresources, so the topology exporter fingerprints them too.
            pods += [
                key
                for key, tracked in self.pods.items()
                if tracked.held_exclusive and not tracked.holds
            ]
        koordinator = (
            {key: t.pod.koordinator for key, t in self.pods.items() if t.holds}
            if self.koordlet
            else {}
        )
        return NrtSnapshot(
            usage=self.state.zone_usage(),
            pods=tuple(sorted(pods)),
            allocations=allocations if self.koordlet or self.volcano else (),
            koordinator=koordinator,
        )

    def render(self, snapshot: NrtSnapshot) -> dict[str, Any]:
        """The node's NRT object: the topology exporter's v1alpha2, or koordlet's."""
        if self.koordlet:
            return render_koordlet_nrt(self.profile, snapshot.allocations, snapshot.koordinator)
        return render_nrt(
            self.profile,
            usage=snapshot.usage,
            pods=snapshot.pods,
            topology_policies=self.topology_policies,
        )

    def publications(self, snapshot: NrtSnapshot, *, refresh: bool = False) -> list[Effect]:
        """Every object the node's agents publish for ``snapshot``: its NRT and, with
        ``nrt.volcano``, Volcano's Numatopology - one state, one lag, several formats."""
        # The NRT body is rendered when the executor writes it; an in-process reader takes
        # the snapshot instead - for the topology exporter's v1alpha2 only (koordlet's
        # object is another format: read from its body).
        effects: list[Effect] = [
            PublishNrt(
                self.name,
                Rendered(lambda: self.render(snapshot)),
                refresh=refresh,
                snapshot=None if self.koordlet else snapshot,
            )
        ]
        if self.volcano:
            body = render_numatopology(self.profile, snapshot.allocations)
            effects.append(PublishNumatopology(self.name, body, refresh=refresh))
        return effects

    def _changed(self, now: float) -> list[Effect]:
        """The node's allocations changed: serve them and record the Memory Manager's
        state at once, publish them after the lag."""
        served: list[Effect] = [
            ServePodResources(self.name, node_allocations(self.state)),
            *self._record_state(),
        ]
        due = self.lag.push(now, self.snapshot())
        if due <= now:  # no lag: visible at once
            return [*served, *self._publish_due(now)]
        self._timers.set_if_earlier(self._key(PUBLISH), due)
        return served

    def _record_state(self) -> list[Effect]:
        """Record the static Memory Manager's state on the Node when it changed (the
        kubelet's ``memory_manager_state``). Compared with the last state recorded (equal
        states, equal encodings), or after a start with the value found on the Node; the
        effect encodes it when written."""
        checkpoint = self.state.memory_checkpoint()
        if checkpoint is None:
            return []
        if self._last_checkpoint is not None:
            if checkpoint == self._last_checkpoint:
                return []
        elif (
            self._recorded_state is not None
            and encode_memory_checkpoint(checkpoint) == self._recorded_state
        ):
            self._last_checkpoint = checkpoint
            return []
        self._last_checkpoint = checkpoint
        return [RecordMemoryCheckpoint(self.name, checkpoint)]

    def publish_now(self) -> list[Effect]:
        """Publish the current state at once, dropping pending lagged changes (used after a
        (re)start, when the state rebuilt from the API is the truth). A node whose kubelet
        refused to start publishes nothing and serves no podresources."""
        if self.refused is not None:
            return [WithdrawPodResources(self.name)]
        self.lag.clear()
        self._timers.cancel(self._key(PUBLISH))
        self.published = self.snapshot()
        return [
            *self.publications(self.published),
            ServePodResources(self.name, node_allocations(self.state)),
            *self._record_state(),
        ]

    @property
    def not_ready(self) -> tuple[str, str] | None:
        """The Ready condition's (reason, message) while the kubelet refuses to start."""
        return None if self.refused is None else (MEMORY_STATE_INVALID, self.refused)

    # ---- pods from the watch ---------------------------------------------------------

    def observe(self, pod: ObservedPod, now: float) -> list[Effect]:
        """A pod bound to this node was added or modified."""
        if self.refused is not None:
            return []  # no kubelet runs: the pod is left as it is
        tracked = self.pods.get(pod.key)
        if tracked is not None and tracked.pod.uid != pod.uid:
            # The name was reused and the old pod's deletion was missed: forget the old one.
            effects = self._forget(tracked, now)
            return effects + self.observe(pod, now)
        if pod.deleting:
            return self._terminate(pod, tracked, now)
        if tracked is None:
            return self._remember_terminated(pod, now) if pod.terminal else self.admit(pod, now)
        if pod.terminal and tracked.holds:
            # Marked terminal by someone else (e.g. evicted through the API): release.
            tracked.stage = Stage.SUCCEEDED if pod.phase == "Succeeded" else Stage.REJECTED
            self._drop_timers(pod.key)
            return self._release(tracked, now)
        tracked.pod = pod
        if tracked.stage is Stage.PREPARING and pod.spec is not None:
            # its claim statuses may have changed: used at the next attempt, at once in
            # the grace period (the kubelet's own retry is its backoff timer: it does not
            # sync a pod again for a status change)
            self.state.update_claiming(pod.key, pod.spec)
            if not tracked.prepare_failures:
                return self._retry_prepare(tracked, now, in_grace=True)
        return []

    def _remember_terminated(self, pod: ObservedPod, now: float) -> list[Effect]:
        """A pod first seen terminated (e.g. after a restart). Under a kubelet before 1.32
        it stays in the fingerprint until deleted if its recorded allocation held
        exclusive resources; otherwise it is of no interest."""
        if not self.fingerprint_terminated_pods or pod.allocation is None:
            return []
        try:
            allocation = decode_allocation(pod.allocation, namespace=pod.namespace, name=pod.name)
        except ValueError:
            return []
        if not holds_exclusive(allocation):
            return []
        stage = Stage.SUCCEEDED if pod.phase == "Succeeded" else Stage.REJECTED
        self.pods[pod.key] = TrackedPod(pod, stage, held_exclusive=True)
        return self._changed(now)

    def deleted(self, pod: ObservedPod, now: float) -> list[Effect]:
        """The Pod object is gone."""
        if self.refused is not None:
            return []
        self._deleting.discard(pod.uid)
        tracked = self.pods.get(pod.key)
        if tracked is None or tracked.pod.uid != pod.uid:
            return []
        return self._forget(tracked, now)

    def retain_deleting(self, uids: set[str]) -> None:
        """After a relist: forget deletions asked for pods that are gone."""
        self._deleting &= uids

    def _forget(self, tracked: TrackedPod, now: float) -> list[Effect]:
        del self.pods[tracked.pod.key]
        self._drop_timers(tracked.pod.key)
        if tracked.ip_host is not None:
            self._hosts_in_use.discard(tracked.ip_host)
        if tracked.holds:
            return self._release(tracked, now)
        if self.fingerprint_terminated_pods and tracked.held_exclusive:
            return self._changed(now)  # the terminated pod leaves the fingerprint
        return []

    def _terminate(self, pod: ObservedPod, tracked: TrackedPod | None, now: float) -> list[Effect]:
        """deletionTimestamp is set: stop the containers (release) and remove the pod."""
        effects: list[Effect] = []
        if tracked is not None:
            effects += self._forget(tracked, now)
        if pod.uid not in self._deleting:
            self._deleting.add(pod.uid)
            effects.append(DeletePod(self.name, pod.namespace, pod.name, pod.uid))
        return effects

    def _release(self, tracked: TrackedPod, now: float) -> list[Effect]:
        self.state.release(tracked.pod.key)
        if tracked.holds:
            tracked.stage = Stage.SUCCEEDED
        return self._changed(now)

    def _drop_timers(self, pod_key: str) -> None:
        self._timers.cancel(self._key(START, pod_key))
        self._timers.cancel(self._key(COMPLETE, pod_key))
        self._timers.cancel(self._key(PREPARE, pod_key))

    # ---- admission -------------------------------------------------------------------

    def recover(
        self, pods: Iterable[ObservedPod], now: float, recorded_state: str | None = None
    ) -> list[Effect]:
        """Rebuild the node from the pods found on the API after a (re)start, given in
        recovery order (see ``pods.recovery_order``), and ``recorded_state``, the Memory
        Manager state found on the Node (:meth:`_check_recorded_state`: a kubelet that
        refuses it does not start, and nothing else happens). First every pod that carries
        its recorded allocation gets exactly that back (:meth:`NodeState.restore`, as a
        kubelet restores its checkpoints); then the others - never seen, recorded
        allocation missing, unreadable or no longer applicable (a Warning event says why) -
        go through admission as if just bound. Pods keep their sequence numbers."""
        effects = self._check_recorded_state(recorded_state, now)
        if self.refused is not None:
            return effects
        on_the_node = self._recorded_state
        ordered = list(pods)
        known = [p.sequence for p in ordered if p.sequence is not None]
        self._next_sequence = max([self._next_sequence - 1, *known]) + 1
        readmit: list[ObservedPod] = []
        for pod in ordered:
            allocation, why_not = self._recorded(pod)
            if why_not is not None:
                message = f"{ALLOCATION_ANNOTATION} not restored, admitting again: {why_not}"
                effects.append(self._warning(pod, ALLOCATION_NOT_RESTORED, message, now))
            if allocation is None:
                readmit.append(pod)
            else:
                effects += self._admitted(pod, allocation, now)
        for pod in readmit:
            effects += self.observe(pod, now)
        # The rebuilt state is published whole afterwards (publish_now), not step by step.
        self.lag.clear()
        self._timers.cancel(self._key(PUBLISH))
        # The rebuilt state is recorded by publish_now, compared with the Node's value.
        self._recorded_state, self._last_checkpoint = on_the_node, None
        later = PublishNrt | PublishNumatopology | ServePodResources | RecordMemoryCheckpoint
        return [e for e in effects if not isinstance(e, later)]

    def _check_recorded_state(self, value: str | None, now: float) -> list[Effect]:
        """What a static Memory Manager does with its checkpoint at start: recompute the
        machine state from the recorded blocks and refuse to start when the recorded
        machine state differs (``validateState``, ``memorymanager/policy_static.go``;
        the kubelet exits with "Invalid state, please drain node and remove policy state
        file"). Then :attr:`refused` says why and the node stays down until the recorded
        state is removed and the controller restarted. No recorded state (a controller
        that did not record it), or a node whose Memory Manager is not Static: nothing to
        check. An unreadable one gets a Warning event naming the field and counts as
        absent."""
        if value is None or self.profile.kubelet.memory_manager_policy != "Static":
            return []
        try:
            checkpoint = decode_memory_checkpoint(value)
        except MemoryCheckpointError as exc:
            message = (
                f"node {self.name}: annotation {MEMORY_STATE_ANNOTATION}: {exc}; ignored, "
                f"as if absent"
            )
            return [self._node_warning(MEMORY_STATE_UNREADABLE, message, now)]
        self._recorded_state, self._last_checkpoint = value, None
        problem = self.state.checkpoint_problem(checkpoint)
        if problem is None:
            return []
        self.refused = (
            f"simulated kubelet cannot start, invalid recorded state: {problem}; drain the "
            f"node, remove the annotation {MEMORY_STATE_ANNOTATION} and restart the controller"
        )
        return [self._node_warning(MEMORY_STATE_INVALID, self.refused, now)]

    def _node_warning(self, reason: str, message: str, now: float) -> RecordNodeEvent:
        return RecordNodeEvent(self.name, "Warning", reason, message, now)

    def _recorded(self, pod: ObservedPod) -> tuple[PodAllocation | None, str | None]:
        """Restore the pod's recorded allocation into the node's state. Returns it, or None
        (the pod is to be admitted again) with the reason when a recorded allocation could
        not be applied."""
        if pod.allocation is None or pod.spec is None or pod.deleting or pod.terminal:
            return None, None
        if pod.key in self.pods:
            return None, None
        try:
            allocation = decode_allocation(pod.allocation, namespace=pod.namespace, name=pod.name)
            self.state.restore(pod.spec, allocation)
        except ValueError as exc:  # AllocationCodecError, RestoreError
            return None, str(exc)
        return allocation, None

    def _take_host(self, pod: ObservedPod) -> int | None:
        """A pod IP host number for ``pod``: the one it already has (recovered after a
        restart) when free, else the lowest free one; None when the /24 is exhausted."""
        kept = self.identity.pod_host(pod.pod_ip)
        if kept is not None and kept not in self._hosts_in_use:
            self._hosts_in_use.add(kept)
            return kept
        for host in range(_FIRST_POD_HOST, _LAST_POD_HOST + 1):
            if host not in self._hosts_in_use:
                self._hosts_in_use.add(host)
                return host
        return None

    def missing_foreign(self, controller: str) -> list[Effect]:
        """Create the foreign pods the API does not have (after :meth:`recover`)."""
        if self.refused is not None:
            return []
        return [
            CreatePod(
                self.name,
                spec.namespace,
                spec.name,
                foreign_pod_object(spec, node=self.name, controller=controller),
            )
            for key, spec in self.foreign.items()
            if key not in self.pods
        ]

    def _attach_foreign(self, pod: ObservedPod, now: float) -> list[Effect]:
        """A foreign pod: it holds its zone's `allocated` since the node started, so it is
        not admitted; it runs (never completes) and keeps nothing else."""
        tracked = TrackedPod(pod, Stage.RUNNING, admitted_at=now, started_at=now)
        self.pods[pod.key] = tracked
        # koordlet names a pod's CPUs by its uid, known only now that the pod is seen.
        known = self._changed(now) if self.koordlet else []
        if pod.phase == "Running":
            tracked.started_at = pod.started
            return known
        tracked.ip_host = self._take_host(pod)
        pod_ip = self.identity.pod_ip(tracked.ip_host) if tracked.ip_host else ""
        status = running_status(
            pod, admitted_at=now, at=now, host_ip=self.identity.internal_ip, pod_ip=pod_ip
        )
        return [self._patch(pod, status), *known]

    def admit(self, pod: ObservedPod, now: float) -> list[Effect]:
        """Run the simulated kubelet's admission on a newly bound pod."""
        if pod.key in self.foreign:
            return self._attach_foreign(pod, now)
        if pod.spec is None:
            reason, message = UNEXPECTED_ADMISSION_ERROR, f"cannot read the pod: {pod.error}"
            return self._reject(pod, reason, message, now)
        result = self.state.admit(pod.spec)
        if not result.admit or result.allocation is None:
            reason = result.reason or UNEXPECTED_ADMISSION_ERROR
            return self._reject(pod, reason, result.message or reason, now)
        return self._admitted(pod, result.allocation, now)

    def _admitted(self, pod: ObservedPod, allocation: PodAllocation, now: float) -> list[Effect]:
        """The pod holds ``allocation`` in the node's state (admitted or restored): track
        it, record its sequence number and allocation on it, start it or keep it running."""
        self.admissions += 1
        sequence = pod.sequence if pod.sequence is not None else self._next_sequence
        self._next_sequence = max(self._next_sequence, sequence + 1)
        tracked = TrackedPod(
            pod,
            Stage.STARTING,
            sequence=sequence,
            admitted_at=now,
            held_exclusive=holds_exclusive(allocation),
        )
        self.pods[pod.key] = tracked
        error = self.state.prepare(pod.key, self.claims)
        effects = self._changed(now)

        def recorded() -> dict[str, str]:
            out: dict[str, str] = {}
            if pod.sequence != sequence:
                out[SEQUENCE_ANNOTATION] = str(sequence)
            value = encode_allocation(allocation)
            if pod.allocation != value:
                out[ALLOCATION_ANNOTATION] = value
            return out

        # A pod admitted for the first time carries no recorded allocation yet: both
        # annotations are written, encoded when the write is made.
        annotations: Mapping[str, str] = (
            Rendered(recorded) if pod.allocation is None else recorded()
        )
        if error is not None and not (pod.phase == "Running" and pod.started is not None):
            tracked.stage = Stage.PREPARING
            pending = pending_status(pod, at=now, host_ip=self.identity.internal_ip)
            effects.append(self._patch(pod, pending, annotations))
            self._timers.set(self._key(PREPARE, pod.key), now + PREPARE_GRACE_S)
            return effects
        if pod.phase == "Running" and pod.started is not None:
            # Recovered after a restart: it was started before; keep its status.
            tracked.stage = Stage.RUNNING
            tracked.admitted_at = tracked.started_at = pod.started
            tracked.ip_host = self._take_host(pod)
            if annotations:
                effects.append(self._patch(pod, {}, annotations))
            return effects + self._schedule_completion(tracked, now)
        if self.settings.start_delay > 0:
            host_ip = self.identity.internal_ip
            status = Rendered(lambda: pending_status(pod, at=now, host_ip=host_ip), phase="Pending")
            effects.append(self._patch(pod, status, annotations))
            self._timers.set(self._key(START, pod.key), now + self.settings.start_delay)
            return effects
        return effects + self._start(tracked, now, annotations)

    def _prepare_failed(self, tracked: TrackedPod, error: str, now: float) -> list[Effect]:
        """The pod's claims could not be prepared: the kubelet's event, a retry later."""
        tracked.prepare_failures += 1
        jitter = 1.0 + PREPARE_RETRY_JITTER * self.rng.random()
        self._timers.set(self._key(PREPARE, tracked.pod.key), now + PREPARE_RETRY_S * jitter)
        return [self._warning(tracked.pod, FAILED_PREPARE, pending_message(error), now)]

    def claim_changed(self, namespace: str, name: str, now: float) -> list[Effect]:
        """A ResourceClaim changed: pods still in their grace period that use it are
        prepared again at once."""
        effects: list[Effect] = []
        for tracked in list(self.pods.values()):
            spec = tracked.pod.spec
            if (
                tracked.stage is not Stage.PREPARING
                or tracked.prepare_failures
                or spec is None
                or spec.namespace != namespace
            ):
                continue
            try:
                names = {claim for _, claim in claim_names(spec)}
            except ClaimProblem:
                continue
            if name in names:
                effects += self._retry_prepare(tracked, now, in_grace=True)
        return effects

    def _retry_prepare(
        self,
        tracked: TrackedPod,
        now: float,
        *,
        spec: PodSpec | None = None,
        in_grace: bool = False,
    ) -> list[Effect]:
        """Prepare a waiting pod's claims again; once prepared it starts. A failure
        ``in_grace`` (a claim watch event before the grace period ended) waits for the
        grace timer."""
        error = self.state.prepare(tracked.pod.key, self.claims, spec=spec)
        if error is not None:
            if in_grace:
                return self._changed(now)
            return self._changed(now) + self._prepare_failed(tracked, error, now)
        self._timers.cancel(self._key(PREPARE, tracked.pod.key))
        tracked.stage = Stage.STARTING
        effects = self._changed(now)
        if self.settings.start_delay > 0:
            self._timers.set(self._key(START, tracked.pod.key), now + self.settings.start_delay)
            return effects
        return effects + self._start(tracked, now)

    def _reject(self, pod: ObservedPod, reason: str, message: str, now: float) -> list[Effect]:
        self.rejections += 1
        self.pods[pod.key] = TrackedPod(pod, Stage.REJECTED, admitted_at=now)
        return [
            self._patch(pod, rejected_status(reason=reason, message=message)),
            self._warning(pod, reason, message, now),
        ]

    def _warning(self, pod: ObservedPod, reason: str, message: str, now: float) -> RecordPodEvent:
        return RecordPodEvent(
            self.name, pod.namespace, pod.name, pod.uid, "Warning", reason, message, now
        )

    def _patch(
        self, pod: ObservedPod, status: Mapping[str, Any], annotations: Mapping[str, str] = {}
    ) -> PatchPodStatus:
        return PatchPodStatus(
            self.name,
            pod.namespace,
            pod.name,
            pod.uid,
            status if isinstance(status, Rendered) else dict(status),
            annotations if isinstance(annotations, Rendered) else dict(annotations),
        )

    # ---- lifecycle timers ------------------------------------------------------------

    def _start(
        self, tracked: TrackedPod, now: float, annotations: Mapping[str, str] = {}
    ) -> list[Effect]:
        tracked.stage = Stage.RUNNING
        tracked.started_at = now
        tracked.ip_host = self._take_host(tracked.pod)
        pod_ip = self.identity.pod_ip(tracked.ip_host) if tracked.ip_host else ""
        pod, admitted_at, host_ip = tracked.pod, tracked.admitted_at, self.identity.internal_ip
        status = Rendered(
            lambda: running_status(
                pod, admitted_at=admitted_at, at=now, host_ip=host_ip, pod_ip=pod_ip
            ),
            phase="Running",
        )
        return [
            self._patch(tracked.pod, status, annotations),
            *self._schedule_completion(tracked, now),
        ]

    def _run_duration(self, pod: ObservedPod, now: float) -> tuple[float | None, list[Effect]]:
        if pod.run_duration is None:
            return self.settings.default_run_duration, []
        try:
            return parse_duration(pod.run_duration), []
        except DurationError as exc:
            message = f"annotation {RUN_DURATION_ANNOTATION}: {exc}; the pod runs until deleted"
            return None, [self._warning(pod, "InvalidRunDuration", message, now)]

    def _schedule_completion(self, tracked: TrackedPod, now: float) -> list[Effect]:
        duration, effects = self._run_duration(tracked.pod, now)
        if duration is not None:
            started = tracked.started_at if tracked.started_at is not None else now
            self._timers.set(self._key(COMPLETE, tracked.pod.key), started + duration)
        return effects

    def fire(self, kind: str, pod_key: str, now: float) -> list[Effect]:
        """A timer of this node went off."""
        if self.refused is not None:
            return []
        if kind == PUBLISH:
            return self._publish_due(now)
        if kind == REFRESH:
            return self._refresh(now)
        tracked = self.pods.get(pod_key)
        if tracked is None:
            return []
        if kind == START and tracked.stage is Stage.STARTING:
            return self._start(tracked, now)
        if kind == PREPARE and tracked.stage is Stage.PREPARING:
            return self._retry_prepare(tracked, now)
        if kind == COMPLETE and tracked.stage is Stage.RUNNING:
            started = tracked.started_at if tracked.started_at is not None else now
            done = tracked.pod
            status = Rendered(
                lambda: succeeded_status(done, started_at=started, at=now), phase="Succeeded"
            )
            effects = self._release(tracked, now)
            if tracked.ip_host is not None:  # a finished pod's sandbox and IP are gone
                self._hosts_in_use.discard(tracked.ip_host)
                tracked.ip_host = None
            return [self._patch(tracked.pod, status), *effects]
        return []

    def _publish_due(self, now: float) -> list[Effect]:
        snapshot = self.lag.pop_due(now)
        following = self.lag.next_due()
        if following is not None:
            self._timers.set(self._key(PUBLISH), following)
        if snapshot is None:
            return []
        self.published = snapshot
        return self.publications(snapshot)

    def _refresh(self, now: float) -> list[Effect]:
        if self.settings.nrt_refresh > 0:
            self._timers.set(self._key(REFRESH), now + self.settings.nrt_refresh)
        if self.published is None:
            return []
        return self.publications(self.published, refresh=True)
