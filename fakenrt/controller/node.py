"""One fake node's simulated kubelet: admission in bind order, pod lifecycle, NRT lag. Pure.

A :class:`NodeModel` owns the node's :class:`~fakenrt.kubelet.node.NodeState` (the
Topology Manager simulator), the pods bound to it and its :class:`LagPipeline`. It reacts
to pods seen on the watch and to its timers (start, completion, NRT publication, refresh)
and answers with :mod:`effects`; it performs no I/O. Timers live in a queue shared by every node of
the fleet, keyed ``(kind, node, pod key)``. With the static Memory Manager it records the
manager's checkpoint on the Node and, at start, refuses to run on one the kubelet would
refuse (:meth:`NodeModel.recover`): the node then stays down, like a kubelet that exits.
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
from fakenrt.kubelet.memory_checkpoint import (
    MemoryCheckpoint,
    MemoryCheckpointError,
    decode_memory_checkpoint,
    encode_memory_checkpoint,
)
from fakenrt.kubelet.node import NodeState
from fakenrt.nrt import render_nrt
from fakenrt.nrt.loaded import exclusive_pods, foreign_pods, holds_exclusive, node_allocations
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
_FIRST_POD_HOST, _LAST_POD_HOST = 2, 254


class Stage(Enum):
    """Where a tracked pod is in the simulated kubelet's lifecycle."""

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

    @property
    def holds(self) -> bool:
        return self.stage in (Stage.STARTING, Stage.RUNNING)


class NodeModel:
    """The simulated kubelet of one fake node."""

    def __init__(
        self,
        profile: NodeProfile,
        identity: NodeIdentity,
        settings: ControllerSettings,
        timers: TimerQueue[TimerKey],
    ) -> None:
        self.profile = profile
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
        self.pods: dict[str, TrackedPod] = {}
        # The pods standing for the profile's foreign `allocated` (controller/foreign.py).
        self.foreign: dict[str, PodSpec] = {spec.key: spec for spec, _ in foreign_pods(self.state)}
        self._deleting: set[str] = set()
        self._timers = timers
        self._next_sequence = 1
        self._hosts_in_use: set[int] = set()
        self.published: NrtSnapshot | None = None
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
        pods = list(exclusive_pods(node_allocations(self.state)))
        if self.fingerprint_terminated_pods:
            # kubelet < 1.32: terminated pods that held exclusive resources are still
            # listed by podresources, so the topology exporter fingerprints them too.
            pods += [
                key
                for key, tracked in self.pods.items()
                if tracked.held_exclusive and not tracked.holds
            ]
        return NrtSnapshot(usage=self.state.zone_usage(), pods=tuple(sorted(pods)))

    def render(self, snapshot: NrtSnapshot) -> dict[str, Any]:
        return render_nrt(
            self.profile,
            usage=snapshot.usage,
            pods=snapshot.pods,
            topology_policies=self.topology_policies,
        )

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
            PublishNrt(self.name, self.render(self.published), snapshot=self.published),
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
        later = PublishNrt | ServePodResources | RecordMemoryCheckpoint
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
        if pod.phase == "Running":
            tracked.started_at = pod.started
            return []
        tracked.ip_host = self._take_host(pod)
        pod_ip = self.identity.pod_ip(tracked.ip_host) if tracked.ip_host else ""
        status = running_status(
            pod, admitted_at=now, at=now, host_ip=self.identity.internal_ip, pod_ip=pod_ip
        )
        return [self._patch(pod, status)]

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
        return [PublishNrt(self.name, Rendered(lambda: self.render(snapshot)), snapshot=snapshot)]

    def _refresh(self, now: float) -> list[Effect]:
        if self.settings.nrt_refresh > 0:
            self._timers.set(self._key(REFRESH), now + self.settings.nrt_refresh)
        if self.published is None:
            return []
        return [
            PublishNrt(
                self.name, self.render(self.published), refresh=True, snapshot=self.published
            )
        ]
