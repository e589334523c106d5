"""The controller core: every fake node's model, one timer queue, one clock. Pure.

Inputs are pods seen on the API (a list at start or after a relist, then watch events)
and the passage of time; outputs are :mod:`effects`. The same object runs in real time
(``runner.py`` waits for :meth:`Fleet.next_due` or the next watch event) and in simulated
time (a harness advances its own clock and calls :meth:`Fleet.advance`). Nothing here
sleeps, spawns threads or performs I/O, so a seeded run is reproducible event for event.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fakenrt.controller.effects import Effect, RenewLease, ReportNodeStatus
from fakenrt.controller.node import REFRESH, NodeModel, Stage, TimerKey
from fakenrt.controller.nodeobjects import NodeIdentity, node_status
from fakenrt.controller.pods import ObservedPod, observe_pod, recovery_order
from fakenrt.controller.settings import ControllerSettings
from fakenrt.controller.timers import TimerQueue
from fakenrt.dra.claims import ClaimSpecError, ResourceClaim, claim_from_manifest
from fakenrt.podspec import TERMINAL_PHASES
from fakenrt.profiles.model import NodeProfile

LEASE, STATUS = "lease", "status"
Clock = Callable[[], float]


def _echo(model: NodeModel, manifest: Mapping[str, Any]) -> bool:
    """A modification that changes nothing for the simulated kubelet (mostly the echo of
    its own status writes): same pod, not being deleted, not newly terminal. Checked
    without parsing the pod, which is most of the cost of a watch event."""
    meta = manifest.get("metadata") or {}
    tracked = model.pods.get(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
    if tracked is None or tracked.pod.uid != meta.get("uid") or meta.get("deletionTimestamp"):
        return False
    if tracked.stage is Stage.PREPARING:
        return False  # its claim statuses may have changed
    phase = (manifest.get("status") or {}).get("phase")
    return not (tracked.holds and phase in TERMINAL_PHASES)


class Fleet:
    """The simulated kubelets of the nodes one controller owns."""

    def __init__(
        self,
        nodes: Sequence[tuple[NodeProfile, NodeIdentity]],
        settings: ControllerSettings,
        *,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.timers: TimerQueue[TimerKey] = TimerQueue()
        #: Every ResourceClaim of the cluster, by ``namespace/name`` (the claim watch).
        self.claims: dict[str, ResourceClaim] = {}
        self.nodes: dict[str, NodeModel] = {
            profile.name: NodeModel(profile, identity, settings, self.timers, self.claim)
            for profile, identity in nodes
        }
        # Heartbeat phases are spread over the interval so 500 nodes do not renew at once.
        self._phases = random.Random(f"{settings.seed}/heartbeats")
        self._since = clock()

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """A ResourceClaim as last seen (what a kubelet's GET of the claim returns)."""
        return self.claims.get(f"{namespace}/{name}")

    def claim_event(self, kind: str, manifest: Mapping[str, Any]) -> list[Effect]:
        """One watch event for a ResourceClaim. A pod that could not be prepared moments
        ago (the watch trailing the pod's binding) is prepared again at once; later ones
        wait for their retry, as a kubelet does (it does not watch claims)."""
        try:
            claim = claim_from_manifest(manifest, source="watch")
        except ClaimSpecError:
            return []
        if kind == "DELETED":
            self.claims.pop(claim.key, None)
            return []
        self.claims[claim.key] = claim
        now = self.clock()
        effects: list[Effect] = []
        for model in self.nodes.values():
            effects += model.claim_changed(claim.namespace, claim.name, now)
        return effects

    def claims_list(self, items: Iterable[Mapping[str, Any]]) -> list[Effect]:
        """A full list of ResourceClaims (at start, after the claim watch was lost)."""
        self.claims = {}
        effects: list[Effect] = []
        for manifest in items:
            effects += self.claim_event("ADDED", manifest)
        return effects

    def start(
        self,
        pods: Iterable[Mapping[str, Any]],
        recorded: Mapping[str, str] | None = None,
        claims: Iterable[Mapping[str, Any]] = (),
    ) -> list[Effect]:
        """Rebuild every node from the pods on the API and its recorded Memory Manager
        state (``recorded``: node -> the Node's annotation, where present) at controller
        start, with the ResourceClaims on the API (``claims``), publish every node's NRT
        and podresources at once, and arm the periodic timers."""
        self.claims_list(claims)
        now = self.clock()
        effects = self._recover(pods, recorded or {}, now)
        for model in self.nodes.values():
            effects += model.missing_foreign(self.settings.controller)
            effects += model.publish_now()
            effects.append(self._node_status(model, now))
            effects.append(RenewLease(model.name, now))
            s = self.settings
            self.timers.set((LEASE, model.name, ""), now + self._phase(s.lease_renew_interval))
            if s.node_status_interval > 0:
                self.timers.set((STATUS, model.name, ""), now + self._phase(s.node_status_interval))
            if s.nrt_refresh > 0:
                self.timers.set((REFRESH, model.name, ""), now + self._phase(s.nrt_refresh))
        return effects

    def _phase(self, interval: float) -> float:
        return self._phases.uniform(0.5, 1.0) * interval

    def _recover(
        self, pods: Iterable[Mapping[str, Any]], recorded: Mapping[str, str], now: float
    ) -> list[Effect]:
        per_node: dict[str, list[ObservedPod]] = defaultdict(list)
        for manifest in pods:
            pod = observe_pod(manifest)
            if pod.node in self.nodes:
                per_node[pod.node].append(pod)
        effects: list[Effect] = []
        for name, model in self.nodes.items():
            ordered = sorted(per_node.get(name, ()), key=recovery_order(self.settings.seed))
            effects += model.recover(ordered, now, recorded.get(name))
        return effects

    def resync(self, pods: Iterable[Mapping[str, Any]]) -> list[Effect]:
        """A full list after the watch was lost: pods no longer there are treated as
        deleted, new ones are admitted in recovery order, known ones updated."""
        now = self.clock()
        seen: dict[str, dict[str, ObservedPod]] = defaultdict(dict)
        for manifest in pods:
            pod = observe_pod(manifest)
            if pod.node in self.nodes:
                seen[pod.node][pod.key] = pod
        effects: list[Effect] = []
        for name, model in self.nodes.items():
            current = seen.get(name, {})
            model.retain_deleting({p.uid for p in current.values()})
            for key, tracked in list(model.pods.items()):
                if key not in current or current[key].uid != tracked.pod.uid:
                    effects += model.deleted(tracked.pod, now)
            for pod in sorted(current.values(), key=recovery_order(self.settings.seed)):
                effects += model.observe(pod, now)
        return effects

    def pod_event(self, kind: str, manifest: Mapping[str, Any]) -> list[Effect]:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``) for a pod."""
        spec = manifest.get("spec") or {}
        model = self.nodes.get(str(spec.get("nodeName") or ""))
        if model is None:
            return []
        if kind == "MODIFIED" and _echo(model, manifest):
            return []
        return self.pod_seen(kind, observe_pod(manifest))

    def pod_seen(self, kind: str, pod: ObservedPod) -> list[Effect]:
        """One watch event for a pod already read (:func:`observe_pod`): what
        :meth:`pod_event` does once it has read the manifest. An in-process caller that
        holds pods as values (a simulation) hands them over without a manifest."""
        model = self.nodes.get(pod.node)
        if model is None:
            return []
        now = self.clock()
        if kind == "DELETED":
            return model.deleted(pod, now)
        return model.observe(pod, now)

    def next_due(self) -> float | None:
        return self.timers.next_due()

    def advance(self) -> list[Effect]:
        """Fire every timer that is due on the clock."""
        now = self.clock()
        effects: list[Effect] = []
        while fired := self.timers.pop_due(now):
            for key in fired:
                effects += self._fire(key, now)
        return effects

    def _fire(self, key: TimerKey, now: float) -> list[Effect]:
        kind, node, pod_key = key
        model = self.nodes[node]
        if kind == LEASE:
            self.timers.set((LEASE, node, ""), now + self.settings.lease_renew_interval)
            return [RenewLease(node, now)]
        if kind == STATUS:
            self.timers.set((STATUS, node, ""), now + self.settings.node_status_interval)
            return [self._node_status(model, now)]
        return model.fire(kind, pod_key, now)

    def _node_status(self, model: NodeModel, now: float) -> ReportNodeStatus:
        """The node's status with heartbeat times ``now`` (Ready since the controller began,
        or not Ready since then when its kubelet refused to start)."""
        status = node_status(
            model.profile, model.identity, at=now, since=self._since, not_ready=model.not_ready
        )
        return ReportNodeStatus(model.name, status)

    def pending_publications(self) -> int:
        """Changes admitted but not yet visible in any NRT (for tests and metrics)."""
        return sum(len(m.lag) for m in self.nodes.values())
